"""groups in memory bounded by its groups, not its input: the distinct fingerprints and the pair
search in parts equal the whole's, the groups kept sparse equal brute force, the output
written a slice at a time equals one written at once, the ids' spill file leaves no trace,
and the memory of the search over 2^21 random fingerprints stays under a bound per
fingerprint (numpy's allocations, seen by tracemalloc) that the dense arrays it replaced
exceeded."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dedup_hbase.index.layout import Scheme
from dedup_hbase.index.neardup import distinct_pairs, flag_pairs
from dedup_hbase.index.parts import distinct, parts_of, position_type
from dedup_hbase.jobs.local.group_output import SPILL, IdSpill, write
from dedup_hbase.jobs.local.groups import group_files, link
from dedup_hbase.jobs.local.kept_texts import KEPT, KeptTexts
from dedup_hbase.jobs.options import GroupsOptions
from dedup_hbase.jobs.reports import GroupsReport
from dedup_hbase.text.fingerprint import make_fingerprinter
from dedup_hbase.text.units import kept_sketch

from planted import K, brute_groups, brute_via, planted


def test_parts_grow_with_the_input_a_power_of_two_each():
    assert [parts_of(n) for n in (0, 1, 2**21 - 1, 2**21, 2**22, 10**7, 10**8, 10**11)] == [1, 1, 1, 2, 4, 8, 64, 4096]
    assert position_type(2**31 - 1) is np.int32 and position_type(2**31) is np.int64


@pytest.mark.parametrize("parts", [1, 2, 16, 256])
def test_distinct_in_parts_equals_numpy_unique(parts):
    rng = np.random.default_rng(5)
    values = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    values[rng.choice(5000, 2000)] = values[rng.choice(5000, 2000)]  # copies, spread over the parts
    values[:50] = np.uint64(2**64 - 1)  # the top part's edge
    batches = [values[:1], values[1:2999], values[2999:]]
    unique, first, inverse = distinct(batches, parts)
    want = np.unique(values, return_index=True, return_inverse=True)
    assert batches == []  # emptied: the caller's batches are let go
    assert unique.tolist() == want[0].tolist() and first.tolist() == want[1].tolist()
    assert inverse.tolist() == want[2].ravel().tolist() and inverse.dtype == np.int32


@pytest.mark.parametrize("scheme", ["4", "5"])
def test_pairs_in_parts_equal_one_part_and_brute_force(scheme):
    fps = np.array(planted(11, randoms=3000, pages=(40, 20)), dtype=np.uint64)
    unique = np.unique(fps)
    brute = {(a, b) for a in range(len(unique)) for b in
             np.flatnonzero(np.bitwise_count(unique[a] ^ unique[a + 1:]) <= K) + a + 1}
    for parts in (1, 4, 64):
        found = np.concatenate(list(distinct_pairs(unique, Scheme.parse(scheme), K, parts)))
        assert len(found) == len(brute)
        assert {tuple(p) for p in found.tolist()} == brute


@pytest.mark.parametrize("scheme", ["4", "5"])
def test_flag_pairs_over_rows_parted_by_segment_equal_the_whole_search(scheme):
    """The Spark engine's contract (jobs/spark/pairs.py): each flag's rows dealt into parts by
    their segment, ``flag_pairs`` on each part, gives every pair ``distinct_pairs`` gives, once."""
    parsed = Scheme.parse(scheme)
    unique = np.unique(np.array(planted(13, randoms=3000, pages=(40,), bucket=1500), dtype=np.uint64))
    whole = {tuple(p) for p in np.concatenate(list(distinct_pairs(unique, parsed, K))).tolist()}
    found = []
    for flag in range(1, len(parsed.flags) + 1):
        part_of = parsed.segments(unique, flag) % 7  # a hash partitioner's stand-in
        for part in range(7):
            members = np.flatnonzero(part_of == part)
            found += [tuple(p) for p in members[flag_pairs(unique[members], parsed, flag, K)].tolist()]
    assert len(found) == len(set(found)) == len(whole) > 1500
    assert set(found) == whole


def test_linked_groups_equal_brute_force_and_keep_singletons_out():
    fps = planted(3, randoms=4000, pages=(300, 50))
    linked = link([np.array(fps[:777], np.uint64), np.array(fps[777:], np.uint64)], Scheme.parse("4"), K)
    first, via = brute_groups(fps), brute_via(fps)
    group, found_via, distance, place = linked.dense()
    assert group.tolist() == first
    assert found_via.tolist() == [-1 if v is None else v for v, _ in via]
    assert distance.tolist() == [-1 if d is None else d for _, d in via]
    assert set(place.tolist()) == {-1, 0}
    sizes = np.bincount(first, minlength=len(fps))
    assert linked.members.tolist() == [i for i in range(len(fps)) if sizes[first[i]] > 1]
    assert linked.size.tolist() == [int(sizes[first[i]]) for i in linked.members.tolist()]
    assert linked.simhashes().tolist() == fps


def test_output_written_a_slice_at_a_time_equals_one_written_at_once(tmp_path):
    fps = planted(4, randoms=2500, pages=(200, 30))
    outputs = []
    for rows in (3, 1000, 10**6):
        folder = tmp_path / f"rows{rows}"
        folder.mkdir()
        spill = IdSpill(folder)
        for at in range(0, len(fps), 700):  # batches as a run appends them
            spill.append(pa.array([f"d{i}" for i in range(at, min(len(fps), at + 700))], pa.string()))
        linked = link([np.array(fps, np.uint64)], Scheme.parse("4"), K)
        report = GroupsReport(k=K)
        write(folder, spill, linked, report, rows=rows)
        spill.close()
        assert not (folder / SPILL).exists()
        outputs.append([(folder / name).read_bytes() for name in ("groups.jsonl", "dropped.jsonl")]
                       + [pq.read_table(folder / "documents")])
        assert report.groups == len(set(brute_groups(fps)))
    assert outputs[0][:2] == outputs[1][:2] == outputs[2][:2]
    assert outputs[0][2].equals(outputs[1][2]) and outputs[0][2].equals(outputs[2][2])


def test_a_run_leaves_no_spill_even_when_it_fails(tmp_path):
    good = tmp_path / "fps.jsonl"
    good.write_text("".join(json.dumps({"id": f"d{i}", "simhash": f"{i * 7919:016x}"}) + "\n" for i in range(50)))
    report = group_files([str(good)], str(tmp_path / "out"), GroupsOptions(fingerprints=True), make_fingerprinter())
    assert report.documents == 50 and not (tmp_path / "out" / SPILL).exists() and not (tmp_path / "out" / KEPT).exists()
    other = tmp_path / "other.jsonl"  # fingerprints of another featurizer: refused while reading
    other.write_text(json.dumps({"id": "x", "simhash": "00000000000000ff", "featurizer": "shingles-v1"}) + "\n")
    with pytest.raises(Exception, match="featurizer"):
        group_files([str(other)], str(tmp_path / "out2"), GroupsOptions(fingerprints=True), make_fingerprinter())
    assert not (tmp_path / "out2" / SPILL).exists() and not (tmp_path / "out2" / KEPT).exists()
    texts = tmp_path / "texts.jsonl"  # with the short-text rule: the kept texts' file goes too
    texts.write_text("".join(json.dumps({"id": f"t{i}", "text": f"标题{i}"}, ensure_ascii=False) + "\n" for i in range(9)))
    assert group_files([str(texts)], str(tmp_path / "out3"), GroupsOptions(), make_fingerprinter()).documents == 9
    assert sorted(p.name for p in (tmp_path / "out3").iterdir()) == ["documents", "dropped.jsonl", "groups.jsonl",
                                                                      "summary.json"]


def test_kept_texts_are_read_back_from_their_file(tmp_path):
    rnd = random.Random(46)
    texts = KeptTexts(tmp_path)
    expected, written = {}, 0
    for batch in range(5):  # batches with copies, texts of no sketch ("": not short) and other scripts
        rows = [(kept_sketch(t), t) for t in (rnd.choice(["春节里的中国", "the cat sat", "李希在湖南调研", f"第{batch}次"])
                                              for _ in range(20))] + [(0, "")]
        texts.add([s for s, _ in rows], [t for _, t in rows])
        expected.update((s, t) for s, t in rows if t)
        written += sum(len(t.encode()) for t in {t for _, t in rows})  # a batch's copies once
    assert texts.seal() is texts and (tmp_path / KEPT).stat().st_size == written
    assert dict(texts.items()) == expected and len(texts) == len(expected) == 8
    assert sorted(texts) == sorted(expected)
    with pytest.raises(KeyError):
        texts[kept_sketch("not added")]
    texts.close()
    assert not (tmp_path / KEPT).exists()
    empty = KeptTexts(tmp_path).seal()
    assert len(empty) == 0 and "x" not in empty and 1 not in empty
    empty.close()


def _peak_of_link(n: int) -> tuple[int, int]:
    """numpy's peak allocations (tracemalloc) of ``link`` over n random fingerprints (1% near
    copies, one page copied 20,000 times), and its members."""
    import tracemalloc

    rng = np.random.default_rng(21)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    fps[rng.choice(n, 20_000, replace=False)] = fps[0]
    near = rng.choice(n, n // 100, replace=False)
    fps[near] = fps[rng.choice(n, n // 100)] ^ (np.uint64(1) << rng.integers(0, 64, n // 100, dtype=np.uint64))
    batches = [fps[i:i + 65_536].copy() for i in range(0, n, 65_536)]
    del fps
    tracemalloc.start()
    try:
        linked = link(batches, Scheme.parse("5"), K)
        return tracemalloc.get_traced_memory()[1], len(linked.members)
    finally:
        tracemalloc.stop()


def test_the_search_costs_at_most_28_bytes_a_fingerprint_more():
    """From 2^21 + 2^17 to twice as many fingerprints (2 and 4 parts of the same size: the
    distinct ones pass 2^21 and 2^22), ``link``'s peak grows by under 28 bytes a fingerprint
    (the distinct fingerprints 8, a first position and an inverse 4 each, a segment 4, a part
    2, beside the input's 8, traced before the search; measured 22): the search's transient
    arrays are a part's. The dense int64 arrays over every position it replaced (node, rank,
    group, via, distance, place, ...) grew by more than 100."""
    n = (1 << 21) + (1 << 17)
    small, members = _peak_of_link(n)
    large, more = _peak_of_link(2 * n)
    assert members >= 20_000 + n // 100 and more >= 20_000 + 2 * n // 100
    assert large - small < 28 * n, f"{(large - small) / n:.1f} bytes a fingerprint"
