"""The fingerprint methods scripts/quality.py compares, and the fingerprinting of a corpus with all
of them in worker processes: dedup-hbase as shipped (its public API: ``make_fingerprinter``, and
``Index`` for the options of an index), and the ``simhash`` package as the peer."""

from __future__ import annotations

import multiprocessing
import sys
import time

import numpy as np

from dedup_hbase import EmptyDocument, Index, make_fingerprinter, open_store
from dedup_hbase.text.units import WORDS

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
