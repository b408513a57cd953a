"""``dedup-hbase tune``: choose k on the user's own corpus.

A seeded sample of the corpus's documents (reservoir sampling over one read of the inputs:
memory in proportion to the sample) is fingerprinted and indexed in an index of its own (the
memory store, a scheme that finds every match within ``MAX_K`` bits); a fifth of the sample
(at least one document), drawn with the same seed, are the originals, and each gets one
near-copy of every kind (copies.py, seeded by the seed and the kind). Every copy is looked
up once at ``MAX_K`` and, for every k from 0 to ``MAX_K``:

* recall: the share of the copies of a kind whose original is within k bits;
* false matches per lookup: the other documents within k bits that are clearly other texts
  (a character 4-gram Jaccard below ``FALSE_JACCARD`` with both the copy and its original;
  near-duplicates the corpus already holds, such as recurring briefs, are not false); they
  grow with the documents indexed, so the rate is also given at ``docs`` documents, scaled
  in proportion (the sample's rate x docs / indexed: a projection, and one false match in
  the sample is already ``docs / indexed / lookups`` per lookup there);
* the cost at the user's scale (``docs``): the scheme ``plan`` finds cheapest for that k, its
  index rows and its expected candidates per lookup.

The suggested k has the highest mean recall over the kinds with at most ``BUDGET`` false
matches per lookup at ``docs`` documents and a scheme that reads at most ``MAX_CANDIDATES``
candidates per lookup there (the smallest such k on a tie). Recall never falls as k grows: a copy
within k bits is within k + 1. The same inputs and seed give the same numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..index.confirm import kept_of, sketches_agree
from ..index.documents import Document
from ..index.index import Index
from ..index.plan import best_scheme, plan
from ..jobs.corpus import Fields, read_records
from ..stores.memory import MemoryStore
from ..text.features import normalize
from ..text.fingerprint import Fingerprinter
from ..text.shorts import SHORT_BELOW, is_short, jaccard, similarity
from ..text.units import WORDS, text_sketches
from .copies import KINDS, copier_for

MAX_K = 8
FALSE_JACCARD = 0.3  # below this 4-gram Jaccard a match is clearly another document
BUDGET = 0.005       # false matches per lookup a suggested k may have
MAX_CANDIDATES = 100_000  # candidates per lookup (plan's estimate at docs) a suggested k may cost
NEAR_BIGRAMS = 0.5  # below this character-bigram Jaccard two texts within 3 bits are a false drop


def shingle_set(text: str) -> frozenset:
    """Character 4-grams of the letters and digits of the normalised text (for Jaccard)."""
    chars = "".join(ch for ch in normalize(text) if ch.isalnum())
    return frozenset(chars[i:i + 4] for i in range(max(1, len(chars) - 3)))


@dataclass
class Tuning:
    """What ``tune`` found. ``found``, ``false`` and ``natural`` hold, per kind, a count for
    each k = 0..MAX_K (copies within k of their original; clearly other documents within k;
    near-duplicates the sample holds, within k)."""

    read: int
    sample: int
    indexed: int  # documents of the sample with a fingerprint
    originals: int
    seed: int
    language: str
    docs: int
    kinds: list[str]
    lookups: dict[str, int] = field(default_factory=dict)
    found: dict[str, list[int]] = field(default_factory=dict)
    false: dict[str, list[int]] = field(default_factory=dict)
    natural: dict[str, list[int]] = field(default_factory=dict)
    featureless: int = 0  # copies without features: misses
    short: int = 0  # sampled documents with a short text (text/shorts.py): their 64 bits alone cannot be trusted
    near_pairs: int = 0  # pairs of sampled documents within 3 bits (what groups and --skip-near-dups join)
    unrelated: int = 0  # of them, texts not near (character-bigram Jaccard < 0.5): false drops
    unrelated_with_rule: int = 0  # of them, what the short-text rule (--short-texts 12) still joins
    costs: list[dict[str, Any]] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict, repr=False)  # fingerprints, for tests

    def recall(self, k: int) -> float:
        """Mean over the kinds of the share of copies found within k bits."""
        return sum(self.found[x][k] / self.lookups[x] for x in self.kinds if self.lookups[x]) / max(1, len(self.kinds))

    def false_rate(self, k: int, at_scale: bool = True) -> float:
        """False matches per lookup within k bits: at ``docs`` documents (the sample's rate
        scaled by docs / indexed), or in the sample."""
        rate = sum(self.false[x][k] for x in self.kinds) / max(1, sum(self.lookups.values()))
        return rate * self.docs / max(1, self.indexed) if at_scale else rate

    @property
    def step(self) -> float:
        """One false match of the sample, in false matches per lookup at ``docs`` documents."""
        return self.docs / max(1, self.indexed) / max(1, sum(self.lookups.values()))

    def allowed(self, k: int) -> bool:
        return self.false_rate(k) <= BUDGET and self.costs[k]["candidates"] <= MAX_CANDIDATES

    def suggested(self) -> int | None:
        ok = [k for k in range(MAX_K + 1) if self.allowed(k)]
        return max(ok, key=lambda k: (self.recall(k), -k)) if ok else None

    def why(self) -> str:
        k = self.suggested()
        if k is None:
            return (f"no k from 0 to {MAX_K} stays within {BUDGET} false matches per lookup and {MAX_CANDIDATES:,} "
                    "candidates per lookup: the corpus holds many unrelated texts with near fingerprints "
                    "(try the shingles featurizer)")
        cost = self.costs[k]
        text = (f"k={k}: it finds {self.recall(k):.1%} of the copies (the mean over {len(self.kinds)} kinds) with "
                f"{self.false_rate(k):.4f} false matches per lookup at {self.docs:,} documents, within the budget "
                f"of {BUDGET}")
        if k < MAX_K:
            after = k + 1
            if self.recall(after) <= self.recall(k):
                text += f"; k={after} finds no more"
            elif self.false_rate(after) > BUDGET:
                text += f"; k={after} would find {self.recall(after):.1%} with {self.false_rate(after):.4f}"
            else:
                text += (f"; k={after} would find {self.recall(after):.1%} but read about "
                         f"{self.costs[after]['candidates']:,.0f} candidates per lookup (over {MAX_CANDIDATES:,})")
        text += (f". At {self.docs:,} documents, scheme {cost['scheme']} writes {cost['flags']} rows a document "
                 f"and a lookup reads about {cost['candidates']:,.1f} candidates.")
        if self.step > BUDGET:
            text += (f" The sample is small for {self.docs:,} documents: one false match in it counts "
                     f"{self.step:.4f} per lookup there; a larger --sample measures the rate more finely.")
        return text

    def to_dict(self) -> dict[str, Any]:
        per_k = [{"k": k, "recall": round(self.recall(k), 4), "false_per_lookup": round(self.false_rate(k), 5),
                  "false_per_lookup_in_sample": round(self.false_rate(k, False), 5), **self.costs[k]}
                 for k in range(MAX_K + 1)]
        return {"read": self.read, "sample": self.sample, "indexed": self.indexed, "originals": self.originals,
                "seed": self.seed,
                "language": self.language, "docs": self.docs, "kinds": self.kinds, "lookups": self.lookups,
                "found": self.found, "false": self.false, "natural": self.natural, "featureless": self.featureless,
                "short": self.short, "near_pairs": self.near_pairs, "unrelated_pairs": self.unrelated,
                "unrelated_pairs_with_short_texts": self.unrelated_with_rule,
                "by_k": per_k, "suggested_k": self.suggested(), "why": self.why()}


def sample_texts(paths: list[str], size: int, rnd: random.Random, fmt: str, fields: Fields) -> tuple[list[str], int]:
    """``size`` texts drawn uniformly from the records of ``paths`` that have one (reservoir
    sampling, in input order), and how many records were read."""
    chosen: list[str] = []
    read = seen = 0
    for record in read_records(paths, fmt, fields):
        read += 1
        if record.error or not record.text:
            continue
        seen += 1
        if len(chosen) < size:
            chosen.append(record.text)
        else:
            slot = rnd.randrange(seen)
            if slot < size:
                chosen[slot] = record.text
    return chosen, read


def tune(paths: list[str], fingerprinter: Fingerprinter, sample: int = 1000, seed: int = 1, docs: int | None = None,
         kinds: list[str] | None = None, fmt: str = "auto", fields: Fields = Fields()) -> Tuning:
    """Measure every k from 0 to ``MAX_K`` on a sample of ``paths`` (``docs``: the corpus size
    the costs are given for; default the records read)."""
    rnd = random.Random(seed)
    texts, read = sample_texts(paths, sample, rnd, fmt, fields)
    fps, errors = fingerprinter.fingerprint_many(texts)
    usable = [i for i in range(len(texts)) if i not in errors]
    originals = sorted(rnd.sample(usable, max(1, len(usable) // 5) if usable else 0))
    copier = copier_for(texts, rnd)
    kinds = list(kinds or KINDS)
    result = Tuning(read, len(texts), len(usable), len(originals), seed, copier.lang, docs or read, kinds)
    variants = [(kind, o, getattr(copier, kind)(random.Random(f"{seed}:{kind}:{o}"), texts[o]))
                for kind in kinds for o in originals]
    var_fps, var_errors = fingerprinter.fingerprint_many([v[2] for v in variants])
    index = Index.create(MemoryStore(), None, MAX_K)
    index.add_many([Document(str(i), int(fps[i])) for i in usable])
    valid = [j for j in range(len(variants)) if j not in var_errors]
    answers = dict(zip(valid, index.query_many([int(var_fps[j]) for j in valid], MAX_K)))
    _count(result, texts, variants, answers)
    _false_drops(result, [texts[i] for i in usable], np.asarray([fps[i] for i in usable], np.uint64))
    result.featureless = len(var_errors)
    result.costs = [_cost(k, result.docs) for k in range(MAX_K + 1)]
    result.checks = {"doc_fps": fps, "usable": usable, "var_fps": var_fps, "valid": valid,
                     "variants": [(kind, o) for kind, o, _ in variants]}
    return result


def _count(result: Tuning, texts: list[str], variants: list[tuple[str, int, str]], answers: dict) -> None:
    """Fill ``result``'s counts from each copy's matches (``answers``: copy -> Matches)."""
    sets: dict[int, frozenset] = {}

    def doc_set(i: int) -> frozenset:
        if i not in sets:
            sets[i] = shingle_set(texts[i])
        return sets[i]

    for kind in result.kinds:
        result.lookups[kind] = 0
        for counts in (result.found, result.false, result.natural):
            counts[kind] = [0] * (MAX_K + 1)
    for j, (kind, original, text) in enumerate(variants):
        result.lookups[kind] += 1
        own, false, natural = np.zeros(MAX_K + 2, int), np.zeros(MAX_K + 2, int), np.zeros(MAX_K + 2, int)
        copy_set = None
        for match in answers.get(j, []):
            other = int(match.id)
            if other == original:
                own[match.distance] += 1
                continue
            copy_set = copy_set if copy_set is not None else shingle_set(text)
            near = max(jaccard(copy_set, doc_set(other)), jaccard(doc_set(original), doc_set(other)))
            (false if near < FALSE_JACCARD else natural)[match.distance] += 1
        for counts, found in ((result.found, own), (result.false, false), (result.natural, natural)):
            cumulative = np.cumsum(found)[:MAX_K + 1].tolist()
            counts[kind] = [a + b for a, b in zip(counts[kind], cumulative)]


def _false_drops(result: Tuning, texts: list[str], fps: np.ndarray) -> None:
    """The sample's short texts, its pairs within 3 bits, those whose texts are not near
    (character-bigram Jaccard below ``NEAR_BIGRAMS``), and those the short-text rule still joins."""
    result.short = sum(map(is_short, texts))
    sketched = None  # the sample's sketches and kept texts, made once if a pair needs them
    for a in range(len(fps)):
        for b in (a + 1 + np.flatnonzero(np.bitwise_count(fps[a + 1:] ^ fps[a]) <= 3)).tolist():
            result.near_pairs += 1
            if similarity(texts[a], texts[b]) < NEAR_BIGRAMS:
                result.unrelated += 1
                if sketched is None:
                    sketches, kepts = text_sketches(texts)
                    sketched = (sketches, kept_of(sketches, kepts))
                sketches, kept = sketched
                result.unrelated_with_rule += sketches_agree(int(fps[a] ^ fps[b]).bit_count(), sketches[a],
                                                             sketches[b], None, WORDS, kept)


def _cost(k: int, docs: int) -> dict[str, Any]:
    scheme = best_scheme(k, docs)
    row = plan(scheme, docs)
    return {"scheme": scheme.name, "flags": row.flags, "index_rows": row.index_rows, "candidates": round(row.candidates, 1)}


def lines(result: Tuning) -> list[str]:
    """The result for people: one row per k (recall, false matches, cost), recall per kind,
    then the suggestion and why."""
    out = [f"{result.read:,} records read; {result.sample:,} sampled (sample seed {result.seed}, {result.language}), "
           f"{result.originals:,} of them copied {len(result.kinds)} ways: {sum(result.lookups.values()):,} lookups",
           f"{'k':>2} {'recall':>7} {'false/lookup':>12} {'in sample':>9} {'scheme':>7} {'rows/doc':>8} "
           f"{'candidates/lookup':>17}"]
    for k in range(MAX_K + 1):
        cost = result.costs[k]
        out.append(f"{k:>2} {result.recall(k):>7.1%} {result.false_rate(k):>12.4f} {result.false_rate(k, False):>9.4f} "
                   f"{cost['scheme']:>7} {cost['flags']:>8} {cost['candidates']:>17,.1f}")
    out.append(f"(false/lookup and cost at {result.docs:,} documents: the sample's false matches scaled by "
               f"{result.docs:,} / {result.indexed:,} indexed, one of them = {result.step:.4f}; the cost as plan gives it, "
               "uniform fingerprints assumed)")
    out.append("recall by kind of copy, k = 0 .. " + str(MAX_K) + ":")
    width = max(len(x) for x in result.kinds)
    for kind in result.kinds:
        n = result.lookups[kind]
        out.append(f"  {kind:<{width}} " + " ".join(f"{result.found[kind][k] / n:>4.0%}" if n else "   -"
                                                  for k in range(MAX_K + 1)))
    out.append(f"short texts (under {SHORT_BELOW} characters, their 64 bits alone unsure): {result.short:,} of "
               f"{result.indexed:,} sampled; pairs within 3 bits: {result.near_pairs:,}, {result.unrelated:,} of them "
               f"unrelated (character bigrams < {NEAR_BIGRAMS}) on their 64 bits alone (--short-texts off), "
               f"{result.unrelated_with_rule:,} under the short-text rule (the default)")
    k = result.suggested()
    out.append(f"suggested: {'none' if k is None else f'k={k}'}. {result.why()}")
    return out


def write_html(result: Tuning, path: str) -> None:
    """The result as one offline HTML page: the table by k, recall by kind, and a chart of the
    mean recall by k."""
    from html import escape

    from .page_parts import CSS
    from .svg import histogram

    rows = "".join(f"<tr><td>{r['k']}</td><td>{r['recall']:.1%}</td><td>{r['false_per_lookup']:.4f}</td>"
                   f"<td>{escape(r['scheme'])}</td><td>{r['flags']}</td><td>{r['candidates']:,.1f}</td></tr>"
                   for r in result.to_dict()["by_k"])
    kinds = "".join(f"<tr><th>{escape(kind)}</th>" + "".join(
        f"<td>{result.found[kind][k] / result.lookups[kind]:.0%}</td>" if result.lookups[kind] else "<td>-</td>"
        for k in range(MAX_K + 1)) + "</tr>" for kind in result.kinds)
    chart = histogram([(str(k), round(100 * result.recall(k))) for k in range(MAX_K + 1)],
                      "mean recall (%) by k", "k (bits)")
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>dedup-hbase tune</title>'
            f"<style>{CSS}</style></head><body><h1>dedup-hbase tune</h1><p>{escape(lines(result)[0])}</p>"
            f'<p class="suggested">{escape(result.why())}</p>{chart}'
            "<h2>By k</h2><table><tr><th>k</th><th>recall</th><th>false matches per lookup</th><th>scheme</th>"
            f"<th>rows per document</th><th>candidates per lookup at {result.docs:,} documents</th></tr>{rows}</table>"
            "<h2>Recall by kind of copy</h2><table><tr><th>kind</th>"
            + "".join(f"<th>k={k}</th>" for k in range(MAX_K + 1)) + f"</tr>{kinds}</table></body></html>")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
