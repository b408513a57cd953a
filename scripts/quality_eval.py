"""The evaluation of scripts/quality.py: brute-force lookups (numpy XOR and popcount over every
indexed fingerprint, the exact answers of dedup-hbase's index) of the planted variants, counted
per kind and k (``evaluate``), the corpus-wide rate of unrelated documents within k bits
(``background``), and the same lookups on dedup-hbase's real ``Index`` (``verify_index``)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from quality_methods import INDEXED, KEPT, SHORT

from dedup_hbase import Document, Index, open_store
from dedup_hbase.index.confirm import sketches_agree
from dedup_hbase.report.tune import jaccard, shingle_set
from dedup_hbase.text.signatures import Signatures

FP_JACCARD = 0.3          # below this 4-gram Jaccard a match is "clearly another document"
FP_BUDGET = 0.005         # false positives per lookup allowed when picking the best k

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
