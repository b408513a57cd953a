"""scripts/cluster-dir: the cluster tests' folder, one the role users can reach (scripts/test
uses it when the checkout sits in a folder others cannot traverse)."""

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "cluster-dir"


def choose(wanted: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), str(wanted)], capture_output=True, text=True, check=True,
                          env={**os.environ, "TMPDIR": "/tmp"})


def test_a_checkout_in_a_closed_folder_gets_a_reachable_cluster_folder():
    closed = Path(tempfile.mkdtemp(prefix="dedup-closed-"))  # mode 700, as mktemp -d makes it
    try:
        assert stat.S_IMODE(closed.stat().st_mode) == 0o700
        wanted = closed / "repo" / ".cluster-test"
        got = choose(wanted)
        chosen = Path(got.stdout.strip())
        assert chosen.parent == Path("/tmp") and chosen.name.startswith(f"dedup-hbase-cluster-test-{os.getuid()}-")
        assert chosen.is_dir() and stat.S_IMODE(chosen.stat().st_mode) == 0o755
        assert got.stderr == (f"cluster tests: {closed} is not traversable by other users (o+x), so the cluster runs "
                              f"in {chosen} (set DEDUP_HBASE_TEST_CLUSTER_DIR to choose)\n")
        assert choose(wanted).stdout == got.stdout  # the same checkout, the same folder
        shutil.rmtree(chosen)
    finally:
        shutil.rmtree(closed)


def test_a_reachable_checkout_keeps_its_own_folder():
    open_dir = Path(tempfile.mkdtemp(prefix="dedup-open-"))
    try:
        open_dir.chmod(0o755)
        wanted = open_dir / "repo" / ".cluster-test"
        got = choose(wanted)
        assert (got.stdout, got.stderr) == (f"{wanted}\n", "")
    finally:
        shutil.rmtree(open_dir)
