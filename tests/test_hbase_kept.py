"""Rows of many cells read once in a pass (stores/hbase/kept.py): the cut ranges and the spliced
answer against brute force, and on the real HBase a ``check`` whose batches all meet a fingerprint
with more than ``LARGE_ROW`` copies reads each of its rows once, answering as full reads do."""

import json
import random
from collections import Counter

import numpy as np
import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.jobs.local.check import check_files
from dedup_hbase.jobs.options import CheckOptions
from dedup_hbase.stores.hbase import kept, thrift2
from dedup_hbase.stores.hbase.kept import KeptRows
from dedup_hbase.stores.hbase.results import Results

from conftest import hbase_store_url

K = 3


def in_ranges(row: bytes, ranges) -> bool:
    return any(start <= row and (stop is None or row < stop) for start, stop in ranges)


def test_the_cut_ranges_hold_every_row_of_the_ranges_but_the_kept_ones():
    """Random sorted, disjoint ranges over two-byte rows (kept rows at a range's start, inside,
    at the last row before its stop, side by side; open-ended ranges): the rows of the cut
    ranges are exactly the rows of the ranges less the kept rows, and the rows cut out are the
    kept rows inside them, in order."""
    rnd = random.Random(5)
    universe = [bytes([a, b]) for a in (0, 1, 2, 254, 255) for b in (0, 1, 7, 254, 255)]
    for _ in range(2000):
        bounds = sorted(rnd.sample(universe, rnd.choice((2, 4, 6))))
        ranges = [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]
        if rnd.random() < 0.3:
            ranges[-1] = (ranges[-1][0], None)
        rows = KeptRows()
        rows.rows = {row: None for row in rnd.sample(universe, rnd.randint(0, 8))}
        cut, skipped = rows.without(ranges)
        assert all(a < b for a, b in cut if b is not None)  # no empty range goes to HBase
        assert [r for r in universe if in_ranges(r, cut)] == [
            r for r in universe if in_ranges(r, ranges) and r not in rows.rows]
        assert skipped == sorted(r for r in rows.rows if in_ranges(r, ranges))


def test_a_spliced_answer_is_the_full_read():
    """Rows with cells (some empty of cells, the large ones first, last, side by side): the
    rows read with the large ones cut out, then spliced, equal the whole read, cell for cell."""
    rnd = random.Random(6)
    for _ in range(300):
        rows = sorted(rnd.sample(range(1000), rnd.randint(1, 12)))
        cells = [rnd.choice((0, 1, 3, kept.LARGE_ROW)) for _ in rows]
        full = Results([r.to_bytes(2, "big") for r in rows], np.repeat(np.arange(len(rows)), cells),
                       [f"q{i}".encode() for i in range(sum(cells))], [b""] * sum(cells))
        remembered = KeptRows()
        remembered.remember(full)
        assert sorted(remembered.rows) == [r for r, n in zip(full.rows, cells) if n >= kept.LARGE_ROW]
        read = [i for i, row in enumerate(full.rows) if row not in remembered.rows]
        rest = Results.concat([full.slice(i, i + 1) for i in read]) if read else Results.of([])
        again = remembered.spliced(rest, sorted(remembered.rows))
        assert again.rows == full.rows and again.qualifiers == full.qualifiers
        assert again.cell_rows.tolist() == full.cell_rows.tolist()


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for b in rnd.sample(range(64), bits):
        value ^= 1 << b
    return value


@pytest.mark.hbase
def test_a_check_reads_a_fingerprints_large_rows_once_and_answers_as_full_reads(hbase_url, tmp_path, monkeypatch):
    """A 5-split index on HBase: one fingerprint with LARGE_ROW + 200 copies (a row of that many
    cells under each of its 10 flags), 60 documents at 1 to 3 bits from it and 20 at 4, 300
    others. ``check`` of 60 queries in batches of 3, near that fingerprint (0 to 3 bits) and
    elsewhere, every batch meeting it: each record is the brute force's (the first 50 matches
    by (distance, id), the count), and each large row is read once; without the pass's keeping
    (``Index.query_many`` batch by batch) the same answers, each row read again in every batch
    that meets it. A copy added after the pass is found by the next one."""
    rnd = random.Random(7)
    hot = rnd.getrandbits(64)
    docs = [(f"c{i:05d}", hot) for i in range(kept.LARGE_ROW + 200)]
    docs += [(f"n{i:03d}", flip(hot, 1 + i % 3, rnd)) for i in range(60)]
    docs += [(f"m{i:03d}", flip(hot, 4, rnd)) for i in range(20)]
    docs += [(f"o{i:03d}", rnd.getrandbits(64)) for i in range(300)]
    queries = []
    for i in range(20):
        queries += [flip(hot, i % 4, rnd), flip(docs[-1 - i][1], i % 4, rnd), rnd.getrandbits(64)]
    reads: Counter = Counter()
    scan = thrift2.scan_ranges

    def counted(*args, **kwargs):
        got = scan(*args, **kwargs)
        sizes = np.bincount(got.cell_rows, minlength=len(got.rows))
        reads.update(got.rows[i] for i in np.flatnonzero(sizes >= kept.LARGE_ROW).tolist())
        return got

    monkeypatch.setattr(thrift2, "scan_ranges", counted)

    def brute(q: int) -> dict:
        near = sorted(((d ^ q).bit_count(), i) for i, d in docs if (d ^ q).bit_count() <= K)
        return {"ids": [i for _, i in near[:50]], "count": len(near)}

    url = hbase_store_url(hbase_url)
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "simhash": f"{q:016x}"}) + "\n" for i, q in enumerate(queries)))
    try:
        with open_store(url) as store:
            index = Index.create(store, scheme=5)
            index.write([Document(i, v) for i, v in docs])
            expected = [brute(q) for q in queries]
            records = []
            check_files(index, [str(path)], CheckOptions(fingerprints=True, batch_size=3, max_matches=50),
                        records.append)
            got = [{"ids": [m["id"] for m in r["matches"]], "count": r.get("match_count", len(r["matches"]))}
                   for r in records]
            assert got == expected
            assert len(reads) == 10 and set(reads.values()) == {1}  # each flag's row of the copies, once
            reads.clear()
            answers = [index.query_many(queries[i:i + 3], max_matches=50) for i in range(0, len(queries), 3)]
            assert [{"ids": [m.id for m in a], "count": a.total} for batch in answers for a in batch] == expected
            assert len(reads) == 10 and min(reads.values()) >= 5  # again in each batch that met them (5 hold a copy)
            index.write([Document("c99999", hot)])
            with store.large_rows_kept():
                assert index.query_many([hot], max_matches=1)[0].total == brute(hot)["count"] + 1
    finally:
        with open_store(url) as store:
            store.drop()
