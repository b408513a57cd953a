"""``groups --signatures body,lead150``: two documents are near when they are within k bits under
any one signature. The assignment (groups, vias, distances, the signature named) is exact against
a brute force over every pair and signature on planted structure (exact copies, pairs at exactly k
and k + 1 bits under each signature, chains that change signature half-way, one body under many
leads), and on news texts with copies that lost their end; skew costs memory in proportion to the
copies. That the Spark engine writes the local engine's output byte for byte under several
signatures is tests/test_groups_confirm.py's (body,lead150 with a confirmation)."""

from __future__ import annotations

import gzip
import json
import random
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from test_groups import local_groups, parquet_rows

from dedup_hbase.errors import InvalidInput
from dedup_hbase.index.layout import Scheme
from dedup_hbase.jobs.local.groups import assign
from dedup_hbase.jobs.options import GroupsOptions
from dedup_hbase.text.boilerplate import body_text
from dedup_hbase.text.fingerprint import make_fingerprinter
from dedup_hbase.text.signatures import Signatures

K = 3
SIGNED = Signatures.parse("body,lead150")


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted_tuples(seed: int) -> list[tuple[int, int]]:
    """(body, lead) simhashes: randoms; exact copies; under each signature a pair at exactly k
    and one at k + 1 bits (the other signature far); chains a - b (body) - c (lead), c far from
    a under both; one body under several leads and one lead under several bodies; shuffled."""
    rnd = random.Random(seed)
    r = rnd.getrandbits
    out = [(r(64), r(64)) for _ in range(1200)]
    for _ in range(40):
        out += [(r(64), r(64))] * rnd.randint(2, 5)
    for _ in range(40):
        a = (r(64), r(64))
        out += [a, (flip(a[0], K, rnd), flip(a[1], 20, rnd)), (flip(a[0], K + 1, rnd), flip(a[1], 24, rnd))]
        b = (r(64), r(64))
        out += [b, (flip(b[0], 20, rnd), flip(b[1], K, rnd)), (flip(b[0], 24, rnd), flip(b[1], K + 1, rnd))]
        c = (r(64), r(64))
        middle = (flip(c[0], 2, rnd), flip(c[1], 25, rnd))
        out += [c, middle, (flip(middle[0], 25, rnd), flip(middle[1], 1, rnd))]
        d = (r(64), r(64))  # both near: the nearer signature is named (the body on a tie)
        out += [d, (flip(d[0], rnd.randint(0, K), rnd), flip(d[1], rnd.randint(0, K), rnd))]
    for _ in range(10):
        body, lead = r(64), r(64)
        out += [(body, r(64)) for _ in range(6)] + [(r(64), lead) for _ in range(6)]
    rnd.shuffle(out)
    return out


def near_rows(columns: np.ndarray, k: int):
    """(a, b, distances) for every a < b of ``columns`` (rows of simhashes) near under any one."""
    for a in range(len(columns)):
        distances = np.bitwise_count(columns[a + 1:] ^ columns[a])
        for offset in np.flatnonzero((distances <= k).any(axis=1)):
            yield a, a + 1 + int(offset), [int(d) for d in distances[offset]]


def brute(fps: list[tuple[int, ...]], k: int = K) -> list[tuple[int, int | None, int | None, int | None]]:
    """Per position: (its group's first position, via, distance, signature place) as
    outputs.py defines them, the slow way. The groups: every pair of documents near under any
    signature, by XOR, and their components. The vias: the tree's graph built pair by pair in
    plain Python (the nodes: the distinct tuples in order of first position; per signature each
    node to the first node of its fingerprint and the first nodes of near fingerprints to each
    other, at the least (distance, place)), a breadth-first tree per group from the kept node,
    a node's parent the least (weight, first position) among its neighbours one hop nearer."""
    first: dict[tuple, int] = {}
    for position, f in enumerate(fps):
        first.setdefault(f, position)
    unique = sorted(first, key=first.get)
    index_of = {f: i for i, f in enumerate(unique)}
    columns = np.array(unique, dtype=np.uint64).reshape(len(unique), -1)
    root = list(range(len(unique)))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for a, b, _ in near_rows(columns, k):
        ra, rb = find(a), find(b)
        root[max(ra, rb)] = min(ra, rb)
    near: dict[int, dict[int, tuple[int, int]]] = {i: {} for i in range(len(unique))}

    def join(a: int, b: int, weight: tuple[int, int]) -> None:
        if a != b and weight < near[a].get(b, (99, 99)):
            near[a][b] = near[b][a] = weight

    for place in range(columns.shape[1]):
        head: dict[int, int] = {}
        for i, f in enumerate(unique):
            join(i, head.setdefault(f[place], i), (0, place))
        heads = list(head.values())
        for a, b, (d,) in near_rows(columns[heads, place:place + 1], k):
            join(heads[a], heads[b], (d, place))
    parent: list = [None] * len(unique)
    for top in (i for i in range(len(unique)) if find(i) == i):
        level, queue = {top: 0}, deque([top])
        while queue:
            u = queue.popleft()
            for w in near[u]:
                if w not in level:
                    level[w] = level[u] + 1
                    queue.append(w)
        assert {find(w) for w in level} == {top} and len(level) == sum(find(i) == top for i in range(len(unique)))
        for w, depth in level.items():
            if depth:
                parent[w] = min((near[w][p], p) for p in near[w] if level[p] == depth - 1)
    out = []
    for position, f in enumerate(fps):
        node = index_of[f]
        kept = first[unique[find(node)]]
        if first[f] != position:
            out.append((kept, first[f], 0, 0))
        elif parent[node] is None:
            out.append((kept, None, None, None))
        else:
            (distance, place), p = parent[node]
            out.append((kept, first[unique[p]], distance, place))
    return out


def check_vias(fps: list[tuple[int, ...]], got: list) -> None:
    """What a user reads from a via: a member of the group, within k bits of the document under
    the signature named, at the distance given; following vias reaches the kept one."""
    for i, (group, via, distance, place) in enumerate(got):
        if via is None:
            assert group == i
            continue
        assert got[via][0] == group and (fps[i][place] ^ fps[via][place]).bit_count() == distance <= K
        at, steps = i, 0
        while got[at][1] is not None:
            at, steps = got[at][1], steps + 1
            assert steps <= len(got)
        assert at == group


def assigned(fps: list[tuple[int, ...]], scheme: str = "4"):
    columns = np.array(fps, dtype=np.uint64).reshape(len(fps), -1)
    more = columns[:, 1:] if columns.shape[1] > 1 else None
    group, via, distance, place = assign(np.ascontiguousarray(columns[:, 0]), Scheme.parse(scheme), K, more)
    return [(int(g), None if v < 0 else int(v), None if v < 0 else int(d), None if v < 0 else int(p))
            for g, v, d, p in zip(group, via, distance, place)]


@pytest.mark.parametrize("scheme", ["4", "5"])
def test_planted_assignment_equals_brute_force_over_every_signature(scheme):
    fps = planted_tuples(11)
    expected = brute(fps)
    check_vias(fps, expected)
    assert assigned(fps, scheme) == expected
    named = {p for _, v, _, p in expected if v is not None}
    assert named == {0, 1}
    # what is planted is found: a lead at exactly k joins, at k + 1 (body far) does not
    chains = sum(1 for _, v, d, p in expected if p == 1 and d and d <= K)
    assert chains >= 80


def test_one_signature_is_the_body_alone():
    fps = [f[0] for f in planted_tuples(12)]
    got = assigned([(f,) for f in fps])
    assert got == brute([(f,) for f in fps])
    assert {p for _, v, _, p in got if v is not None} == {0}


def test_copies_under_both_signatures_cost_memory_in_proportion():
    """100,000 copies of one page (body and lead) and 100,000 of its body under as many leads:
    every copy via the first at distance 0, the body named; the peak memory under 1 KB a
    document (tracemalloc sees numpy's allocations)."""
    import tracemalloc

    n, page, lead = 100_000, 0x0123456789ABCDEF, 0x0FEDCBA987654321
    rnd = np.random.default_rng(5)
    body = np.full(2 * n, page, dtype=np.uint64)
    more = np.concatenate([np.full(n, lead, np.uint64), rnd.integers(0, 2**63, n, dtype=np.uint64)]).reshape(2 * n, 1)
    tracemalloc.start()
    try:
        group, via, distance, place = assign(body, Scheme.parse("4"), K, more)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (group == 0).all() and via[0] == -1
    assert (via[1:n] == 0).all() and (distance[1:n] == 0).all() and (place[1:] == 0).all()
    assert (distance[n:] == 0).all()  # each new lead's first copy joins through the body
    assert peak < 1024 * 2 * n, f"{peak / (2 * n):.0f} bytes a document"


@pytest.fixture(scope="module")
def news(tmp_path_factory, xwlb_path):
    """400 news texts and planted copies: 60 cut to their first half (the lead finds them),
    30 exact copies, 30 halves of those halves (a chain through the lead); the expected rows
    from a brute force over both signatures, fingerprinted from the library's parts."""
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(400), f)]
    rnd = random.Random(21)
    halves = [texts[i][:len(texts[i]) // 2] for i in rnd.sample(range(400), 60)]
    docs = texts + halves + [texts[i] for i in rnd.sample(range(400), 30)] + [h[:len(h) // 2] for h in halves[:30]]
    rnd.shuffle(docs)
    path = tmp_path_factory.mktemp("news") / "news.jsonl"
    path.write_text("".join(json.dumps({"id": f"n{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(docs)), encoding="utf-8")
    fingerprinter = make_fingerprinter()
    fps = [(fingerprinter.fingerprint(t), fingerprinter.fingerprint(body_text(t, join=False)[:150])) for t in docs]
    return path, fps, brute(fps)


def check_news(report, out: Path, news) -> None:
    path, fps, expected = news
    check_vias(fps, expected)
    rows = parquet_rows(out)
    assert report.documents == len(fps) == len(rows) and report.signatures == "body,lead150"
    names = SIGNED.names
    want = [{"group": f"n{g}", "via": None if v is None else f"n{v}", "distance": d,
             "signature": None if p is None else names[p]} for g, v, d, p in expected]
    assert [{k: r[k] for k in ("group", "via", "distance", "signature")} for r in rows] == want
    assert sum(1 for _, v, _, p in expected if p == 1) >= 30  # halves found by their lead alone (37)
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text(encoding="utf-8").splitlines()]
    assert dropped == [{"id": r["id"], **{k: r[k] for k in ("group", "via", "distance", "signature")}}
                       for r in rows if not r["keep"]]


def test_news_local_equals_brute_force(news, tmp_path):
    report = local_groups([news[0]], tmp_path / "out", GroupsOptions(signatures=SIGNED, workers=2))
    check_news(report, tmp_path / "out", news)


def test_precomputed_fingerprints_refused_with_signatures():
    with pytest.raises(InvalidInput, match="groups with signatures body,lead150 fingerprints the texts themselves: "
                                           r"precomputed fingerprints \(fingerprints=True\) carry the body's simhash alone"):
        GroupsOptions(fingerprints=True, signatures=SIGNED)


def test_cli_names_the_signatures(news, tmp_path):
    from typer.testing import CliRunner

    from dedup_hbase.cli.commands import app

    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(app, ["groups", str(news[0]), "--signatures", "body,lead150", "--out", str(out), "--workers", "1"])
    assert done.exit_code == 0, done.output
    assert "k=3, scheme 4, signatures body,lead150, short texts near only by their words, local engine" in done.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["signatures"] == "body,lead150"
    lines = [json.loads(line) for line in (out / "dropped.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {tuple(line) for line in lines} == {("id", "group", "via", "distance", "signature")}
    assert {line["signature"] for line in lines} == {"body", "lead150"}
    refused = runner.invoke(app, ["groups", str(news[0]), "--signatures", "body,tail9", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == ("error: unknown signature 'tail9': body, or leadN for the body's first N "
                                      "characters (1 <= N <= 999999), such as lead150")
    plain = runner.invoke(app, ["groups", str(news[0]), "--out", str(tmp_path / "plain"), "--json", "--workers", "1"])
    assert "signatures" not in json.loads(plain.stdout)
    assert {tuple(json.loads(line)) for line in (tmp_path / "plain" / "dropped.jsonl").read_text().splitlines()} \
        == {("id", "group", "via", "distance")}
