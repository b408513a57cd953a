"""The long-lived processes a test process starts once and shares among its tests: the Spark
session (``SharedSpark``) and the HBase of the tests that stop, restart or freeze its processes
(``OwnHBase``). conftest.py's fixtures hold one of each per test process, started when a test
first asks and stopped when no later test needs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path


class StartFailed(Exception):
    """A process the tests need did not start (the message says why)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signal_process(folder: Path, name: str, number: int) -> None:
    """``number`` sent to scripts/hbase-local's process ``name`` in ``folder`` (its PID file),
    if it runs."""
    try:
        os.kill(int((folder / "pids" / f"{name}.pid").read_text()), number)
    except (OSError, ValueError):
        pass


class OwnHBase:
    """An HBase of its own (scripts/hbase-local in a folder of its own, on free ports) for the
    tests that stop, restart or freeze its processes: started when a test first asks for it,
    stopped once the last of those tests is done (conftest.py's ``pytest_runtest_teardown``: its
    three JVMs would otherwise idle to the end of the run, about 1.5 CPU s a minute) or,
    whatever happened, at the session's end. The HBase the other tests share (``hbase_url``) is
    never touched, so they can run side by side in every test process. Its tests run in one
    process, one at a time (the group ``own-hbase``)."""

    def __init__(self, launcher: Path, tmp_path_factory):
        self.launcher = launcher
        self.tmp_path_factory = tmp_path_factory
        self.started = None  # (URL, the launcher's environment, its folder)

    def get(self) -> tuple[str, dict[str, str], Path]:
        """(its URL, the launcher's environment, its folder), started if it is not running;
        ``StartFailed`` if it does not start."""
        if self.started is None:
            folder = self.tmp_path_factory.mktemp("own-hbase")
            zk, thrift, thrift2 = free_port(), free_port(), free_port()
            env = {**os.environ, "DEDUP_HBASE_LOCAL_DIR": str(folder), "DEDUP_HBASE_ZK_PORT": str(zk),
                   "DEDUP_HBASE_THRIFT_PORT": str(thrift), "DEDUP_HBASE_THRIFT2_PORT": str(thrift2),
                   "DEDUP_HBASE_MASTER_HEAP": "1g", "DEDUP_HBASE_THRIFT_HEAP": "512m", "DEDUP_HBASE_THRIFT2_HEAP": "512m",
                   "DEDUP_HBASE_PYTHON": os.environ.get("DEDUP_HBASE_PYTHON", sys.executable)}
            self.started = (f"hbase://127.0.0.1:{thrift}/?admin_port={thrift2}&zk=127.0.0.1:{zk}", env, folder)
            done = subprocess.run([str(self.launcher), "start"], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                self.stop()
                raise StartFailed(f"scripts/hbase-local could not start an HBase of the test's own:\n{done.stdout}\n"
                                  f"{done.stderr}")
        return self.started

    def stop(self) -> None:
        """Stopped (a frozen process thawed first), if it runs."""
        if self.started is not None:
            _, env, folder = self.started
            self.started = None
            for name in ("master", "thrift", "thrift2"):  # a frozen process would not stop
                signal_process(folder, name, signal.SIGCONT)
            subprocess.run([str(self.launcher), "stop"], env=env, capture_output=True)


class SharedSpark:
    """One SparkSession per test process (local[2], the jvm/ helper's jars), made when a test
    first asks for it; a test that must start sessions of its own stops it first
    (``no_shared_spark``: PySpark holds one SparkContext per process) and the next test that asks
    gets a new one."""

    def __init__(self):
        self.session = None

    def get(self):
        if self.session is None:
            from dedup_hbase.jobs.spark.session import helper_jars, make_session

            # a heap of 3 GiB, not a job's quarter of the RAM: a process keeps its session to its end,
            # beside the others' and the clusters' JVMs; the settings of a small job (session.py:
            # C1 only, no adaptive execution, a shuffle in two partitions): a test's jobs are small,
            # and these spend 20% less CPU on test_groups' and test_spark_check's Spark tests
            self.session = make_session("local[2]", {"spark.driver.memory": "3g"}, helper_jars(), small=True)
        return self.session

    def stop(self):
        """The session stopped and its JVM ended (session.stop; PySpark's own stop leaves the JVM
        running, and the next session of the process would be made in it, with its options:
        a test of a JVM option, such as the class archive's, would test the old JVM's)."""
        if self.session is not None:
            from dedup_hbase.jobs.spark.session import stop

            stop(self.session)
            self.session = None
