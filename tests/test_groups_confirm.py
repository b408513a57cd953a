"""``groups --k 6 --confirm T``: two documents are near when, under some signature, they are
within 3 bits, or within k bits with their sketches (a second SimHash, index/confirm.py) within T
bits. The groups are a brute force's components over every pair on planted structure (pairs at
exactly 3, 4 and k bits with sketches at T and T + 1, one fingerprint under several sketches,
chains, k + 1), each via is a near document of its group at the distance and signature it names;
both engines write the same output byte for byte on news texts with edits beyond 3 bits (under
body,lead150); copies
cost memory in proportion; what it cannot take is refused."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest
from test_groups import local_groups, parquet_rows, parquet_schema, spark_groups

from dedup_hbase.errors import InvalidInput
from dedup_hbase.index.confirm import CONFIRMED_BEYOND
from dedup_hbase.index.layout import Scheme
from dedup_hbase.jobs.local.groups import assign
from dedup_hbase.jobs.options import GroupsOptions
from dedup_hbase.text.signatures import Signatures

K, T = 6, 10
SCHEME = Scheme.parse("7/1")


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed: int, signatures: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, signatures) simhashes and n sketches: randoms; per family a document and others at
    0, 3, 4, K and K + 1 bits under one signature (the others far), each with a sketch at T or
    T + 1 bits from the first's; copies of one fingerprint under sketches that agree and that do
    not; chains; shuffled."""
    rnd = random.Random(seed)
    r = rnd.getrandbits
    rows, sketches = [], []

    def add(simhashes: list[int], sketch: int) -> None:
        rows.append(simhashes)
        sketches.append(sketch)

    for _ in range(600):
        add([r(64) for _ in range(signatures)], r(64))
    for _ in range(60):
        base, sketch = [r(64) for _ in range(signatures)], r(64)
        add(base, sketch)
        place = rnd.randrange(signatures)
        for bits in (0, 3, 4, K, K + 1):
            for allowed in (T, T + 1):
                near = [flip(s, bits, rnd) if p == place else flip(s, 25, rnd) for p, s in enumerate(base)]
                add(near, flip(sketch, allowed, rnd))
        add(base, flip(sketch, 30, rnd))  # the same fingerprints under a far sketch: near at distance 0
        tail = [flip(s, 5, rnd) for s in base]  # a chain: near the far-sketched copy, not the first
        add(tail, flip(sketches[-1], 2, rnd))
    order = list(range(len(rows)))
    rnd.shuffle(order)
    return np.array([rows[i] for i in order], np.uint64), np.array([sketches[i] for i in order], np.uint64)


def near(columns: np.ndarray, sketches: np.ndarray, a: int, b: int) -> list[tuple[int, int]]:
    """The (distance, place) of every signature under which documents a and b are near."""
    out = []
    for place in range(columns.shape[1]):
        d = int(np.bitwise_count(columns[a, place] ^ columns[b, place]))
        if d <= CONFIRMED_BEYOND or (d <= K and int(np.bitwise_count(sketches[a] ^ sketches[b])) <= T):
            out.append((d, place))
    return out


def brute_groups(columns: np.ndarray, sketches: np.ndarray) -> list[int]:
    """Per position the first position of its component, every pair compared."""
    n = len(columns)
    root = list(range(n))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for a in range(n):
        distances = np.bitwise_count(columns[a + 1:] ^ columns[a])
        sketch = np.bitwise_count(sketches[a + 1:] ^ sketches[a])[:, None]
        hits = ((distances <= CONFIRMED_BEYOND) | ((distances <= K) & (sketch <= T))).any(axis=1)
        for b in (a + 1 + np.flatnonzero(hits)).tolist():
            ra, rb = find(a), find(b)
            root[max(ra, rb)] = min(ra, rb)
    return [find(x) for x in range(n)]


@pytest.mark.parametrize("signatures", [1, 2])
def test_planted_groups_are_the_brute_force_and_each_via_is_near(signatures):
    columns, sketches = planted(3 + signatures, signatures)
    more = columns[:, 1:] if signatures > 1 else None
    group, via, distance, place = assign(columns[:, 0].copy(), SCHEME, K, more, (sketches, T, {}))
    expected = brute_groups(columns, sketches)
    assert group.tolist() == expected
    assert len(set(expected)) < len(expected) - 400  # the families are grouped (what the test compares)
    for j in np.flatnonzero(via >= 0).tolist():
        i = int(via[j])
        assert group[i] == group[j] and (int(distance[j]), int(place[j])) in near(columns, sketches, i, j), j
    assert (via < 0).sum() == len(set(expected))  # one kept document a group
    # without the confirmation the same documents fall in fewer groups: it is what decides
    plain = assign(columns[:, 0].copy(), SCHEME, K, more)[0]
    assert len(set(plain.tolist())) < len(set(expected))


def test_copies_cost_memory_in_proportion():
    """100,000 copies of one text (one fingerprint, one sketch) and 100,000 of another beyond 3
    bits with a sketch within T: one group, under 1 KB a document."""
    import tracemalloc

    rnd = random.Random(5)
    a, b = rnd.getrandbits(64), rnd.getrandbits(64)
    simhashes = np.array([a] * 100_000 + [flip(a, 5, rnd)] * 100_000, np.uint64)
    sketches = np.array([b] * 100_000 + [flip(b, T, rnd)] * 100_000, np.uint64)
    tracemalloc.start()
    group, via, distance, _ = assign(simhashes, SCHEME, K, None, (sketches, T, {}))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert set(group.tolist()) == {0} and distance[100_000] == 5 and via[100_000] == 0
    assert peak < 1000 * len(simhashes), peak


@pytest.fixture(scope="module")
def news(tmp_path_factory, xwlb_path):
    """300 news texts, edits of 3% of the characters of 100 of them, exact copies of 30 and
    halves of 30 (under body,lead150 the lead finds them)."""
    from dedup_hbase.report.copies import Copier, edit_characters

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(300), f)]
    rnd = random.Random(23)
    copier = Copier("zh", edit_characters(texts, rnd))
    docs = (texts + [copier.edit3(rnd, texts[i]) for i in rnd.sample(range(300), 100)]
            + [texts[i] for i in rnd.sample(range(300), 30)]
            + [texts[i][:len(texts[i]) // 2] for i in rnd.sample(range(300), 30)])
    rnd.shuffle(docs)
    path = tmp_path_factory.mktemp("news") / "news.jsonl"
    path.write_text("".join(json.dumps({"id": f"n{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(docs)), encoding="utf-8")
    return path


@pytest.mark.spark
def test_news_both_engines_write_the_same_output(spark, news, tmp_path):
    """Signatures and a confirmation together (each option's own brute force is elsewhere: here
    and in tests/test_groups_signatures.py): the Spark engine's output is the local engine's."""
    options = GroupsOptions(k=K, scheme="7/1", confirm=T, signatures=Signatures.parse("body,lead150"), workers=2)
    local = local_groups([news], tmp_path / "local", options)
    on_spark = spark_groups(spark, [news], tmp_path / "spark", options)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in ("elapsed_s", "engine")}
    assert strip(local) == strip(on_spark) and local.to_dict()["confirm"] == T
    rows = parquet_rows(tmp_path / "local")
    assert rows == parquet_rows(tmp_path / "spark")
    assert parquet_schema(tmp_path / "local") == parquet_schema(tmp_path / "spark")
    for name in ("groups.jsonl", "dropped.jsonl"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "spark" / name).read_bytes()
    assert sum(1 for r in rows if r["distance"] is not None and r["distance"] > CONFIRMED_BEYOND) >= 20


def test_what_groups_with_a_confirmation_refuses(news, tmp_path):
    from typer.testing import CliRunner

    from dedup_hbase.cli.commands import app

    with pytest.raises(InvalidInput, match=f"groups with a confirmation \\(sketches within {T} bits\\) fingerprints the texts themselves"):
        GroupsOptions(k=K, confirm=T, fingerprints=True)
    runner = CliRunner()
    refused = runner.invoke(app, ["groups", str(news), "--confirm", "10", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 1 and refused.stderr.strip() == (
        "error: --confirm confirms matches beyond 3 bits: give --k above 3 (such as --k 8 --confirm 14) or "
        "--probes, not --k 3 alone")
    done = runner.invoke(app, ["groups", str(news), "--k", "6", "--confirm", "10", "--out", str(tmp_path / "out"),
                               "--workers", "1"])
    assert done.exit_code == 0, done.output
    assert "signatures" not in done.stderr and "confirmed within 10 bits, short texts near only by their words, local engine" in done.stderr
