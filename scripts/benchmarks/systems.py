"""The systems the lookup benchmark compares, behind one small interface.

Every system indexes the same fingerprints (document i is ``d{i}``) and answers "every
fingerprint within k = 3 bits" as sorted ``(document number, distance)`` pairs, so each can be
checked against brute force. Query inputs are converted to the system's own form before
timing (``inputs``, ``batch_input``); converting raw results to pairs happens after it
(``answers``), so only the lookup itself is timed.
"""

from __future__ import annotations

import gc
import logging
import shutil
import sys
import time
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from .common import K, fmt_n

Answer = list[tuple[int, int]]


class System(ABC):
    """One peer. ``build`` returns build statistics; ``size`` the bytes per fingerprint
    and how they were measured. A peer without a batched path sets ``batch_skip`` and
    leaves ``query_batch`` and ``batch_answers`` alone."""

    name = "?"
    linear = False  # reads all N fingerprints per lookup: timed on fewer queries
    batch_skip: str | None = None  # why there is no batched path, if there is none
    candidates_from: str | None = None  # "4" / "5": same buckets as that dedup-hbase scheme

    def skip_reason(self, n: int) -> str | None:
        return None

    @abstractmethod
    def build(self, fps: np.ndarray) -> dict: ...

    def inputs(self, qs: np.ndarray) -> list:
        return qs.tolist()

    @abstractmethod
    def query(self, x): ...

    @abstractmethod
    def answers(self, raw, q: int, fps: np.ndarray) -> Answer: ...

    def batch_input(self, qs: np.ndarray):
        return qs.tolist()

    def query_batch(self, xs):
        raise TypeError(f"{self.name} has no batched lookups ({self.batch_skip})")

    def batch_answers(self, raw, qs: np.ndarray, fps: np.ndarray) -> list[Answer]:
        raise TypeError(f"{self.name} has no batched lookups ({self.batch_skip})")

    @abstractmethod
    def size(self, n: int) -> tuple[float, str]: ...

    def close(self) -> None:  # noqa: B027 (most systems hold nothing to release)
        pass


def _timed(build) -> float:
    started = time.perf_counter()
    build()
    return time.perf_counter() - started


def _with_distances(ids, q: int, fps: np.ndarray) -> Answer:
    ids = np.asarray(sorted(ids), dtype=np.int64)
    return list(zip(ids.tolist(), np.bitwise_count(fps[ids] ^ np.uint64(q)).tolist()))


# -- dedup-hbase on the embedded store ------------------------------------------------------


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class DedupHbase(System):
    """``Index`` over the embedded store, built and queried through the public API only."""

    def __init__(self, scheme: int, workdir: Path, batch: int):
        self.scheme = scheme
        self.name = f"dedup-hbase embedded {scheme}-split"
        self.candidates_from = str(scheme)
        self.path = workdir / f"embedded-{scheme}-split"
        self.batch = batch
        self.index = None

    def build(self, fps: np.ndarray) -> dict:
        from dedup_hbase import Document, Index, open_store

        shutil.rmtree(self.path, ignore_errors=True)
        store = open_store(str(self.path), create=True)
        index = Index.create(store, scheme=self.scheme, k=K)
        flags = len(index.scheme.flags)

        ids = [f"d{i}" for i in range(len(fps))]  # input data, like the peers' arrays: not timed
        gc.collect()
        gc.freeze()  # nor walked by Python's collector at every full collection (a loader streams its
        # input and holds no such list; walking these 10^7 ids doubled the time of the build)

        def write():
            for start in range(0, len(fps), self.batch):
                index.add_many(list(map(Document, ids[start:start + self.batch], fps[start:start + self.batch].tolist())))

        try:  # the embedded store keeps writes as runs until they are folded into its records
            seconds = _timed(write) + _timed(store.flush)
        finally:
            gc.unfreeze()
        compact_s = _timed(store.compact)
        self.index_bytes = store.table_bytes("index")
        store.close()
        self.bytes = folder_bytes(self.path)
        open_s = _timed(lambda: setattr(self, "index", Index.open(open_store(str(self.path)))))
        return {"seconds": seconds, "docs_per_s": len(fps) / seconds, "flags": flags,
                "rows_per_s": len(fps) * flags / seconds, "compact_s": compact_s, "open_s": open_s}

    def query(self, x: int):
        return self.index.query(x)

    def answers(self, raw, q, fps) -> Answer:
        return sorted((int(m.id[1:]), m.distance) for m in raw)

    def query_batch(self, xs: list[int]):
        return self.index.query_many(xs)

    def batch_answers(self, raw, qs, fps) -> list[Answer]:
        return [self.answers(r, None, fps) for r in raw]

    def size(self, n: int) -> tuple[float, str]:
        index = f"; index table alone {self.index_bytes / n:.1f}" if self.index_bytes else ""
        return self.bytes / n, f"disk: the store folder after compaction (index + document tables) / N{index}"

    def close(self) -> None:
        if self.index is not None:
            self.index.store.close()
            self.index = None
        shutil.rmtree(self.path, ignore_errors=True)


# -- the simhash package ------------------------------------------------------------------------


def deep_bytes_simhash_index(index) -> int:
    """sys.getsizeof of the bucket dict, its keys, its sets and the strings in them (each
    object counted once)."""
    seen, total = set(), sys.getsizeof(index.bucket)
    for key, members in index.bucket.items():
        total += sys.getsizeof(key) + sys.getsizeof(members)
        for s in members:
            if id(s) not in seen:
                seen.add(id(s))
                total += sys.getsizeof(s)
    return total


class SimhashPackage(System):
    """``simhash.SimhashIndex`` (k = 3: 4 blocks of 16 bits, dict of sets of strings), in RAM."""

    name = "simhash package SimhashIndex"
    candidates_from = "4"
    batch_skip = "no batched API"

    def __init__(self, max_n: int):
        self.max_n = max_n
        self.index = None

    def skip_reason(self, n: int) -> str | None:
        if n > self.max_n:
            return f"skipped (N > --simhash-max {fmt_n(self.max_n)}: minutes and GBs of RAM; raise it to run)"
        return None

    def build(self, fps: np.ndarray) -> dict:
        from simhash import Simhash, SimhashIndex

        quiet = logging.getLogger("dedup-hbase-bench.simhash")
        quiet.setLevel(logging.ERROR)  # it warns for every bucket over 200 entries

        def build():
            objs = [(f"d{i}", Simhash(v)) for i, v in enumerate(fps.tolist())]
            self.index = SimhashIndex(objs, k=K, log=quiet)

        seconds = _timed(build)
        return {"seconds": seconds, "docs_per_s": len(fps) / seconds}

    def inputs(self, qs: np.ndarray) -> list:
        from simhash import Simhash

        return [Simhash(q) for q in qs.tolist()]

    def query(self, x):
        return self.index.get_near_dups(x)

    def answers(self, raw, q, fps) -> Answer:
        return _with_distances([int(i[1:]) for i in raw], q, fps)

    def size(self, n: int) -> tuple[float, str]:
        return deep_bytes_simhash_index(self.index) / n, "RAM: sys.getsizeof of its dict, sets and strings / N"

    def close(self) -> None:
        self.index = None
        gc.collect()


# -- faiss ----------------------------------------------------------------------------------


def faiss_codes(values: np.ndarray) -> np.ndarray:
    """Fingerprints as faiss binary codes: 8 bytes each, most significant byte first (any
    fixed byte order gives the same Hamming distances; big-endian makes faiss's 16-bit
    hash blocks the 4-split's blocks a, b, c, d)."""
    return np.ascontiguousarray(values.astype(">u8").view(np.uint8).reshape(-1, 8))


def _range_answers(lims, distances, labels, start: int, stop: int) -> Answer:
    return sorted(zip(labels[lims[start]:lims[stop]].tolist(),
                      distances[lims[start]:lims[stop]].astype(int).tolist()))


class Faiss(System):
    """A faiss binary index searched with ``range_search(x, K + 1)``: faiss's binary range
    search keeps distances strictly below the radius (checked against brute force here)."""

    def __init__(self, name: str, make, linear: bool, candidates_from: str | None):
        self.name, self.make, self.linear, self.candidates_from = name, make, linear, candidates_from
        self.index = None

    def build(self, fps: np.ndarray) -> dict:
        codes = faiss_codes(fps)
        self.index = self.make()
        seconds = _timed(lambda: self.index.add(codes))
        return {"seconds": seconds, "docs_per_s": len(fps) / seconds}

    def inputs(self, qs: np.ndarray) -> list:
        codes = faiss_codes(qs)
        return [codes[i:i + 1] for i in range(len(codes))]

    def query(self, x):
        return self.index.range_search(x, K + 1)

    def answers(self, raw, q, fps) -> Answer:
        return _range_answers(*raw, 0, 1)

    def batch_input(self, qs: np.ndarray):
        return faiss_codes(qs)

    def query_batch(self, xs):
        return self.index.range_search(xs, K + 1)

    def batch_answers(self, raw, qs, fps) -> list[Answer]:
        return [_range_answers(*raw, i, i + 1) for i in range(len(qs))]

    def size(self, n: int) -> tuple[float, str]:
        import faiss

        return len(faiss.serialize_index_binary(self.index)) / n, "RAM: faiss.serialize_index_binary / N"

    def close(self) -> None:
        self.index = None


def faiss_multihash() -> Faiss:
    import faiss

    def make():
        index = faiss.IndexBinaryMultiHash(64, 4, 16)  # 4 hash tables on 16-bit blocks
        index.nflip = 0  # exact block match only: the pigeonhole, as the 4-split
        return index

    return Faiss("faiss IndexBinaryMultiHash(64, 4, 16), nflip 0", make, linear=False, candidates_from="4")


def faiss_multihash_2x32() -> Faiss:
    """faiss's best multi-hash layout for k = 3 on 64 bits: 2 tables on 32-bit halves, each
    looked up with every code within 1 bit of the query's half (nflip 1). Exact: 3 differing
    bits leave one half within 1 bit."""
    import faiss

    def make():
        index = faiss.IndexBinaryMultiHash(64, 2, 32)
        index.nflip = 1
        return index

    return Faiss("faiss IndexBinaryMultiHash(64, 2, 32), nflip 1", make, linear=False, candidates_from=None)


def faiss_flat() -> Faiss:
    import faiss

    return Faiss("faiss IndexBinaryFlat", lambda: faiss.IndexBinaryFlat(64), linear=True, candidates_from=None)


# -- numpy brute force ------------------------------------------------------------------------


class NumpyBrute(System):
    """``np.bitwise_count(fps ^ q) <= 3`` over the whole array, per lookup."""

    name = "numpy brute force"
    linear = True
    batch_skip = "same O(N) scan per lookup as single"

    def build(self, fps: np.ndarray) -> dict:
        self.fps = fps
        return {"seconds": None, "docs_per_s": None}

    def inputs(self, qs: np.ndarray) -> list:
        return list(qs)  # numpy uint64 scalars

    def query(self, x):
        d = np.bitwise_count(self.fps ^ x)
        hits = np.flatnonzero(d <= K)
        return hits, d[hits]

    def answers(self, raw, q, fps) -> Answer:
        return sorted(zip(raw[0].tolist(), raw[1].tolist()))

    def size(self, n: int) -> tuple[float, str]:
        return self.fps.nbytes / n, "RAM: the uint64 array / N"

    def close(self) -> None:
        self.fps = None


SYSTEMS = ("dedup4", "dedup5", "simhash", "faiss-multihash", "faiss-multihash-2x32", "faiss-flat", "numpy")


def make_systems(names: list[str], workdir: Path, batch: int, simhash_max: int) -> list[System]:
    makers = {
        "dedup4": lambda: DedupHbase(4, workdir, batch),
        "dedup5": lambda: DedupHbase(5, workdir, batch),
        "simhash": lambda: SimhashPackage(simhash_max),
        "faiss-multihash": faiss_multihash,
        "faiss-multihash-2x32": faiss_multihash_2x32,
        "faiss-flat": faiss_flat,
        "numpy": NumpyBrute,
    }
    return [makers[name]() for name in names]
