"""scripts/bench scale: its planted structure, its brute force and its checks of a check and a
groups output, at N = 10^4 (no dedup-hbase command runs here: the bench runs them)."""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from benchmarks.scale import K, check_groups, components, make_queries, plant  # noqa: E402
from benchmarks.scale_truth import brute_force, candidates_per_lookup, check_answers  # noqa: E402

N = 10_000


def test_plant_is_seeded_and_brute_force_finds_exactly_the_planted_structure():
    p = plant(N, 7)
    assert np.array_equal(p.fps, plant(N, 7).fps)
    assert p.counts == {"near_copies": 100, "pairs_at_k": 10, "pairs_at_k_plus_1": 10, "cluster": 100}
    # every fingerprint against all N: the pairs within K bits are the planted edges' closure
    found = brute_force(p.fps, p.fps, K)
    pairs = {(i, j) for i, near in enumerate(found) for j in near if i < j}
    roots = components(p.edges)
    by_root: dict[int, list[int]] = {}
    for doc, root in roots.items():
        by_root.setdefault(root, []).append(doc)
    assert {frozenset(c) for c in by_root.values()} == {frozenset(c) for c in
                                                        _components_of(pairs, N) if len(c) > 1}
    for a, b in p.far_pairs.tolist():  # the pairs at K + 1 bits: exactly that far, near to nothing
        assert int(p.fps[a] ^ p.fps[b]).bit_count() == K + 1
        assert found[a] == {a: 0} and found[b] == {b: 0}
    a, b = p.edges[-len(p.edges) // 2].tolist()  # a planted near pair is at 1..K bits
    assert int(p.fps[a] ^ p.fps[b]).bit_count() <= K


def _components_of(pairs: set, n: int) -> list[set]:
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    out: dict[int, set] = {}
    for x in range(n):
        out.setdefault(find(x), set()).add(x)
    return list(out.values())


def write_groups(folder: Path, group_of: list[str]) -> Path:
    (folder / "documents").mkdir(parents=True)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(group_of))], "group": group_of}),
                   folder / "documents" / "part-0.parquet")
    return folder


def planted_groups(p) -> list[str]:
    roots = components(p.edges)
    return [f"d{roots.get(i, i)}" for i in range(p.fps.size)]


def test_check_groups_accepts_the_planted_groups_and_rejects_a_split_or_a_far_pair(tmp_path):
    p = plant(N, 7)
    right = planted_groups(p)
    assert check_groups(write_groups(tmp_path / "right", right), p) == (None, 0)
    split = list(right)
    a, b = p.edges[0].tolist()
    split[a] = "elsewhere"
    assert "split" in check_groups(write_groups(tmp_path / "split", split), p)[0]
    far = list(right)
    a, b = p.far_pairs[0].tolist()
    far[b] = far[a]
    assert "not connected" in check_groups(write_groups(tmp_path / "far", far), p)[0]


def test_check_answers_against_brute_force(tmp_path):
    p = plant(N, 7)
    qs = make_queries(p, 200, 7)
    truth = brute_force(p.fps, qs[::10], K)
    assert sum(map(len, truth)) >= 10  # the near half finds something

    def write(answers):
        path = tmp_path / "stdout"
        path.write_text("".join(json.dumps(a) + "\n" for a in answers))
        return path

    def answer(q, near):
        return {"id": f"q{q}", "matches": [{"id": f"d{i}", "distance": d} for i, d in sorted(near.items())]}

    right = [answer(q, truth[q // 10] if q % 10 == 0 else {}) for q in range(200)]
    assert check_answers(write(right), truth, 10, K) is None
    q = next(i for i, t in enumerate(truth) if t)
    wrong = list(right)
    wrong[q * 10] = answer(q * 10, {})
    assert "matches, brute force" in check_answers(write(wrong), truth, 10, K)


@pytest.mark.parametrize("scheme", ["4", "5"])
def test_candidates_are_the_rows_the_lookups_prefix_scans_read(scheme):
    """The count against the index's own rows: every query's scan prefixes, each matched against
    every indexed fingerprint's, one by one (the planted copies read once per flag they share)."""
    from dedup_hbase.index.layout import Scheme

    p = plant(2_000, 7)
    qs = make_queries(p, 50, 7)
    s = Scheme.parse(scheme)
    rows = s.prefix_ids(p.fps)
    want = sum(int((rows[:, f] == prefix).sum()) for q in s.prefix_ids(qs) for f, prefix in enumerate(q))
    assert candidates_per_lookup(p.fps, qs, scheme) == want / 50
    assert want >= 25  # each near query (half: at most K bits off an indexed one) meets it in a flag at least


def test_the_scale_bench_runs_at_1e5_and_every_answer_is_exact(tmp_path):
    """The smoke run of ``scripts/bench scale`` (issue 43: it cannot rot): N = 10^5, 10^4 check
    queries of which 10^3 against the brute force (through ``check`` and through ``serve``, then a
    second of single lookups under the load generator), both schemes; the whole commands run, and
    every sampled answer and the groups equal the planted structure (a wrong one fails the run)."""
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench"), "scale", "--sizes", "1e5",
                           "--scale-queries", "1e4", "--scale-sampled", "1e3", "--scale-dir", str(tmp_path / "data"),
                           "--scale-serve", "1", "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads((tmp_path / "out" / "results.json").read_text())["scale"]["results"]
    p = plant(100_000, 7)
    planted_groups, queries = len(set(components(p.edges).values())), make_queries(p, 10_000, 7)
    assert (result["n"], result["picked"], sorted(result["schemes"])) == (100_000, "4", ["4", "5"])
    for scheme, r in result["schemes"].items():
        assert (r["load"]["summary"]["indexed"], r["check"]["exact"], r["check"]["sampled"]) == (100_000, True, 1000)
        assert (r["groups"]["exact"], r["groups"]["summary"]["multi_groups"]) == (True, planted_groups), scheme
        assert r["check"]["candidates"] == candidates_per_lookup(p.fps, queries, scheme) > 1  # of all 10^4 queries
        # the sampled answers through the service too, then a second of single lookups, none refused
        assert (r["serve"]["wrong"], r["serve"]["sampled"], r["serve"]["errors"]) == (None, 1000, 0), scheme
        assert r["serve"]["requests"] > 0 and r["serve"]["p99_us"] >= r["serve"]["p50_us"] > 0
    assert "| load: wall s | 4 |" in (tmp_path / "out" / "bench.md").read_text()
    assert "| check: candidates a lookup (cells read) | 5 |" in (tmp_path / "out" / "bench.md").read_text()


def test_scale_schemes_runs_the_schemes_named_and_refuses_others(tmp_path):
    """``--scale-schemes 5`` (a 10^8 run of one scheme): the results hold that scheme alone, still
    exact; a scheme that is not 4 or 5 fails the run, saying so."""
    import subprocess

    def bench(schemes: str, out: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "scripts" / "bench"), "scale", "--sizes", "1e4",
                               "--scale-schemes", schemes, "--scale-queries", "1e3", "--scale-sampled", "1e2",
                               "--scale-dir", str(tmp_path / "data"), "--scale-serve", "0", "--out", str(tmp_path / out)],
                              capture_output=True, text=True, timeout=600)

    done = bench("5", "five")
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads((tmp_path / "five" / "results.json").read_text())["scale"]["results"]
    assert sorted(result["schemes"]) == ["5"]
    assert (result["schemes"]["5"]["check"]["exact"], result["schemes"]["5"]["groups"]["exact"]) == (True, True)
    done = bench("6", "six")
    assert done.returncode != 0 and "--scale-schemes 6: the schemes are 4 and 5" in done.stdout + done.stderr
