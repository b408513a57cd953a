"""scripts/bench groups: its check of a groups output against brute force, its synthetic
fingerprints, and its measurement of a process tree (orphans included)."""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa  # a dependency of dedup-hbase (groups writes Parquet): never skipped
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from benchmarks.groups import brute_force_check, write_fingerprints  # noqa: E402
from benchmarks.measured import measure  # noqa: E402

# a - b - c a chain (a and c 4 bits apart, each 2 from b), d 4 bits from a (apart), e a copy of d
A = 0x0123456789ABCDEF
ROWS = [("a", A), ("b", A ^ 0b11), ("c", A ^ 0b1111), ("d", A ^ (0b1111 << 40)), ("e", A ^ (0b1111 << 40))]
RIGHT = {"a": ("a", 3, True), "b": ("a", 3, False), "c": ("a", 3, False), "d": ("d", 2, True), "e": ("d", 2, False)}


def write(folder: Path, assign: dict) -> Path:
    (folder / "documents").mkdir(parents=True)
    for part, rows in enumerate((ROWS[:2], ROWS[2:])):  # two files, read as one data set
        pq.write_table(pa.table({"id": [i for i, _ in rows], "simhash": [f"{v:016x}" for _, v in rows],
                                 "group": [assign[i][0] for i, _ in rows], "size": [assign[i][1] for i, _ in rows],
                                 "keep": [assign[i][2] for i, _ in rows]}),
                       folder / "documents" / f"part-{part}.parquet")
    return folder


def test_brute_force_check_accepts_the_right_groups(tmp_path):
    assert brute_force_check(write(tmp_path, RIGHT)) is None


@pytest.mark.parametrize("change, message", [
    ({"c": ("c", 1, True), "a": ("a", 2, True), "b": ("a", 2, False)}, "groups differ from brute force"),
    ({"b": ("a", 3, True)}, "without exactly one kept"),
    ({"e": ("d", 3, False)}, "size column"),
])
def test_brute_force_check_names_what_is_wrong(tmp_path, change, message):
    assert message in brute_force_check(write(tmp_path, {**RIGHT, **change}))


def test_synthetic_fingerprints(tmp_path):
    info = write_fingerprints(tmp_path / "fp", 20_000, seed=3)
    records = [json.loads(line) for p in sorted((tmp_path / "fp").glob("part-*.jsonl")) for line in p.open()]
    assert [r["id"] for r in records] == [f"d{i}" for i in range(20_000)]
    values = np.array([int(r["simhash"], 16) for r in records], dtype=np.uint64)
    assert info == {"n": 20_000, "planted": 2_000, "copies": 200}
    assert np.unique(values, return_counts=True)[1].max() >= 200  # the exact-copy cluster
    near = [int(np.bitwise_count(values[:18_000] ^ v).min()) for v in values[18_000:18_100]]
    assert max(near) <= 3  # the planted tail: each within 3 bits of an earlier one


def test_measure_counts_an_orphaned_grandchild(tmp_path):
    """The child exits at once; its child (reparented to the measuring parent) holds 300 MB:
    its peak RSS is counted, so the measurement waited for it."""
    grandchild = "x = bytearray(300 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
    child = f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
    result = measure([sys.executable, "-c", child], tmp_path)
    assert result["code"] == 0
    assert result["max_rss_mb"] >= 300
