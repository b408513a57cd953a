"""The embedded store on a disk that fills up, and on a read-only mount, with real processes on a
real small tmpfs (mounting one needs root).

A full disk in the middle of a load and when the store is closed is one line and status 1, never a
traceback; the store opens and answers while the disk is full; after space is freed the same
command gives a clean run's counts. A store on a read-only mount answers stats, query and check,
and refuses writes in one line."""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_or_skip

_RANDOM = random.Random(3535)
DOCS = [{"id": f"d{i:05d}", "text": "".join(chr(_RANDOM.randrange(0x4E00, 0x4E00 + 3000))
                                             for _ in range(_RANDOM.randrange(40, 400)))} for i in range(6000)]
LINES = [json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS]
# the byte budgets below were measured for these cells: without the short-text rule, whose kept
# texts would make each short document's cells larger (docs/quality.md)
INIT = ("--featurizer", "shingles", "--short-texts", "off")


class Disk(type(Path())):
    """A folder on a tmpfs of its own."""

    def remount(self, option: str) -> None:
        """Mount it again with ``option``: ``size=64m``, ``ro``."""
        subprocess.run(["mount", "-o", f"remount,{option}", str(self)], check=True)


@pytest.fixture
def tmpfs(tmp_path):
    """A folder on a 64 MB tmpfs of its own, unmounted after."""
    if os.geteuid() != 0:
        require_or_skip("mounting a tmpfs needs root")
    folder = Disk(tmp_path / "disk")
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)], check=True)
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def dedup(*args, store, stdin=None, **kw):
    return subprocess.run([sys.executable, "-m", "dedup_hbase", *args, "--store", str(store)], capture_output=True,
                          text=True, input=stdin, **kw)


def counts(store) -> dict:
    result = dedup("stats", "--json", store=store)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    return {key: stats[key] for key in ("documents", "index_rows", "index_cells", "rows_per_flag")}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The counts of a clean load of DOCS, and its input file."""
    folder = tmp_path_factory.mktemp("clean")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(LINES), encoding="utf-8")
    assert dedup("init", *INIT, store=folder / "idx").returncode == 0
    assert dedup("load", str(corpus), "-q", store=folder / "idx").returncode == 0
    return counts(folder / "idx"), corpus


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` but ``leave`` bytes with a file of zeros; returns the file."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def one_error_line(stderr: str) -> str:
    """The one line a failed command printed (no traceback), after any summary line."""
    lines = [line for line in stderr.splitlines() if not line.startswith(("progress: ", "read "))]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_disk_full_in_the_middle_of_a_load(tmpfs, clean):
    expected, corpus = clean
    store = tmpfs / "idx"
    assert dedup("init", *INIT, store=store).returncode == 0
    filler = fill(tmpfs, leave=256 << 10)  # the load's write-ahead log needs about 1.4 MB
    failed = dedup("load", str(corpus), "--batch-size", "500", store=store)
    assert failed.returncode == 1
    assert one_error_line(failed.stderr).startswith(f"error: {store}: the disk is full (")
    assert one_error_line(failed.stderr).endswith(": free space on it and run the same command again (what was "
                                                  "written is kept; a load resumes after its last checkpoint)")
    assert "Traceback" not in failed.stderr
    full = counts(store)  # the store opens and answers while the disk is still full
    assert full["documents"] < len(DOCS)
    check = dedup("check", str(corpus), "--json", store=store)
    assert check.returncode == 0, check.stderr
    assert sum(bool(json.loads(a)["matches"]) for a in check.stdout.splitlines()) >= full["documents"]

    filler.unlink()
    resumed = dedup("load", str(corpus), "--batch-size", "500", store=store)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith("resumed after ")
    assert counts(store) == expected


def test_a_disk_full_when_the_store_closes(tmpfs, clean):
    expected, corpus = clean
    store = tmpfs / "idx"
    assert dedup("init", *INIT, store=store).returncode == 0
    # room for every batch (their write-ahead log: about 1.4 MB), not for the merge and flush at
    # close (measured: 1.5 to 2.5 MB free fail there)
    filler = fill(tmpfs, leave=1900 << 10)
    load = dedup("load", str(corpus), store=store)
    assert load.returncode == 1
    (error,) = load.stderr.splitlines()  # no summary: the load's work ends with the close, which failed
    assert error.startswith(f"error: {store}: the disk is full (IO error: ")
    assert counts(store) == expected  # while the disk is full: every document is there

    filler.unlink()
    assert counts(store) == expected
    again = dedup("load", str(corpus), store=store)
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(f"already loaded (read {len(DOCS)}, indexed {len(DOCS)}): nothing to do")
    assert dedup("load", str(corpus), "--restart", "-q", store=store).returncode == 0
    assert counts(store) == expected


def test_a_store_on_a_read_only_mount_is_read(tmpfs, clean):
    expected, corpus = clean
    store = tmpfs / "idx"
    assert dedup("init", *INIT, store=store).returncode == 0
    assert dedup("load", str(corpus), "-q", store=store).returncode == 0
    tmpfs.remount("ro")
    before = sorted(p.name for p in store.iterdir())
    assert counts(store) == expected
    query = dedup("query", DOCS[7]["text"], "--json", store=store)
    assert query.returncode == 0, query.stderr
    assert {"id": DOCS[7]["id"], "distance": 0} in [{k: m[k] for k in ("id", "distance")}
                                                   for m in json.loads(query.stdout)["matches"]]
    check = dedup("check", str(corpus), "--json", store=store)
    assert check.returncode == 0, check.stderr
    answers = [json.loads(a) for a in check.stdout.splitlines()]
    assert len(answers) == len(DOCS) and all(
        {"id": a["id"], "simhash": a["simhash"], "distance": 0} in a["matches"] for a in answers)
    for args in (["load", str(corpus), "--restart"], ["delete", DOCS[0]["id"]]):
        refused = dedup(*args, store=store)
        assert refused.returncode == 1
        assert one_error_line(refused.stderr) == (
            f"error: {store} cannot be written here (Read-only file system (os error 30)): stats, query and check "
            "read it as it is; init, load, delete and serve need it writable")
    assert sorted(p.name for p in store.iterdir()) == before
    assert not [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("dedup-hbase-read-*")
                if p.stat().st_mtime > time.time() - 60]  # the read-only opens' link folders are gone
