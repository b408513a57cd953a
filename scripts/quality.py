#!/usr/bin/env python3
"""Near-duplicate quality harness: does a fingerprint find the copies real copies make?

For a sample of real documents ("originals") it makes near-duplicate variants the ways
copies arise on the web, indexes the originals together with every other document of
the corpus ("distractors"), looks every variant up, and reports per kind of variant:

* recall: the variant finds its own original within k bits;
* false positives per lookup: matches that are clearly other documents, i.e. not the
  original and with a character 4-gram Jaccard below 0.3 with both the variant and its
  original (so natural near-duplicates in the corpus, such as recurring news briefs,
  are not counted as false).

Every fingerprint method runs on the same documents and variants in the same run:
dedup-hbase's featurizers as shipped (``jieba``; ``shingles`` of 4 and 3 characters), and
the ``simhash`` package (leonsim) with its default features and with jieba words. The
fingerprints come from dedup_hbase's public API (``make_fingerprinter``, ``Index``): it
measures what ships, no featurizer of its own. Two helpers of the package's modules serve
the report, not the measurement: ``report.tune``'s 4-gram Jaccard (the one ``dedup-hbase tune``
uses) that tells a false match from a natural near-duplicate, and ``boilerplate.boilerplate_reason`` /
``logical_lines`` for ``--show-boilerplate`` (what the rules drop). The ablations that chose
jieba version 2 ran in this harness's earlier revisions (up to commit 41904de);
docs/history/quality-ablation-2026-11-22.md keeps their results.

Lookups are brute force (numpy XOR + popcount over all indexed fingerprints), which
gives exactly the answers of dedup-hbase's index (proven exact in tests/); pass
``--verify-index`` to check that on the real ``Index`` for one method and k.

    python scripts/quality.py --data ../shared/data/xwlb_zh.jsonl.gz
    python scripts/quality.py --data ../shared/data/jargon_en.jsonl.gz --markdown /tmp/jargon.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import platform
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dedup_hbase import Document, EmptyDocument, Index, make_fingerprinter, open_store
from dedup_hbase.index.confirm import kept_of, sketches_agree
from dedup_hbase.report.copies import KINDS, Copier, detect_lang, edit_characters
from dedup_hbase.report.tune import jaccard, shingle_set
from dedup_hbase.text.boilerplate import boilerplate_reason, logical_lines
from dedup_hbase.text.features import normalize
from dedup_hbase.text.signatures import Signatures
from dedup_hbase.text.units import WORDS, text_sketches

FP_JACCARD = 0.3          # below this 4-gram Jaccard a match is "clearly another document"
FP_BUDGET = 0.005         # false positives per lookup allowed when picking the best k

# =====================================================================================
# 1. Variants: copies made the ways copies arise (dedup_hbase.report.copies, which the
#    `dedup-hbase tune` command uses too)
# =====================================================================================


# =====================================================================================
# 2. The methods: dedup-hbase as shipped, and the `simhash` package as the peer
# =====================================================================================

METHOD_DOC = {
    "dedup-hbase:jieba": "dedup-hbase as shipped: `make_fingerprinter()`, jieba version 2 (body without boilerplate "
                         "lines, jieba words with HMM off, 2+ characters, numbers kept, words of an alphabet as "
                         "character 4-grams, stop words and punctuation dropped, (1 + ln count) x IDF, unknown words "
                         "= median IDF)",
    "dedup-hbase:shingles4": "dedup-hbase as shipped: `make_fingerprinter(\"shingles\", shingle_size=4)` (character "
                             "4-grams of letters and digits, weight = count)",
    "dedup-hbase:shingles3": "the same with `shingle_size=3`",
    "dedup-hbase:jieba+lead150": "`init --signatures body,lead150`: the default's SimHash of the body and the "
                                 "SimHash of the body's first 150 characters (text/signatures.py); a document "
                                 "matches when either is within k bits",
    "dedup-hbase:jieba+lead150+probes8-2": "`init --signatures body,lead150 --probes 8,2`: the same, and each "
                                           "lookup also made with one of the query's 8 least sure body bits "
                                           "flipped, and one of its 2 least sure lead bits (lookup.py)",
    "dedup-hbase:jieba+lead150+probes8-1": "`init --signatures body,lead150 --probes 8,1`: the same, with one "
                                           "probe of the lead: its least sure bit flipped",
    "dedup-hbase:jieba+probes8": "`init --probes 8`: the default's one SimHash, each lookup also made with one "
                                 "of the query's 8 least sure bits flipped",
    "dedup-hbase:jieba+confirm14": "`init --k K --confirm 14`: the default's one SimHash, and a match beyond 3 bits "
                                   "only when the documents' second SimHash (the seed plus one) is within 14 bits "
                                   "(index/confirm.py)",
    "dedup-hbase:jieba+lead150+probes8-1+confirm14": "`init --signatures body,lead150 --probes 8,1 --confirm 14`: "
                                                     "the lead and the probes, and beyond 3 bits the confirmation",
    "dedup-hbase:jieba+short": "`init --short-texts on` (the default index): the default's one SimHash, and a match "
                               "of which either document is short (under 200 characters) only when both are, their "
                               "numbers are the same and the words of one are among the other's, at any distance "
                               "(text/units.py)",
    "simhash-pkg:default": "`simhash.Simhash(text)`: its default features (lower-cased `[\\w\\u4e00-\\u9fcc]+` "
                           "characters joined, 4-character windows, md5)",
    "simhash-pkg:jieba-words": "`simhash.Simhash([w for w in tokenizer.cut(text) if w.strip()])`: every jieba token of "
                               "the raw text, punctuation included, as it is commonly done; each occurrence weight 1",
}
ALL_METHODS = list(METHOD_DOC)
# the methods of an index's options: (signatures, probes, confirm), made by dedup-hbase's own Index
INDEXED = {"dedup-hbase:jieba+lead150": ("body,lead150", None, None),
           "dedup-hbase:jieba+lead150+probes8-2": ("body,lead150", "8,2", None),
           "dedup-hbase:jieba+lead150+probes8-1": ("body,lead150", "8,1", None),
           "dedup-hbase:jieba+probes8": ("body", "8", None),
           "dedup-hbase:jieba+confirm14": ("body", None, 14),
           "dedup-hbase:jieba+lead150+probes8-1+confirm14": ("body,lead150", "8,1", 14),
           "dedup-hbase:jieba+short": ("body", None, None)}
SHORT = {"dedup-hbase:jieba+short": WORDS}  # the methods with the short-text rule
KEPT: dict[int, str] = {}  # the short-text rule: a short sketch -> its kept text, of every text fingerprinted


# =====================================================================================
# 3. Fingerprinting in worker processes
# =====================================================================================

_WORKER: dict = {}


def _worker_init(methods: list[str]) -> None:
    import jieba
    from simhash import Simhash

    jieba.setLogLevel(30)
    tokenizer = jieba.Tokenizer()

    def indexed(signatures, probes, confirm, short=None):
        """(every signature's simhash, every signature's probe masks, the sketch or 0) as the index
        computes them."""
        index = Index.create(open_store("memory:"), None if confirm is None else "7/1", 3 if confirm is None else 6,
                             signatures=signatures, probes=probes, confirm=confirm, short=short)

        def fn(text):
            body = index.fingerprint(text)
            return (body, *index.more_signatures(text, body)), index.probe_masks(text), index.sketched(text)[0] or 0
        return fn

    fns = {
        **{m: indexed(*options, SHORT.get(m)) for m, options in INDEXED.items()},
        "dedup-hbase:jieba": make_fingerprinter("jieba").fingerprint,
        "dedup-hbase:shingles4": make_fingerprinter("shingles", shingle_size=4).fingerprint,
        "dedup-hbase:shingles3": make_fingerprinter("shingles", shingle_size=3).fingerprint,
        "simhash-pkg:default": lambda text: Simhash(text).value,
        "simhash-pkg:jieba-words": lambda text: Simhash([w for w in tokenizer.cut(text) if w.strip()]).value,
    }
    unknown = [m for m in methods if m not in fns]
    if unknown:
        raise SystemExit(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(ALL_METHODS)}")
    _WORKER["fns"] = [fns[m] for m in methods]


def _fingerprint_chunk(texts: list[str]) -> list[list[tuple[tuple[int, ...], tuple]]]:
    out = []
    for text in texts:
        row = []
        for fn in _WORKER["fns"]:
            try:
                value = fn(text)
            except (EmptyDocument, ValueError, ZeroDivisionError):
                value = -1
            if not isinstance(value, tuple):  # one SimHash, no probes, no sketch
                value = ((value if value is not None and value >= 0 else -1,), (), 0)
            row.append(value if len(value) == 3 else (*value, 0))
        out.append(row)
    return out


def fingerprint_all(texts: list[str], methods: list[str],
                    jobs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(fingerprints uint64 [len(texts), len(methods), signatures], valid bool [len(texts), len(methods)],
    probe masks uint64 [len(texts), len(methods), signatures, probes], sketches uint64 [len(texts),
    len(methods)]): per method its signatures' SimHashes, padded with the body's (a distance is the
    least over them), the bits a lookup of the text flips, one mask a probe (0: none), and the
    sketch of an index with a confirmation (0: none)."""
    chunk = 64
    chunks = [texts[i:i + chunk] for i in range(0, len(texts), chunk)]
    rows: list[list[int]] = []
    t0 = time.time()
    if jobs <= 1:
        _worker_init(methods)
        results = map(_fingerprint_chunk, chunks)
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs, _worker_init, (methods,))
        results = pool.imap(_fingerprint_chunk, chunks)
    for i, part in enumerate(results):
        rows.extend(part)
        if sys.stderr.isatty() and i % 20 == 0:
            print(f"\r  fingerprinted {len(rows):,}/{len(texts):,} in {time.time() - t0:.0f} s", end="", file=sys.stderr)
    if jobs > 1:
        pool.close()
        pool.join()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    width = max(len(INDEXED.get(m, ("body",))[0].split(",")) for m in methods)
    depth = max([len(masks) for row in rows for _, probes, _ in row for masks in probes] or [0])
    raw = np.array([[sims + sims[:1] * (width - len(sims)) for sims, _, _ in row] for row in rows],
                   dtype=object).reshape(len(texts), len(methods), width)
    valid = raw[:, :, 0] != -1
    fps = np.where(valid[:, :, None], raw, 0).astype(np.uint64)
    masks = np.zeros((len(texts), len(methods), width, depth), dtype=np.uint64)
    for t, row in enumerate(rows):
        for m, (_, probes, _) in enumerate(row):
            for j, bits in enumerate(probes):
                masks[t, m, j, :len(bits)] = bits
    sketches = np.array([[sketch for _, _, sketch in row] for row in rows], dtype=np.uint64).reshape(len(texts),
                                                                                                   len(methods))
    return fps, valid, masks, sketches


def nearest(a: np.ndarray, b: np.ndarray, masks: np.ndarray | None = None, confirm=None) -> np.ndarray:
    """Hamming distances between fingerprints of several signatures, ``a`` (n, S) and ``b`` (m, S):
    (n, m), each the least over the signatures (a document within k under any of them) and, with
    ``masks`` (n, S, P: a's probes, 0 for none), over a's probes (a with one mask's bits flipped).
    With ``confirm`` (a's sketches (n,), b's (m,), the bits allowed: index/confirm.py) a signature
    whose own simhashes are more than 3 bits apart counts only when the sketches are within the
    bits allowed (else 99): an index with a confirmation matches within k exactly where this is."""
    if masks is None or masks.shape[-1] == 0:
        masks = np.zeros((*a.shape, 0), dtype=np.uint64)
    probes = np.concatenate([a[:, :, None], a[:, :, None] ^ masks], axis=2)
    found = np.bitwise_count(probes[:, None, :, :] ^ b[None, :, :, None]).min(axis=3)  # (n, m, S)
    if confirm is not None and len(confirm) == 5:  # the short-text rule (confirm.sketches_agree), at any distance
        sa, sb, allowed, short, texts = confirm
        own = np.bitwise_count(a[:, None, :] ^ b[None, :, :])
        found = np.where(sketches_agree(own, sa[:, None, None], sb[None, :, None], allowed, short, texts), found, 99)
    elif confirm is not None:
        sa, sb, allowed = confirm
        own = np.bitwise_count(a[:, None, :] ^ b[None, :, :])
        sure = (own <= 3) | (np.bitwise_count(sa[:, None] ^ sb[None, :]) <= allowed)[:, :, None]
        found = np.where(sure, found, 99)
    return found.min(axis=2)


# =====================================================================================
# 4. Evaluation
# =====================================================================================

@dataclass
class Result:
    method: str
    kmax: int
    kcut: int = 0        # false positives are known up to this k
    # per kind: lookups, found[k], fp[k], dup[k] (k = 0..kmax; fp/dup None beyond kcut)
    lookups: dict = field(default_factory=dict)
    found: dict = field(default_factory=dict)
    fp: dict = field(default_factory=dict)
    dup: dict = field(default_factory=dict)
    empty: int = 0
    pairs: tuple = ()
    is_fp: object = None

    def recall(self, kind, k):
        return self.found[kind][k] / self.lookups[kind] if self.lookups[kind] else float("nan")

    def fp_rate(self, kind, k):
        if k > self.kcut:
            return float("inf")
        return self.fp[kind][k] / self.lookups[kind] if self.lookups[kind] else float("nan")

    def overall(self, k):
        kinds = list(self.lookups)
        recall = sum(self.recall(x, k) for x in kinds) / len(kinds)
        if k > self.kcut:
            return recall, float("inf")
        return recall, sum(self.fp[x][k] for x in kinds) / sum(self.lookups.values())

    def best_k(self, kmin=3, kmax=None):
        """The k in kmin..kmax with the highest overall recall at <= FP_BUDGET false positives per lookup."""
        top = self.kmax if kmax is None else min(kmax, self.kmax)
        ok = [k for k in range(kmin, top + 1) if self.overall(k)[1] <= FP_BUDGET]
        return max(ok, key=lambda k: (self.overall(k)[0], -k)) if ok else None


def confirm_of(method: str, a_sketches: np.ndarray, b_sketches: np.ndarray):
    """``nearest``'s ``confirm`` for ``method`` (None: it has no confirmation)."""
    allowed = INDEXED.get(method, (None, None, None))[2]
    if method in SHORT:
        return a_sketches, b_sketches, allowed, SHORT[method], KEPT
    return None if allowed is None else (a_sketches, b_sketches, allowed)


def evaluate(methods, doc_fps, doc_valid, var_fps, var_valid, var_masks, variants, doc_texts, kmax, cap=2.0,
             chunk=256, doc_sketches=None, var_sketches=None):
    """Brute-force lookups of every variant in every method's fingerprints.

    Matches other than the original are classified (Jaccard) up to the largest k at which
    a method has at most ``cap`` of them per lookup; beyond that its false positives are
    reported as unknown (they are above ``cap`` per lookup anyway)."""
    all_pairs = {}     # method -> (vi, di, dist) arrays of non-original matches within kcut
    kcut = {}
    own = {}           # method -> distance of every variant to its own original (99 if either empty)
    origin = np.array([v["orig"] for v in variants])
    for j, m in enumerate(methods):
        docs = doc_fps[:, j]
        bad_docs = ~doc_valid[:, j]
        q_all, q_masks = var_fps[:, j], var_masks[:, j]
        probes = np.concatenate([q_all[:, :, None], q_all[:, :, None] ^ q_masks], axis=2)
        found = np.bitwise_count(probes ^ docs[origin][:, :, None]).min(axis=2)  # (variants, S)
        confirm = confirm_of(m, var_sketches[:, j], doc_sketches[:, j]) if doc_sketches is not None else None
        if confirm is not None and len(confirm) == 5:  # the short-text rule, at any distance
            sure = sketches_agree(np.bitwise_count(q_all ^ docs[origin]), var_sketches[:, j][:, None],
                                  doc_sketches[origin, j][:, None], confirm[2], confirm[3], confirm[4])
            found = np.where(sure, found, 99)
        elif confirm is not None:  # beyond 3 bits, a signature counts when the sketches are near
            sure = (np.bitwise_count(q_all ^ docs[origin]) <= 3) | (
                np.bitwise_count(var_sketches[:, j] ^ doc_sketches[origin, j]) <= confirm[2])[:, None]
            found = np.where(sure, found, 99)
        dist_own = found.min(axis=1).astype(np.int16)
        dist_own[~var_valid[:, j] | bad_docs[origin]] = 99
        own[m] = dist_own
        vis, dis, ds = [], [], []
        for s in range(0, len(variants), chunk):
            q = q_all[s:s + chunk]
            part = None if confirm is None else (confirm[0][s:s + chunk], *confirm[1:])
            d = nearest(q, docs, q_masks[s:s + chunk], part)
            d[:, bad_docs] = 99
            d[~var_valid[s:s + chunk, j], :] = 99
            d[np.arange(len(q)), origin[s:s + chunk]] = 99          # own original handled above
            vi, di = np.nonzero(d <= kmax)
            vis.append(vi + s)
            dis.append(di)
            ds.append(d[vi, di])
        vi, di, ds = np.concatenate(vis), np.concatenate(dis), np.concatenate(ds)
        per_k = np.bincount(ds, minlength=kmax + 1).cumsum()
        ok = [k for k in range(kmax + 1) if per_k[k] <= cap * len(variants)]
        kcut[m] = max(ok) if ok else -1
        keep = ds <= kcut[m]
        all_pairs[m] = (vi[keep], di[keep], ds[keep])

    # Jaccard of every (variant, other doc) pair any method matched, once.
    needed = set()
    for vi, di, _ in all_pairs.values():
        needed.update(zip(vi.tolist(), di.tolist()))
    var_sets, doc_sets = {}, {}

    def doc_set(i):
        if i not in doc_sets:
            doc_sets[i] = shingle_set(doc_texts[i])
        return doc_sets[i]

    sim = {}
    for vi, di in needed:
        if vi not in var_sets:
            var_sets[vi] = shingle_set(variants[vi]["text"])
        sim[vi, di] = max(jaccard(var_sets[vi], doc_set(di)), jaccard(doc_set(variants[vi]["orig"]), doc_set(di)))

    kinds = list(dict.fromkeys(v["kind"] for v in variants))
    kind_of = np.array([kinds.index(v["kind"]) for v in variants])
    results = {}
    for j, m in enumerate(methods):
        r = Result(m, kmax, kcut=kcut[m])
        r.empty = int((~var_valid[:, j]).sum())
        vi, di, ds = all_pairs[m]
        r.pairs = (vi, di, ds)
        is_fp = np.array([sim[a, b] < FP_JACCARD for a, b in zip(vi.tolist(), di.tolist())], dtype=bool)
        r.is_fp = is_fp
        for x, kind in enumerate(kinds):
            sel = kind_of == x
            r.lookups[kind] = int(sel.sum())
            r.found[kind] = [int((own[m][sel] <= k).sum()) for k in range(kmax + 1)]
            in_kind = kind_of[vi] == x if len(vi) else np.zeros(0, bool)
            r.fp[kind] = [int((in_kind & is_fp & (ds <= k)).sum()) if k <= kcut[m] else None for k in range(kmax + 1)]
            r.dup[kind] = [int((in_kind & ~is_fp & (ds <= k)).sum()) if k <= kcut[m] else None for k in range(kmax + 1)]
        results[m] = r
    return results, sim


def background(methods, doc_fps, doc_valid, doc_masks, doc_texts, kmax, cap=1.0, chunk=1024, doc_sketches=None):
    """Corpus-wide false-match rate, independent of the variants: for every pair of indexed
    documents within k bits, is it clearly two different documents (4-gram Jaccard < 0.3)?
    Returns {method: [unrelated documents within k per document, k = 0..kmax] (None where
    a method has more than ``cap`` matching pairs per document)}."""
    n = len(doc_texts)
    sets = {}

    def doc_set(i):
        if i not in sets:
            sets[i] = shingle_set(doc_texts[i])
        return sets[i]

    sim = {}
    out = {}
    for j, m in enumerate(methods):
        docs, masks = doc_fps[:, j], doc_masks[:, j]
        bad = ~doc_valid[:, j]
        pi, pj, pd = [], [], []
        step = chunk // (1 + masks.shape[-1])  # probes: as many distances in memory as without
        for s in range(0, n, step):
            confirm = None if doc_sketches is None else confirm_of(m, doc_sketches[s:s + step, j], doc_sketches[:, j])
            d = nearest(docs[s:s + step], docs, masks[s:s + step], confirm)
            d[:, bad] = 99
            d[bad[s:s + step], :] = 99
            a, b = np.nonzero(d <= kmax)
            keep = b > a + s
            pi.append(a[keep] + s)
            pj.append(b[keep])
            pd.append(d[a[keep], b[keep]])
        pi, pj, pd = np.concatenate(pi), np.concatenate(pj), np.concatenate(pd)
        per_k = np.bincount(pd, minlength=kmax + 1).cumsum()
        ok = [k for k in range(kmax + 1) if per_k[k] <= cap * n]
        kcut = max(ok) if ok else -1
        sel = pd <= kcut
        unrelated = np.zeros(kmax + 1, int)
        for a, b, d in zip(pi[sel].tolist(), pj[sel].tolist(), pd[sel].tolist()):
            if (a, b) not in sim:
                sim[a, b] = jaccard(doc_set(a), doc_set(b))
            if sim[a, b] < FP_JACCARD:
                unrelated[d:] += 1
        out[m] = [2 * unrelated[k] / n if k <= kcut else None for k in range(kmax + 1)]
    return out


def verify_index(method, method_index, doc_fps, doc_valid, var_fps, var_valid, var_masks, k, sample, seed,
                 doc_sketches, var_sketches):
    """Check brute force against dedup-hbase's real Index (memory store) for one method."""
    names, probes, allowed = INDEXED.get(method, ("body", None, None))
    signatures = Signatures.parse(names)
    ix = Index.create(open_store("memory:"), None, k, signatures=signatures, probes=probes,  # `init --k`'s scheme
                      confirm=allowed if k > 3 else None, short=SHORT.get(method))
    scheme = ix.scheme.name
    docs, more = doc_fps[:, method_index], len(signatures) - 1
    sketch = (lambda i: int(doc_sketches[i, method_index])) if ix.spec.sketched else (lambda i: None)
    kept = (lambda i: KEPT.get(int(doc_sketches[i, method_index]), "")) if ix.spec.short is not None else (lambda i: "")
    ix.add_many([Document(str(i), int(docs[i, 0]), {}, tuple(map(int, docs[i, 1:1 + more])), sketch(i), kept(i))
                 for i in range(len(docs)) if doc_valid[i, method_index]])
    rnd = random.Random(seed)
    picks = [i for i in range(len(var_fps)) if var_valid[i, method_index]]
    picks = rnd.sample(picks, min(sample, len(picks)))
    masks = var_masks[:, method_index, :1 + more]
    answers = ix.query_many([int(var_fps[i, method_index, 0]) for i in picks], k, None,
                            [tuple(map(int, var_fps[i, method_index, 1:1 + more])) for i in picks] if more else None,
                            [tuple(tuple(int(b) for b in m if b) for m in masks[i]) for i in picks] if probes else None,
                            [int(var_sketches[i, method_index]) for i in picks] if ix.spec.sketched else None,
                            [KEPT.get(int(var_sketches[i, method_index]), "") for i in picks]
                            if ix.spec.short is not None else None)
    valid_docs = np.nonzero(doc_valid[:, method_index])[0]
    for i, got in zip(picks, answers):
        confirm = None if not ix.spec.sketched else confirm_of(method, var_sketches[i:i + 1, method_index],
                                                               doc_sketches[valid_docs, method_index])
        d = nearest(var_fps[i:i + 1, method_index, :1 + more], docs[valid_docs, :1 + more], masks[i:i + 1], confirm)[0]
        want = sorted(str(x) for x in valid_docs[d <= k])
        if sorted(m.id for m in got) != want:
            raise SystemExit(f"index and brute force disagree on variant {i}: {sorted(m.id for m in got)} vs {want}")
    return scheme, len(picks)


# =====================================================================================
# 5. Reporting
# =====================================================================================

def fmt_pair(r: Result, kind, k):
    if kind == "overall":
        rec, fp = r.overall(k)
    else:
        rec, fp = r.recall(kind, k), r.fp_rate(kind, k)
    if fp == float("inf"):
        return f"{rec:.3f} / **>2**"
    return f"{rec:.3f} / {fp:.4f}" if fp < 0.1 else f"{rec:.3f} / **{fp:.3f}**"


def markdown(results: dict[str, Result], kinds, main_methods, ks_show, bg=None, best_kmax=8) -> str:
    out = []
    # summary: method x k
    out.append("Overall (mean recall over kinds / false positives per lookup), by k; "
               f"best k = the k in 3..{best_kmax} with the highest recall at <= {FP_BUDGET} FP/lookup:\n")
    ks = list(range(ks_show[0], ks_show[1] + 1))
    out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " | best k |")
    out.append("|---|" + "---|" * (len(ks) + 1))
    for m, r in results.items():
        bk = r.best_k(kmax=best_kmax)
        out.append(f"| {m} | " + " | ".join(fmt_pair(r, 'overall', k) for k in ks) + f" | {bk if bk is not None else '-'} |")
    out.append("")
    if bg:
        out.append("Background: clearly different indexed documents (4-gram Jaccard < 0.3) within k bits of an indexed "
                   "document, per document, over all pairs of the index (a steadier estimate of the false-positive rate "
                   "than the lookups, which rest on the sampled originals):\n")
        out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " |")
        out.append("|---|" + "---|" * len(ks))
        for m, rates in bg.items():
            out.append(f"| {m} | " + " | ".join("**>1**" if rates[k] is None else f"{rates[k]:.4f}" for k in ks) + " |")
        out.append("")
    # per kind at k = 3, then at each method's best k
    out.append("Per kind at k = 3, recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(main_methods) + " |")
    out.append("|---|" + "---|" * len(main_methods))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, 3) for m in main_methods) + " |")
    out.append("")
    cols = [(m, results[m].best_k(kmax=best_kmax)) for m in main_methods]
    cols = [(m, k) for m, k in cols if k is not None]
    out.append(f"Per kind at each method's best k (<= {best_kmax}), recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(f"{m} k={k}" for m, k in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, k) for m, k in cols) + " |")
    out.append("")
    return "\n".join(out)


def read_corpus(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="JSONL(.gz) with id and text (title optional); with --precision the folder "
                                       "holding xwlb_zh.jsonl.gz and jargon_en.jsonl.gz (default ../shared/data)")
    parser.add_argument("--originals", type=int, default=1000, help="documents sampled as originals")
    parser.add_argument("--distractors", default="all", help="other documents indexed with them: a number or 'all'")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"variant kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--methods", default="all", help=f"comma-separated methods (default all: {', '.join(ALL_METHODS)})")
    parser.add_argument("--kmax", type=int, default=10, help="largest k evaluated and shown (k = 0..kmax)")
    parser.add_argument("--best-kmax", type=int, default=8,
                        help="largest k considered for a method's best k (schemes beyond 8 cost 66+ index rows per document)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="write every count to this JSON file")
    parser.add_argument("--verify-index", metavar="METHOD:K",
                        help="check brute force against dedup-hbase's Index for one method at one k "
                             "(e.g. dedup-hbase:jieba:8)")
    parser.add_argument("--no-background", action="store_true", help="skip the all-pairs background false-match rate")
    parser.add_argument("--dump-fp", metavar="METHOD:K", help="print the false positives of one method at one k")
    parser.add_argument("--show-boilerplate", action="store_true",
                        help="print what the boilerplate rules drop from the originals and the variants")
    parser.add_argument("--precision", action="store_true",
                        help="instead: the precision of whole groups runs and the recall of planted short copies "
                             "(scripts/quality_precision.py)")
    parser.add_argument("--corpora", default="titles,glossary,news,mixed,docstrings",
                        help="with --precision: the corpora")
    parser.add_argument("--per-kind", type=int, default=300, help="with --precision: planted copies per kind")
    parser.add_argument("--groups-args", default="", help="with --precision: options given to dedup-hbase groups")
    parser.add_argument("--short-recall", action="store_true",
                        help="instead: recall of planted short copies by the way candidates are found, all pairs "
                             "compared (scripts/quality_short_recall.py; the first of --corpora)")
    parser.add_argument("--short-texts", default="12,16,18,20",
                        help="with --short-recall: the rules measured: T (the sketch within T bits), J (bigram "
                             "Jaccard >= 0.5), WN (a 256-bit sketch within N), SN (the sketch within N and "
                             "insertions only), CN (the sketch within N and units.near: the same numbers, the words "
                             "of one among the other's), UC:H (units.near on a C-bit bitmap and an H-bit hash)")
    parser.add_argument("--eye", nargs=2, metavar=("RULE", "VARIANT"),
                        help="with --short-recall: print a seeded sample of that rule's non-identical drops under "
                             "200 characters with that variant's candidates, to be read by eye (as --eye S12 "
                             "simhash<=3); --eye-n pairs, --eye-seed")
    parser.add_argument("--eye-n", type=int, default=40)
    parser.add_argument("--eye-seed", type=int, default=44)
    args = parser.parse_args()
    t_start = time.time()
    if args.short_recall:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import quality_short_recall

        quality_short_recall.main(args.data or str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"),
                                  args.corpora.split(",")[0], args.per_kind, args.seed, args.short_texts, args.json,
                                  (*args.eye, args.eye_n, args.eye_seed) if args.eye else None)
        return
    if args.precision:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import quality_precision

        quality_precision.main(args.data or str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"),
                               args.corpora, args.per_kind, args.seed, args.groups_args, args.json, args.markdown)
        return
    if not args.data:
        parser.error("--data is required")

    methods = ALL_METHODS if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            parser.error(f"unknown kind {k!r}")

    rows = read_corpus(args.data)
    texts_all = [r["text"] for r in rows]
    lang = detect_lang(texts_all)
    rnd = random.Random(args.seed)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    n_orig = min(args.originals, len(rows))
    orig_rows = order[:n_orig]
    others = order[n_orig:]
    if args.distractors != "all":
        others = others[: int(args.distractors)]
    doc_rows = sorted(orig_rows + others)
    pos = {row: i for i, row in enumerate(doc_rows)}
    doc_texts = [texts_all[r] for r in doc_rows]

    copier = Copier(lang, edit_characters(texts_all, rnd))  # typo characters: the corpus's own letters
    variants = []
    for kind in kinds:
        krnd = random.Random(f"{args.seed}:{kind}")
        for row in orig_rows:
            text = getattr(copier, kind)(krnd, texts_all[row], rows[row].get("title"))
            variants.append({"kind": kind, "orig": pos[row], "text": text, "id": rows[row]["id"]})
    print(f"{args.data}: {len(rows):,} documents ({lang}); indexed {len(doc_texts):,} = {n_orig:,} originals + "
          f"{len(others):,} distractors; {len(variants):,} lookups ({len(kinds)} kinds x {n_orig}); "
          f"{len(methods)} methods; {args.jobs} jobs", file=sys.stderr)

    if args.show_boilerplate:
        show_boilerplate(doc_texts, variants)

    t0 = time.time()
    doc_fps, doc_valid, doc_masks, doc_sketches = fingerprint_all(doc_texts, methods, args.jobs)
    var_fps, var_valid, var_masks, var_sketches = fingerprint_all([v["text"] for v in variants], methods, args.jobs)
    if SHORT.keys() & set(methods):  # the kept texts of the short ones, what the rule decides a pair by
        KEPT.update(kept_of(*text_sketches(doc_texts + [v["text"] for v in variants])))
    t_fp = time.time() - t0
    print(f"  fingerprints in {t_fp:.0f} s", file=sys.stderr)

    t0 = time.time()
    results, sim = evaluate(methods, doc_fps, doc_valid, var_fps, var_valid, var_masks, variants, doc_texts, args.kmax,
                            doc_sketches=doc_sketches, var_sketches=var_sketches)
    print(f"  lookups + Jaccard of {len(sim):,} matched pairs in {time.time() - t0:.0f} s", file=sys.stderr)
    if args.dump_fp:
        name, _, k = args.dump_fp.rpartition(":")
        dump_fp(results[name], int(k), variants, doc_texts, [rows[r].get("title") for r in doc_rows], sim)

    bg = None
    if not args.no_background:
        t0 = time.time()
        bg = background(methods, doc_fps, doc_valid, doc_masks, doc_texts, args.kmax, doc_sketches=doc_sketches)
        print(f"  background pairs in {time.time() - t0:.0f} s", file=sys.stderr)

    if args.verify_index:
        name, _, k = args.verify_index.rpartition(":")
        scheme, n = verify_index(name, methods.index(name), doc_fps, doc_valid, var_fps, var_valid, var_masks, int(k),
                                 500, args.seed, doc_sketches, var_sketches)
        print(f"  --verify-index: dedup-hbase Index ({scheme}, k={k}) = brute force on {n} lookups", file=sys.stderr)

    main_methods = methods
    total = time.time() - t_start
    header = (f"Data {args.data}: {len(doc_texts):,} documents indexed ({n_orig:,} originals + {len(others):,} "
              f"distractors), {len(variants):,} lookups ({len(kinds)} kinds x {n_orig:,}), seed {args.seed}; "
              f"Python {platform.python_version()}, {args.jobs} jobs on {os.cpu_count()} cores, {total:.0f} s in all "
              f"({t_fp:.0f} s fingerprinting).\n")
    empties = {m: r.empty for m, r in results.items() if r.empty}
    if empties:
        header += f"\nLookups with no features (count as misses): {empties}\n"
    text = header + "\n" + markdown(results, kinds, main_methods, (3, args.kmax), bg, args.best_kmax)
    text += "\nMethods:\n\n" + "\n".join(f"* `{m}`: {METHOD_DOC.get(m, '')}" for m in methods) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, "utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "data": args.data, "seed": args.seed, "originals": n_orig, "distractors": len(others),
            "kinds": kinds, "seconds": total,
            "methods": {m: {"lookups": r.lookups, "found": r.found, "fp": r.fp, "near_dup": r.dup, "empty": r.empty,
                            "best_k": r.best_k(kmax=args.best_kmax), "background": bg and bg[m]} for m, r in results.items()}},
                      indent=1), "utf-8")


def dump_fp(r: Result, k, variants, doc_texts, titles, sim):
    vi, di, ds = r.pairs
    sel = np.nonzero(r.is_fp & (ds <= k))[0] if len(ds) else []
    print(f"{r.method}: {len(sel)} false positives at k <= {k}", file=sys.stderr)
    for i in sel[:40]:
        v = variants[vi[i]]
        o, d = v["orig"], di[i]
        print(f"  [{v['kind']}] d={ds[i]} J={sim[vi[i], d]:.2f} len {len(doc_texts[o])}/{len(doc_texts[d])}\n"
              f"     orig : {titles[o]} | {doc_texts[o][:70]!r}\n     match: {titles[d]} | {doc_texts[d][:70]!r}", file=sys.stderr)


def show_boilerplate(doc_texts, variants):
    reasons, dropped_lines, lines, dropped_chars, chars = Counter(), Counter(), 0, 0, 0
    examples = defaultdict(list)
    for t in doc_texts:
        for line in logical_lines(normalize(t)):
            lines += 1
            chars += len(line)
            why = boilerplate_reason(line)
            if why:
                reasons[why] += 1
                dropped_chars += len(line)
                if len(examples[why]) < 8:
                    examples[why].append(line[:100])
    print(f"originals+distractors: {sum(reasons.values()):,} of {lines:,} lines dropped "
          f"({dropped_chars / max(chars, 1):.2%} of characters): {dict(reasons)}", file=sys.stderr)
    for why, ex in examples.items():
        for e in ex:
            print(f"    [{why}] {e}", file=sys.stderr)
    kept = Counter()
    for v in variants:
        if v["kind"] not in ("mirror", "ads", "counters"):
            continue
        orig_lines = set(logical_lines(normalize(doc_texts[v["orig"]])))
        for line in logical_lines(normalize(v["text"])):
            if line not in orig_lines:
                dropped_lines[boilerplate_reason(line) or "KEPT"] += 1
                if boilerplate_reason(line) is None and kept[v["kind"]] < 15:
                    kept[v["kind"]] += 1
                    print(f"    kept ({v['kind']}): {line[:100]}", file=sys.stderr)
    print(f"added lines in mirror/ads/counters variants: {dict(dropped_lines)}", file=sys.stderr)


if __name__ == "__main__":
    main()
