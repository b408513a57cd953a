"""dedup-hbase groups: corpus-wide near-duplicate groups on both engines, against brute force.

20,040 planted fingerprints (exact copies by the thousand, chains whose ends are more than k
apart, pairs at exactly k and k + 1 bits, a bucket of 2,500 distinct fingerprints, random
ones) give exactly the groups of all pairs by XOR and union-find, on the local engine and on
Spark (local[2]); on the shared news corpus both engines write identical outputs; rejects
are accounted as a load accounts them."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.errors import IndexMismatch, InvalidInput
from dedup_hbase.jobs.local.components import id_groups, roots
from dedup_hbase.jobs.local.groups import group_files
from dedup_hbase.jobs.options import SCHEME_5_FROM, GroupsOptions
from dedup_hbase.text.fingerprint import make_fingerprinter

from conftest import shared_corpus
from planted import K, brute_components, brute_groups, brute_via, flip, planted


def spark_groups(spark, paths, out, options):
    from dedup_hbase.jobs.spark import SparkOptions, spark_group_files

    return spark_group_files([str(p) for p in paths], str(out), options, SparkOptions(), make_fingerprinter(),
                             session=spark)


def local_groups(paths, out, options):
    return group_files([str(p) for p in paths], str(out), options, make_fingerprinter())


def parquet_schema(out: Path):
    import pyarrow.parquet as pq

    return pq.read_table(out / "documents").schema.remove_metadata()


def parquet_rows(out: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(out / "documents").to_pylist()


@pytest.fixture(scope="module")
def planted_input(tmp_path_factory):
    """20,040 planted fingerprints as --fingerprints JSON lines, with the expected rows and
    groups file from brute force."""
    fps = planted(7, randoms=13_000, pages=(3000, 1200))
    path = tmp_path_factory.mktemp("planted") / "fps.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "simhash": f"{v:016x}"}) + "\n" for i, v in enumerate(fps)))
    first = brute_groups(fps)
    size = Counter(first)
    via = brute_via(fps)
    rows = [{"id": f"d{i}", "simhash": f"{v:016x}", "group": f"d{first[i]}", "size": size[first[i]],
             "keep": first[i] == i, "via": None if via[i][0] is None else f"d{via[i][0]}", "distance": via[i][1]}
            for i, v in enumerate(fps)]
    members: dict[int, list[str]] = {}
    for i, g in enumerate(first):
        members.setdefault(g, []).append(f"d{i}")
    lines = [json.dumps({"group": n, "size": len(ids), "ids": ids}) + "\n"
             for n, (_, ids) in enumerate(sorted((g, ids) for g, ids in members.items() if len(ids) > 1), 1)]
    assert len(fps) == 20_040 and max(size.values()) >= 3000 and len(lines) > 50
    dropped = "".join(json.dumps({"id": r["id"], "group": r["group"], "via": r["via"], "distance": r["distance"]})
                      + "\n" for r in rows if not r["keep"])
    return path, rows, "".join(lines), len(size), dropped


def check_planted(report, out, planted_input):
    path, rows, lines, groups, dropped = planted_input
    assert (report.read, report.documents, report.rejected, report.groups) == (20_040, 20_040, 0, groups)
    assert report.to_drop == 20_040 - groups and report.k == K
    assert parquet_rows(out) == rows
    assert (out / "groups.jsonl").read_text(encoding="utf-8") == lines
    assert (out / "dropped.jsonl").read_text(encoding="utf-8") == dropped
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in summary.items() if k != "elapsed_s"} == {
        k: v for k, v in report.to_dict().items() if k != "elapsed_s"}


def test_planted_via_is_a_near_member_on_the_way_to_the_kept_one(planted_input):
    """The brute-force vias themselves (what both engines are held to): a kept document has
    none; every other's via is in its group, within k bits, and following vias from any
    document reaches its group's kept one; a chain a - b - c (a kept, c beyond k of a) drops
    c via b; copies of a fingerprint go via its first copy at distance 0."""
    fps = planted(7, randoms=13_000, pages=(3000, 1200))
    _, rows, _, _, _ = planted_input
    position = {r["id"]: i for i, r in enumerate(rows)}
    for i, r in enumerate(rows):
        if r["keep"]:
            assert (r["via"], r["distance"]) == (None, None)
            continue
        v = position[r["via"]]
        assert rows[v]["group"] == r["group"] and r["distance"] == (fps[i] ^ fps[v]).bit_count() <= K
        steps, at = 0, i
        while not rows[at]["keep"]:
            at, steps = position[rows[at]["via"]], steps + 1
            assert steps <= len(rows)
        assert rows[at]["id"] == r["group"]
    by_value = {}
    for i, f in enumerate(fps):
        by_value.setdefault(f, i)
    copies = [i for i, f in enumerate(fps) if by_value[f] != i]
    assert len(copies) > 4000
    assert all((rows[i]["via"], rows[i]["distance"]) == (f"d{by_value[fps[i]]}", 0) for i in copies)
    chains = 0
    for i, r in enumerate(rows):  # c of a planted chain: its group is a, b, c alone, c beyond k of a
        a = position[r["group"]]
        if r["size"] == 3 and (fps[i] ^ fps[a]).bit_count() > K:
            middle = next(j for j, x in enumerate(rows) if x["group"] == r["group"] and j not in (i, a))
            assert r["via"] == f"d{middle}" and rows[middle]["via"] == r["group"]
            chains += 1
    assert chains >= 20  # of 40 chains, shuffled: the kept one is an end in about two thirds


@pytest.mark.parametrize("scheme", [None, "5"])
def test_planted_local_equals_brute_force(planted_input, tmp_path, scheme):
    report = local_groups([planted_input[0]], tmp_path / "out", GroupsOptions(fingerprints=True, scheme=scheme))
    assert report.scheme == (scheme or "4")
    check_planted(report, tmp_path / "out", planted_input)


@pytest.mark.spark
def test_planted_spark_equals_brute_force(spark, planted_input, tmp_path):
    report = spark_groups(spark, [planted_input[0]], tmp_path / "out", GroupsOptions(fingerprints=True))
    assert (report.engine, report.scheme) == ("spark", "4")
    check_planted(report, tmp_path / "out", planted_input)


@pytest.mark.spark
@pytest.mark.parametrize(("scheme", "bucket", "expected"), [("4", 400, 0), ("5", 400, 0), ("5", 1500, 10**4)])
def test_spark_pairs_equal_neardup(spark, monkeypatch, scheme, bucket, expected):
    """spark/pairs.py against neardup.py (itself against brute force in test_skew.py): the same
    distinct fingerprints with their first positions, and the same pairs of them within k
    bits, each once; also with the search spread over more tasks than the session's shuffle
    partitions (``expected``, ``TASK_ROWS``) and a bucket that one tile does not hold."""
    from dedup_hbase.index.arrays import as_signed
    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.index.neardup import near_pairs
    from dedup_hbase.jobs.spark import pairs

    monkeypatch.setattr(pairs, "TASK_ROWS", 2_000)
    fps = np.array(planted(5, randoms=800, pages=(400,), bucket=bucket), dtype=np.uint64)
    df = spark.createDataFrame(list(enumerate(as_signed(fps).tolist())), "pos long, simhash long")
    want = near_pairs(fps, Scheme.parse(scheme), K)
    firsts = pairs.distinct(df)
    assert sorted(r["first"] for r in firsts.collect()) == sorted(want.first.tolist())
    found = pairs.distinct_pairs(firsts, Scheme.parse(scheme), K, expected)
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    leads = len({blocks[0] for blocks in Scheme.parse(scheme).flags})  # a row per lead block: 4 in both schemes
    assert found.rdd.getNumPartitions() == (max(tasks, expected * leads // 2_000))
    got = [tuple(r) for r in found.collect()]
    first, unique = want.first.tolist(), want.unique.tolist()
    expected = sorted((min(first[i], first[j]), max(first[i], first[j]), (unique[i] ^ unique[j]).bit_count())
                      for i, j in want.pairs.tolist())
    assert len(got) == len(set(got)) == len(expected) > 100
    assert sorted(got) == expected


@pytest.mark.spark
def test_spark_query_pairs_equal_brute_force(spark):
    """pairs.query_pairs: every (query, fingerprint) within k bits once, against all pairs by
    XOR, with queries that are fingerprints too (0 bits), near ones at 1..k and k + 1 bits, and
    queries near each other that no fingerprint is near."""
    from dedup_hbase.index.arrays import as_signed
    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.jobs.spark import pairs

    rnd = random.Random(8)
    fps = sorted(set(planted(8, randoms=600, pages=(3,), bucket=300)))
    queries = set(rnd.sample(fps, 100))  # on both sides
    queries |= {flip(rnd.choice(fps), bits, rnd) for bits in (1, 2, 3, 4) for _ in range(60)}
    lonely = [rnd.getrandbits(64) for _ in range(40)]
    queries |= set(lonely) | {flip(q, 2, rnd) for q in lonely}  # near each other only
    queries = sorted(queries)
    brute = {(q, u) for q in queries for u in fps if (q ^ u).bit_count() <= K}
    for scheme in ("4", "5"):
        got = pairs.query_pairs(spark.createDataFrame([(v,) for v in as_signed(np.array(queries, np.uint64)).tolist()], "q long"),
                                spark.createDataFrame([(v,) for v in as_signed(np.array(fps, np.uint64)).tolist()],
                                                      "simhash long"), Scheme.parse(scheme), K).collect()
        found = [(r["q"] % (1 << 64), r["simhash"] % (1 << 64)) for r in got]
        assert len(found) == len(set(found)) == len(brute) > 300
        assert set(found) == brute


@pytest.mark.parametrize("scheme", ["4", "5"])
def test_the_spark_searchs_rows_do_not_depend_on_the_order_of_its_input(scheme):
    """pairs._search (a mapInArrow function) on one partition's rows in two orders gives the
    same rows: a shuffle hands a task its rows in another order each time it runs, and a plan
    may read the search twice (query_pairs did: on a cluster of two executors the two reads
    gave some pairs the other way round, so some (query, fingerprint) pairs came twice and
    their mirrors never, and check --add-new added documents it should have left out)."""
    import pyarrow as pa

    from dedup_hbase.index.arrays import as_signed
    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.jobs.spark import pairs

    layout = Scheme.parse(scheme)
    fps = np.array(sorted(set(planted(9, randoms=300, pages=(3,), bucket=200))), dtype=np.uint64)
    leads = sorted({blocks[0] for blocks in layout.flags})
    rows = [(lead, v, i) for lead in leads for i, v in enumerate(as_signed(fps).tolist())]
    outputs = []
    for order in (rows, rows[::-1], random.Random(9).sample(rows, len(rows))):
        batch = pa.RecordBatch.from_pylist([{"lead": a, "simhash": b, "first": c} for a, b, c in order])
        out = pa.Table.from_batches(list(pairs._search(layout, K)(iter([batch]))))
        outputs.append(sorted(zip(*(out.column(c).to_pylist() for c in ("fa", "fb", "sa", "sb", "distance")))))
    assert outputs[0] == outputs[1] == outputs[2] and len(outputs[0]) > 100
    assert all((sa % (1 << 64)) < (sb % (1 << 64)) for _, _, sa, sb, _ in outputs[0])


@pytest.mark.parametrize("allowed, short", [(None, None), (14, None), (None, "words"), (14, "words")])
def test_the_spark_confirmation_is_sketches_agree_row_for_row(allowed, short):
    """pairs._agree (a mapInArrow function: the rows of pairs.agreeing's pairs that match) keeps
    exactly the rows that ``confirm.sketches_agree`` (its scalar form, the reference) lets
    match: random distances, long sketches near and far, short ones equal, unequal with near
    and unrelated kept texts, signed as Spark holds them; each short sketch's kept text in the
    row beside it, as the callers carry them."""
    import pyarrow as pa

    from dedup_hbase.index.arrays import as_signed
    from dedup_hbase.index.confirm import sketches_agree
    from dedup_hbase.jobs.spark import pairs
    from dedup_hbase.text.units import kept_sketch

    rnd = random.Random(21)
    words = ["习近平会见芬兰总理", "习近平会见澳大利亚总理", "春节里的中国", "春节里的中国人", "7.9亿人次出行", "7.4亿人次出行"]
    texts = {kept_sketch(w): w for w in words}
    rows = []
    for _ in range(2000):
        kind = rnd.random()
        if kind < 0.4:  # two long documents: their sketches near or not
            a = rnd.getrandbits(64) & ~1
            b = flip(a, rnd.randint(0, 20), rnd) & ~1
        else:  # a short one beside a long one or another short one (the same or not)
            a = rnd.choice(list(texts))
            b = rnd.choice(list(texts)) if kind < 0.9 else rnd.getrandbits(64) & ~1
        a, b = (a, b) if rnd.random() < 0.5 else (b, a)
        rows.append((rnd.randint(0, 8), a, b))
    want = [sketches_agree(d, a, b, allowed, short, texts) for d, a, b in rows]
    both = [bool(short) and bool(a & b & 1) and a != b for _, a, b in rows]  # the rows whose texts are read
    batch = pa.RecordBatch.from_pydict({
        "n": list(range(len(rows))), "_distance": pa.array([d for d, _, _ in rows], pa.int32()),
        "sa": as_signed(np.array([a for _, a, _ in rows], np.uint64)).tolist(),
        "sb": as_signed(np.array([b for _, _, b in rows], np.uint64)).tolist(),
        "ka": pa.array([texts.get(a) for _, a, _ in rows], pa.string()),
        "kb": pa.array([texts.get(b) for _, _, b in rows], pa.string())})
    agree = pairs._agree("sa", "sb", ("ka", "kb"), allowed, short)
    kept = [n for out in agree(iter([batch.slice(0, 700), batch.slice(700)])) for n in out.column("n").to_pylist()]
    assert kept == [n for n, w in enumerate(want) if w]
    assert 200 < len(kept) < 1800 and (not short or sum(both) > 100)


@pytest.mark.spark
def test_news_corpus_same_output_on_both_engines(spark, tmp_path):
    corpus = shared_corpus("xwlb_zh.jsonl.gz")
    local = local_groups([corpus], tmp_path / "local", GroupsOptions(workers=2))
    on_spark = spark_groups(spark, [corpus], tmp_path / "spark", GroupsOptions())
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in ("elapsed_s", "engine")}
    assert strip(local) == strip(on_spark)
    assert local.read == 19_339 and local.multi_groups > 0
    assert parquet_rows(tmp_path / "local") == parquet_rows(tmp_path / "spark")
    assert parquet_schema(tmp_path / "local") == parquet_schema(tmp_path / "spark")
    assert (tmp_path / "local" / "groups.jsonl").read_bytes() == (tmp_path / "spark" / "groups.jsonl").read_bytes()
    assert (tmp_path / "local" / "dropped.jsonl").read_bytes() == (tmp_path / "spark" / "dropped.jsonl").read_bytes()
    assert sum(1 for r in parquet_rows(tmp_path / "local") if r["via"] is not None) == local.to_drop


def bad_input(tmp_path: Path) -> Path:
    rnd = random.Random(3)
    page = rnd.getrandbits(64)
    lines = [json.dumps({"id": f"p{i}", "simhash": f"{page:016x}"}) for i in range(5)]
    lines.insert(2, "{not json")
    lines.insert(4, json.dumps({"id": "nosim"}))
    lines.append(json.dumps({"id": "alone", "simhash": f"{page ^ 0xFF:016x}", "featurizer": None}))
    lines.append(json.dumps({"id": "near-é", "simhash": f"{page ^ 0b111:016x}"}))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def check_bad(report, out: Path, rejects: Path, source: str) -> None:
    assert (report.read, report.documents, report.rejected) == (9, 7, 2)
    assert report.read == report.documents + report.rejected
    assert dict(report.rejected_by_reason) == {"malformed JSON": 1, "no 'text' field (nor 'simhash')": 1}
    lines = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert [(x["source"], x["line"], x["id"]) for x in lines] == [(source, 3, None), (source, 5, "nosim")]
    assert (report.groups, report.multi_groups, report.to_drop) == (2, 1, 5)
    rows = parquet_rows(out)
    assert [(r["id"], r["group"], r["size"], r["keep"]) for r in rows] == (
        [(f"p{i}", "p0", 6, i == 0) for i in range(5)] + [("alone", "alone", 1, True), ("near-é", "p0", 6, False)])
    assert (out / "groups.jsonl").read_text(encoding="utf-8") == (
        '{"group": 1, "size": 6, "ids": ["p0", "p1", "p2", "p3", "p4", "near-é"]}\n')
    assert [(r["via"], r["distance"]) for r in rows] == [(None, None)] + [("p0", 0)] * 4 + [(None, None), ("p0", 3)]
    assert (out / "dropped.jsonl").read_text(encoding="utf-8") == "".join(
        f'{{"id": "p{i}", "group": "p0", "via": "p0", "distance": 0}}\n' for i in range(1, 5)) + (
        '{"id": "near-é", "group": "p0", "via": "p0", "distance": 3}\n')


def test_rejects_accounted_local(tmp_path):
    path = bad_input(tmp_path)
    report = local_groups([path], tmp_path / "out", GroupsOptions(fingerprints=True, rejects=str(tmp_path / "r.jsonl")))
    check_bad(report, tmp_path / "out", tmp_path / "r.jsonl", str(path))


@pytest.mark.spark
def test_rejects_accounted_spark(spark, tmp_path):
    path = bad_input(tmp_path)
    report = spark_groups(spark, [path], tmp_path / "out", GroupsOptions(fingerprints=True,
                                                                          rejects=str(tmp_path / "r.jsonl")))
    check_bad(report, tmp_path / "out", tmp_path / "r.jsonl", str(path))


def test_cli_summary_json_and_out_folder(tmp_path):
    path = bad_input(tmp_path)
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(app, ["groups", str(path), "--fingerprints", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert {k: summary[k] for k in ("read", "documents", "groups", "to_drop", "rejected")} == {
        "read": 9, "documents": 7, "groups": 2, "to_drop": 5, "rejected": 2}
    again = runner.invoke(app, ["groups", str(path), "--fingerprints", "--out", str(out)])  # an earlier output: replaced
    assert again.exit_code == 0 and "7 documents in 2 groups" in again.stderr
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    foreign = tmp_path / "foreign.jsonl"  # fails part way through the read: the earlier output stays
    foreign.write_text(json.dumps({"id": "x", "simhash": "0" * 16, "featurizer": "shingles4:v1"}) + "\n")
    failed = runner.invoke(app, ["groups", str(foreign), "--fingerprints", "--out", str(out)])
    assert failed.exit_code == 1 and "was made by featurizer" in failed.stderr
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    refused = runner.invoke(app, ["groups", str(path), "--fingerprints", "--out", str(tmp_path / "other")])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (f"error: --out {tmp_path / 'other'} is not empty and not an earlier groups "
                                      "output (it holds keep.txt): give a new or empty folder")
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


def test_fingerprints_of_another_featurizer_refused(tmp_path):
    path = tmp_path / "in.jsonl"
    shingles = make_fingerprinter("shingles").label
    path.write_text(json.dumps({"id": "a", "simhash": "0" * 16}) + "\n"
                    + json.dumps({"id": "b", "simhash": "0" * 16, "featurizer": shingles}) + "\n")
    with pytest.raises(IndexMismatch, match=re.escape(f"{path}:2: the fingerprint of 'b' was made by featurizer "
                                                      f"{shingles}, the one asked for (--featurizer) is")):
        local_groups([path], tmp_path / "out", GroupsOptions(fingerprints=True))
    report = group_files([str(path)], str(tmp_path / "out"), GroupsOptions(fingerprints=True),
                         make_fingerprinter("shingles"))
    assert (report.documents, report.groups) == (2, 1)


def test_scheme_by_corpus_size():
    assert GroupsOptions().scheme_for(SCHEME_5_FROM - 1).name == "4"
    assert GroupsOptions().scheme_for(SCHEME_5_FROM).name == "5"
    assert GroupsOptions(k=4).scheme_for(10).max_k >= 4
    assert GroupsOptions(scheme="5").scheme_for(10).name == "5"
    with pytest.raises(InvalidInput, match="k=4 is more than scheme 4 can guarantee"):
        GroupsOptions(k=4, scheme="4")


def test_vectorised_components_equal_union_find():
    rnd = np.random.default_rng(9)
    for n, e in ((1, 0), (50, 10), (2000, 1500), (2000, 4000)):
        edges = rnd.integers(0, n, size=(e, 2)) if e else np.empty((0, 2), np.int64)
        assert roots(n, edges).tolist() == brute_components(n, edges.tolist())
    chain = np.array([[i + 1, i] for i in range(5000)])[::-1]  # a long path, given from its far end
    assert roots(5001, chain).tolist() == [0] * 5001


def test_id_groups_are_the_components_in_first_seen_order():
    """load --groups' components of edges between ids: those of a union-find, each group's ids in
    the order first seen, the groups in the order of their first-seen id."""
    rnd = random.Random(4)
    ids = [f"x{i}" for i in range(400)]
    for edges in (300, 800):
        pairs = [(rnd.choice(ids), rnd.choice(ids)) for _ in range(edges)]
        seen = list(dict.fromkeys(x for pair in pairs for x in pair))
        number = {x: i for i, x in enumerate(seen)}
        root = brute_components(len(seen), [(number[a], number[b]) for a, b in pairs])
        want: dict[int, list[str]] = {}
        for i, x in enumerate(seen):
            want.setdefault(root[i], []).append(x)
        assert list(id_groups(pairs)) == [g for g in want.values() if len(g) > 1]
    assert list(id_groups([])) == []


def test_a_hundred_thousand_copies_cost_memory_in_proportion():
    """The edges load --groups writes for 100,000 copies of one page (each copy to the first,
    and to the copy before it: 2n edges, never n²/2): one group, and the components' peak
    memory under 1 KB a copy (Python's and numpy's allocations, tracemalloc)."""
    import tracemalloc

    n = 100_000
    edges = (pair for i in range(1, n) for pair in (("c0", f"c{i}"), (f"c{i - 1}", f"c{i}")))
    tracemalloc.start()
    try:
        found = [len(ids) for ids in id_groups(edges)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [n]
    assert peak < 1024 * n, f"{peak / n:.0f} bytes a copy"


def test_bad_options_refused_as_load_refuses_them(tmp_path):
    for kwargs, message in (({"fmt": "xml"}, "unknown format 'xml'"), ({"batch_size": 0}, "batch_size must be >= 1, not 0"),
                            ({"workers": 0}, "workers must be >= 1, not 0")):
        with pytest.raises(InvalidInput, match=re.escape(message)):
            GroupsOptions(**kwargs)


def test_via_of_a_hundred_thousand_copies_costs_memory_in_proportion():
    """groups' assignment (groups, vias, distances) of 100,000 copies of one page and a chain
    of near ones: each copy via the first (distance 0), the chain link by link, and the peak
    memory under 1 KB a document (tracemalloc sees numpy's allocations)."""
    import tracemalloc

    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.jobs.local.groups import assign

    n, page = 100_000, 0x0123456789ABCDEF
    chain = [page ^ 0b111, page ^ 0b111 ^ (0b111 << 8)]  # 3 bits from the page, then 3 more
    fps = np.array([page] * n + chain, dtype=np.uint64)
    tracemalloc.start()
    try:
        group, via, distance, _ = assign(fps, Scheme.parse("4"), K)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (group == 0).all() and via[0] == -1 and distance[0] == -1
    assert (via[1:n] == 0).all() and (distance[1:n] == 0).all()
    assert via[n:].tolist() == [0, n] and distance[n:].tolist() == [3, 3]
    assert peak < 1024 * len(fps), f"{peak / len(fps):.0f} bytes a document"


def test_tree_parents_of_a_long_path_given_from_its_far_end():
    from dedup_hbase.jobs.local.components import tree_parents

    edges = np.array([[i + 1, i] for i in range(5000)])[::-1]
    start = np.zeros(5001, bool)
    start[0] = True
    parent, weight = tree_parents(5001, edges, np.ones(5000, np.int64), start)
    assert parent.tolist() == [-1] + list(range(5000)) and weight.tolist() == [-1] + [1] * 5000
