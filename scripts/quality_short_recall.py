"""Recall of planted short copies under the short-text rule, by the way candidates are found
(issue 44's target: 90%), measured by brute force over all pairs of a corpus of short texts.

``python scripts/quality.py --short-recall`` runs it. The corpus and the planted copies are
``--precision``'s (quality_precision.py: the same ``planted`` copies for the same ``--seed``);
each document gets its SimHash (the default featurizer), its short-text sketch
(``char_sketch``: the character sketch of the rule before) and its squeezed body. Every pair of documents is compared (numpy,
in chunks), and a *variant* is a way of finding candidates:

* ``simhash<=3``: what every path does now (prefix scans of the SimHash within k = 3);
* ``+sketch<=3``: the sketch also looked up as a signature within 3 bits (the prefix scans of
  index/layout.py, any 64-bit value within k; ``signatures=body,lead150`` shows the form);
* ``+exact``: also the pairs whose squeezed bodies are equal (a lookup of the body's hash);
* ``+bands RxB``: also the pairs that agree in all R of the full 64-bit min-wise hashes of one
  of B bands (the sketch's own min-wise hashes before their lowest bit is kept: LSH banding,
  which an index would need as B more rows per document); its cost, the mean candidates a
  document's bands bring (pairs sharing a band, over the documents);
* ``all pairs``: every pair: the ceiling of any way of finding candidates under the rule.

Each variant's candidates then pass the character sketch's rule at T (``sketches_agree``, as
every path applied it before text/units.py), or, for ``--short-texts J``, the exact rule the sketch estimates (the
texts' bigram Jaccard at least 0.5: what an index would need the texts, or a larger sketch,
for), or, for ``--short-texts WN``, a 256-bit one-bit MinHash (of ``minhashes``) within N bits
(both rules only over the pairs the sketch keeps: within ``KEEP_SKETCH`` bits), or, for
``--short-texts SN``, the sketch within N bits *and* insertions only: once case, white space and
punctuation are taken out, the shorter text is the longer with characters left out (a
subsequence of it; ``insertions_only``), so a pair that differs by a substituted character (another
name, number or ordinal in one template) is not near; or, for ``--short-texts CN``, the sketch within N bits *and*
``units.near`` (the rule being built: the same numbers, the words of one among the other's),
or, for ``--short-texts UC:H``, that test on a 64-bit stand-in (``unit_sketch``: a C-bit bitmap
of the words, an H-bit hash of the numbers); and the groups are the connected components with ``via`` the
breadth-first tree of jobs/local/components.py (the local engine's own code), weights the
SimHash distance; recall and the unrelated drops under 200 characters are counted as
``--precision`` counts them (``shorts.similarity`` < 0.5). Checked against the shipped
command: ``simhash<=3`` gives ``--precision``'s numbers for the same T.
"""

from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import mmh3
import numpy as np
from quality_precision import NEAR_JACCARD, PLANTED_KINDS, corpora, planted

from dedup_hbase.errors import EmptyDocument
from dedup_hbase.jobs.local.components import roots, tree_parents
from dedup_hbase.text.fingerprint import make_fingerprinter
from dedup_hbase.text.shorts import SHORT_BELOW, SHORT_FLAG, bigrams, is_short, jaccard, similarity, squeezed
from dedup_hbase.text.units import near as units_near
from dedup_hbase.text.units import numbers, stored, words

J_SKETCH = 20     # the pairs the exact bigram rule ("T" J) is computed for
KEEP_SKETCH = 24   # pairs with sketches at most this many bits apart are kept (every T measured is below)
WIDE = 256         # bits of the wider one-bit MinHash of the "W" rules
CHUNK = 400        # rows compared with all the others at once
BANDS = ((2, 31), (3, 21), (4, 15))  # (R hashes per band, B bands) of the banding variants
SEED = 0x5348      # mmh3's seed for the bigrams of the character sketch
_MIX = np.random.default_rng(44).integers(1, 1 << 63, size=63, dtype=np.uint64) | np.uint64(1)


def char_sketch(text: str) -> int:
    """The character sketch of the short-text rule before text/units.py (dedup_hbase until
    2026-12-06, measured in docs/quality.md as "sketch <= T"): for a short text a 63-bit one-bit
    MinHash of its character bigrams (bits 63..1) with ``SHORT_FLAG``; 0 for another."""
    if not is_short(text):
        return 0
    low = minhashes(text, mix=_MIX) & np.uint64(1)
    return int(np.bitwise_or.reduce(low << np.arange(63, 0, -1, dtype=np.uint64))) | SHORT_FLAG


def sketches_agree(distance, a, b, confirm, short):
    """The rule of the character sketch (dedup_hbase until 2026-12-06): a pair of which either
    is short matches, at any distance, only when both are and their sketches are within
    ``short`` bits; any other within 3 bits (``confirm`` unused: kept for the calls' shape)."""
    apart = np.bitwise_count(np.asarray(a, np.uint64) ^ np.asarray(b, np.uint64))
    flag_a, flag_b = (np.asarray(a) & np.uint64(1)) != 0, (np.asarray(b) & np.uint64(1)) != 0
    return np.where(flag_a | flag_b, flag_a & flag_b & (apart <= short), np.asarray(distance) <= 3)


def minhashes(text: str, count: int = 63, mix: np.ndarray | None = None) -> np.ndarray:
    """``count`` full 64-bit min-wise hashes of the text's bigrams (mmh3, then per hash an odd
    multiplier, ``mix``'s or seeded ones of its own, and splitmix64's finalizer: the character
    sketch's mix before it keeps the lowest bit)."""
    grams = bigrams(text)
    hashes = np.fromiter((mmh3.hash64(g.encode("utf-8"), SEED, signed=False)[0] for g in grams), np.uint64,
                         len(grams))
    if mix is None:
        mix = np.random.default_rng(7).integers(1, 1 << 63, size=count, dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        x = hashes[None, :] * mix[:, None]
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x.min(axis=1)


def fingerprints(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's SimHash (the default featurizer; 0 for a text ``groups`` rejects) and whether
    it has one."""
    fp = make_fingerprinter()
    sims, valid = np.zeros(len(texts), np.uint64), np.zeros(len(texts), bool)
    for n, text in enumerate(texts):
        try:
            sims[n], valid[n] = fp.fingerprint(text), True
        except EmptyDocument:
            pass
    return sims, valid


def close_pairs(sims: np.ndarray, sketches: np.ndarray, bodies: np.ndarray):
    """Every pair i < j within 3 SimHash bits, or sketches within ``KEEP_SKETCH`` bits, or equal
    bodies: (i, j, SimHash bits, sketch bits)."""
    n = len(sims)
    out = []
    for lo in range(0, n, CHUNK):
        i = np.arange(lo, min(lo + CHUNK, n))
        dsim = np.bitwise_count(sims[i, None] ^ sims[None, :])
        dsk = np.bitwise_count(sketches[i, None] ^ sketches[None, :])
        same = bodies[i, None] == bodies[None, :]
        upper = np.arange(n)[None, :] > i[:, None]
        a, b = np.nonzero(upper & ((dsim <= 3) | (dsk <= KEEP_SKETCH) | same))
        out.append((i[a], b, dsim[a, b], dsk[a, b]))
    return [np.concatenate(x) for x in zip(*out)]


def bigram_rule(texts: list[str], i: np.ndarray, j: np.ndarray, dsk: np.ndarray) -> np.ndarray:
    """The rule a sketch can only estimate: the texts' bigram Jaccard at least ``NEAR_JACCARD``
    (computed for the pairs with sketches within ``J_SKETCH`` bits: a pair at Jaccard 0.5 is
    beyond them with probability about 1%; the others count as not near)."""
    grams = [bigrams(t) for t in texts]
    near = np.zeros(len(i), bool)
    for n in np.flatnonzero(dsk <= J_SKETCH):
        near[n] = jaccard(grams[i[n]], grams[j[n]]) >= NEAR_JACCARD
    return near


def core(text: str) -> str:
    """The text without case, white space and punctuation (NFKC)."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text)).lower()


def insertions_only(a: str, b: str) -> bool:
    """Whether the shorter of two ``core`` texts is a subsequence of the longer: they differ by
    characters inserted (or left out), none substituted or moved."""
    short, long = sorted((a, b), key=len)
    rest = iter(long)
    return all(c in rest for c in short)


def insertion_rule(cores: list[str], i: np.ndarray, j: np.ndarray, short: np.ndarray,
                   sketch_ok: np.ndarray) -> np.ndarray:
    """``sketch_ok`` and ``insertions_only`` for the pairs of which either text is short
    (``short``: per pair, as the shipped rule measures it: the squeezed body under
    ``SHORT_BELOW``); the others: ``sketch_ok`` alone, the shipped rule."""
    near = sketch_ok.copy()
    for n in np.flatnonzero(sketch_ok & short):
        near[n] = insertions_only(cores[i[n]], cores[j[n]])
    return near


def unit_sketch(text: str, cbits: int = 55, hbits: int = 8) -> int:
    """Flag (bit 0), an ``hbits`` hash of the numbers in order (bits 1..hbits), a ``cbits`` bitmap
    of the units (CJK characters singly, digit runs, other letter runs) above it."""
    kept = stored(text)
    found = words(kept)
    nums = "\x00".join(u for u in numbers(kept) if u.isdigit() and u.isascii())
    h = mmh3.hash(nums.encode(), SEED + 2, signed=False) & ((1 << hbits) - 1)
    bits = 0
    for u in set(found):
        bits |= 1 << (mmh3.hash(u.encode(), SEED + 1, signed=False) % cbits)
    return (bits << (hbits + 1)) | (h << 1) | 1


def unit_rule(usk: np.ndarray, i: np.ndarray, j: np.ndarray, short: np.ndarray, hbits: int) -> np.ndarray:
    """Pairs of which neither is short: near (the SimHash's candidates as they are); else near
    when both are short, their numbers' hashes equal and one's units among the other's."""
    a, b = usk[i], usk[j]
    low = np.uint64((1 << (hbits + 1)) - 1)
    both = (a & b & np.uint64(1)) != 0
    same_numbers = (a & low) == (b & low)
    ua, ub = a & ~low, b & ~low
    contained = ((ua & ~ub) == 0) | ((ub & ~ua) == 0)
    return np.where(short, both & same_numbers & contained, True)


def containment_rule(texts: list[str], i: np.ndarray, j: np.ndarray, short: np.ndarray,
                     sketch_ok: np.ndarray) -> np.ndarray:
    """``sketch_ok`` and, for the pairs of which either is short, ``units.near`` (the same
    numbers, the words of one among the other's) of the texts as an index keeps them."""
    near = sketch_ok.copy()
    kept: dict[int, str] = {}
    for n in np.flatnonzero(sketch_ok & short):
        a, b = (kept[x] if x in kept else kept.setdefault(x, stored(texts[x])) for x in (i[n], j[n]))
        near[n] = units_near(a, b)
    return near


def eye_sample(n: int, edges: np.ndarray, weights: np.ndarray, texts: list[str], first_copy: int, count: int,
               seed: int) -> None:
    """``count`` seeded drops of the corpus's own documents under 200 whose text differs from its
    via's beyond ``core``, printed for a person to judge: Jaccard, text, via's text."""
    label = roots(n, edges)
    parent, _ = tree_parents(n, edges, weights, label == np.arange(n))
    pairs = [(texts[d], texts[parent[d]]) for d in np.flatnonzero(parent[:first_copy] >= 0)
             if len(squeezed(texts[d])) < SHORT_BELOW and core(texts[d]) != core(texts[parent[d]])]
    print(f"# {len(pairs):,} non-identical drops under 200; {min(count, len(pairs))} sampled with seed {seed}")
    for m, (a, b) in enumerate(random.Random(seed).sample(pairs, min(count, len(pairs))), 1):
        print(f"{m}\t{similarity(a, b):.2f}\t{a}\t{b}")


def band_agree(mins: np.ndarray, i: np.ndarray, j: np.ndarray, r: int, b: int) -> np.ndarray:
    """Whether pairs (i, j) agree in all ``r`` hashes of one of ``b`` bands."""
    agree = np.zeros(len(i), bool)
    for band in range(b):
        cols = slice(band * r, band * r + r)
        agree |= (mins[i, cols] == mins[j, cols]).all(axis=1)
    return agree


def band_cost(mins: np.ndarray, r: int, b: int) -> float:
    """The mean, over the documents, of the other documents sharing one of its bands (summed
    over the bands: what a lookup would read)."""
    total = 0
    for band in range(b):
        _, inverse, counts = np.unique(mins[:, band * r:band * r + r], axis=0, return_inverse=True, return_counts=True)
        total += int((counts[inverse.ravel()] - 1).sum())
    return total / len(mins)


def judged(n: int, edges: np.ndarray, weights: np.ndarray, texts: list[str], copies, first_copy: int) -> dict:
    """Groups of ``edges`` as the local engine makes them; the unrelated drops under 200 among
    the corpus's own documents and the planted copies found."""
    label = roots(n, edges)
    parent, _ = tree_parents(n, edges, weights, label == np.arange(n))
    dropped = unrelated = 0
    for node in np.flatnonzero(parent[:first_copy] >= 0):
        if len(squeezed(texts[node])) < SHORT_BELOW:
            dropped += 1
            unrelated += similarity(texts[node], texts[parent[node]]) < NEAR_JACCARD
    found = Counter()
    for copy, original, kind in copies:
        found[kind] += bool(label[copy] == label[original])
    return {"dropped": dropped, "unrelated": unrelated, "recall": {k: found[k] for k in PLANTED_KINDS}}


def main(data: str, corpus: str, per_kind: int, seed: int, shorts: str, json_out: str | None,
         eye: tuple[str, str, int, int] | None = None) -> None:
    """``eye``: (T, variant, count, seed): that rule's drops sampled for a person (``eye_sample``)."""
    docs = corpora(Path(data))[corpus]
    made = planted(docs, per_kind, random.Random(seed))
    texts = [t for _, t in docs] + [t for _, t, _, _ in made]
    index = {doc_id: n for n, (doc_id, _) in enumerate(docs)}
    copies = [(len(docs) + n, index[original], kind) for n, (_, _, original, kind) in enumerate(made)]
    per = Counter(kind for _, _, kind in copies)
    sims, valid = fingerprints(texts)
    sketches = np.array([char_sketch(t) for t in texts], np.uint64)
    bodies = np.array([squeezed(t) for t in texts], object)
    mins = np.stack([minhashes(t) for t in texts])
    i, j, dsim, dsk = close_pairs(sims, sketches, bodies)
    ok = valid[i] & valid[j]  # a text without features is rejected by groups: in no pair
    i, j, dsim, dsk = i[ok], j[ok], dsim[ok], dsk[ok]
    near = {kind: sum(similarity(texts[c], texts[o]) >= NEAR_JACCARD for c, o, k in copies if k == kind)
            for kind in PLANTED_KINDS}
    print(f"{corpus}: {len(texts):,} documents ({len(made)} planted: {dict(per)}), {len(i):,} close pairs; "
          f"copies with bigram Jaccard >= {NEAR_JACCARD} to their original: {near}", file=sys.stderr)
    found = {"simhash<=3": dsim <= 3}
    found["+sketch<=3"] = found["simhash<=3"] | (dsk <= 3)
    found["+exact"] = found["+sketch<=3"] | (bodies[i] == bodies[j])
    for r, b in BANDS:
        found[f"+bands {r}x{b}"] = found["+exact"] | band_agree(mins, i, j, r, b)
    found["all pairs"] = np.ones(len(i), bool)
    costs = {f"+bands {r}x{b}": round(band_cost(mins, r, b), 1) for r, b in BANDS}
    results = []
    wide = None
    cores = [core(t) for t in texts]
    short = np.array([len(b) < SHORT_BELOW for b in bodies])
    for t in (None, *[x if x[0] in "JSWCU" else int(x) for x in shorts.split(",")]):
        if isinstance(t, str) and t[0] == "W" and wide is None:
            wide = np.stack([np.packbits((minhashes(x, WIDE) & np.uint64(1)).astype(bool)).view(np.uint64) for x in texts])
        if isinstance(t, str) and t[0] == "U":  # U<c>:<h>: unit bitmaps and numbers' hashes alone
            cbits, hbits = (int(x) for x in t[1:].split(":"))
            usk = np.array([unit_sketch(x, cbits, hbits) if s_ else 0 for x, s_ in zip(texts, short)], np.uint64)
        rule = np.ones(len(i), bool) if t is None else (
            unit_rule(usk, i, j, short[i] | short[j], hbits) if isinstance(t, str) and t[0] == "U" else
            bigram_rule(texts, i, j, dsk) if t == "J" else
            containment_rule(texts, i, j, short[i] | short[j],
                             sketches_agree(dsim, sketches[i], sketches[j], None, int(t[1:])))
            if isinstance(t, str) and t[0] == "C" else

            insertion_rule(cores, i, j, short[i] | short[j],
                           sketches_agree(dsim, sketches[i], sketches[j], None, int(t[1:])))
            if isinstance(t, str) and t[0] == "S" else
            np.bitwise_count(wide[i] ^ wide[j]).sum(axis=1) <= int(t[1:]) if isinstance(t, str) else
            sketches_agree(dsim, sketches[i], sketches[j], None, t))
        for name, mask in found.items():
            if t is None and name != "simhash<=3":
                continue
            keep = mask & rule & ((dsim <= 3) if t is None else True)
            edges = np.stack([i[keep], j[keep]], axis=1)
            r = judged(len(texts), edges, dsim[keep], texts, copies, len(docs))
            r.update(T=t, variant=name, edges=int(keep.sum()), cost=costs.get(name))
            results.append(r)
            if eye is not None and (str(t), name) == eye[:2]:
                eye_sample(len(texts), edges, dsim[keep], texts, len(docs), eye[2], eye[3])
            recall = " ".join(f"{k} {r['recall'][k] / per[k]:.3f}" for k in PLANTED_KINDS)
            print(f"T={t} {name}: unrelated {r['unrelated']}/{r['dropped']} under 200, recall {recall}"
                  + (f", {costs[name]} band candidates a document" if name in costs else ""), file=sys.stderr)
    if json_out:
        Path(json_out).write_text(json.dumps({"planted": dict(per), "near": near, "results": results}, indent=1))
