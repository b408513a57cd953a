"""scripts/cluster-local's commands that need no running cluster: which roles a cluster of each
kind has (`start --yarn`: YARN in place of Spark standalone) and what it refuses, in one line.
The clusters themselves run in tests/test_cluster.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "cluster-local"


def cluster_local(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEDUP_HBASE_CLUSTER")}
    env["DEDUP_HBASE_CLUSTER_DIR"] = str(run_dir)
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def stopped_cluster(run_dir: Path, kind: str | None) -> Path:
    """The files a stopped cluster leaves (its base port, cluster.env and, since start --yarn,
    the kind of its Spark); no process runs."""
    run_dir.mkdir()
    (run_dir / "base-port").write_text("24000\n")
    (run_dir / "cluster.env").write_text("SPARK_MASTER='yarn'\n")
    if kind is not None:
        (run_dir / "spark-on").write_text(kind + "\n")
    return run_dir


def test_start_takes_only_yarn():
    done = cluster_local(Path("/nonexistent/cluster"), "start", "--yarm")
    assert (done.returncode, done.stderr) == (1, "cluster-local: usage: scripts/cluster-local start [--yarn]\n")


def test_a_yarn_cluster_has_yarn_in_place_of_standalone(tmp_path):
    done = cluster_local(stopped_cluster(tmp_path / "c", "yarn"), "status")
    assert done.returncode == 3, done.stderr
    assert [line.split(" dead")[0].strip() for line in done.stdout.splitlines() if " dead " in line] == [
        "zookeeper", "namenode", "datanode 1", "datanode 2", "master", "regionserver 1", "regionserver 2", "thrift",
        "thrift2", "resourcemanager", "nodemanager 1", "nodemanager 2"]


def test_a_cluster_from_before_start_yarn_is_standalone(tmp_path):
    done = cluster_local(stopped_cluster(tmp_path / "c", None), "status")
    assert [line.split(" dead")[0].strip() for line in done.stdout.splitlines() if " dead " in line][-3:] == [
        "spark-master", "worker 1", "worker 2"]


def test_a_yarn_cluster_refuses_yarn_stop_and_spark_connect_in_one_line(tmp_path):
    run_dir = stopped_cluster(tmp_path / "c", "yarn")
    stop = cluster_local(run_dir, "yarn", "stop")
    assert (stop.returncode, stop.stderr) == (1, "cluster-local: YARN is this cluster's Spark (start --yarn): "
                                                 "scripts/cluster-local stop stops it with the rest\n")
    connect = cluster_local(run_dir, "connect", "start")
    assert (connect.returncode, connect.stderr) == (1, "cluster-local: Spark Connect runs beside the standalone "
                                                       "Spark master: start the cluster without --yarn\n")
