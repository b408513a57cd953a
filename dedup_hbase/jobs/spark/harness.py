"""What every Spark job does around its own work, written once for ``load``, ``check`` and
``groups``: its SparkSession started and stopped (or a caller's borrowed and left running),
its steps timed in the log, SIGINT and SIGTERM turned into ``Interrupted``, and the frames it
persisted unpersisted.

    with spark_job("dedup-hbase groups", spark, paths, jars=True, session=None,
                   then="run the same command again (...)") as job:
        records = job.persist(...)
        job.clock("a step")
    report.elapsed_s = job.elapsed()

Steps are logged at INFO (logger ``dedup_hbase.jobs.spark.harness``): a step's name and its
seconds since the step before.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

from ...errors import DedupError
from ..interrupts import STOPS, Interrupted
from ..options import SparkOptions, is_uri
from . import files, inputs
from .connect import connect_session
from .hfiles import check_helper
from .session import ARROW_BATCHES, helper_jars, make_session, small_job_conf
from .session import stop as stop_session
from .ship import executor_pythons, ship_settings, ship_to_connect, use_shipped_python

logger = logging.getLogger(__name__)
SMALL_INPUT = 16 << 20  # input bytes of a small job: few shuffle partitions (fit_to_input); local: C1 only too


class SparkJob:
    """One running job: its ``session``, its ``clock`` and the frames it persisted."""

    def __init__(self, session) -> None:
        self.session = session
        self.started = self.last = time.perf_counter()
        self.persisted: list = []
        self._parallelism: int | None = None

    @property
    def parallelism(self) -> int:
        """The session's task slots (Spark's default parallelism), found once per job."""
        if self._parallelism is None:
            self._parallelism = default_parallelism(self.session)
        return self._parallelism

    def clock(self, step: str) -> None:
        """Log ``step`` with the seconds since the step before."""
        now = time.perf_counter()
        logger.info("%-28s %7.2f s", step, now - self.last)
        self.last = now

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def persist(self, frame):
        """``frame`` persisted (memory, then disk) until ``unpersist`` or the job's end."""
        from pyspark import StorageLevel

        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(frame)
        return frame

    def unpersist(self, *frames) -> None:
        for frame in frames:
            frame.unpersist()
            self.persisted = [f for f in self.persisted if f is not frame]


class SparkJobFailed(RuntimeError):
    """A job's own failure (an ``AnalysisException``, a task that failed four times ...), with
    its message and traceback taken while its session still runs: PySpark's exceptions read
    their message from the session's JVM, which is gone once ``spark_job`` has stopped it
    (printed then as ``<exception str() failed>``)."""

    def __init__(self, failed: Exception) -> None:
        try:
            message = str(failed)
        except Exception:  # the JVM gone already
            message = getattr(failed, "_desc", None) or "(no message)"
        super().__init__(f"{type(failed).__name__}: {message}")
        self.with_traceback(failed.__traceback__)


def default_parallelism(spark) -> int:
    """Spark's default parallelism through the DataFrame API alone (Spark Connect has no
    SparkContext): ``spark.default.parallelism`` when set (``make_session`` sets it for a local
    master: its cores, Spark's own default there), else the partitions of a range made
    without a number of them (one small job: a cluster's executor cores, at least 2)."""
    given = spark.conf.get("spark.default.parallelism", None)
    if given:
        return int(given)
    return range_partitions(spark)


def range_partitions(spark) -> int:
    """The partitions of a range made without a number of them (Spark's default parallelism
    on a cluster), by one small job: the partition ids projected first (a non-deterministic
    expression cannot be an aggregate's argument)."""
    from pyspark.sql import functions as F

    ids = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p"))
    return ids.agg(F.max("p")).first()[0] + 1


@contextmanager
def spark_job(name: str, spark: SparkOptions, paths: list[str], *, jars: bool, session=None,
              then: str) -> Iterator[SparkJob]:
    """Run a job in a SparkSession: ``session`` (a running one, with the helper's jars if the
    job needs them) used and left running, its frames unpersisted at the end; else one started
    for the job (``name``: its app name; ``jars``: with the ``jvm/`` helper's) and stopped at
    the end. SIGINT or SIGTERM meanwhile raise ``Interrupted``, whose message says "the Spark
    job stopped; " and ``then``."""
    own = session is None
    try:
        job = SparkJob(session)
        if own:
            for path in paths:  # a missing local input costs no session
                inputs.local_path(path)
            job.session, job._parallelism = start_session(spark, name, paths, jars)
            fit_to_input(job, spark, paths)
            job.clock("spark session")
        done = False
        try:
            yield job
            done = True
        except Exception as failed:
            if own and not isinstance(failed, (DedupError, OSError, *STOPS)):
                raise SparkJobFailed(failed) from None
            raise
        finally:
            if own:
                stop_session(job.session, done)
                job.clock("spark session stop")
            elif done:
                job.unpersist(*job.persisted)
    except STOPS as stop:
        raise Interrupted(stop, f"the Spark job stopped; {then}") from None


def start_session(spark: SparkOptions, name: str, paths: list[str], jars: bool):
    """The SparkSession of one job (``name``: its app name) on ``paths``: the ``jvm/`` helper's
    jars when ``jars`` and not under spark-submit (which gives them), C1 only for a small input;
    a local JVM writes its class archive at its end when there is none yet (``stop(session,
    done=True)`` keeps it, session.py). On a master that is not local: ``spark.env`` shipped
    (ship.py), and a task in each slot proves the executors run dedup-hbase (else the session
    is stopped and a one-line DedupError raised). With ``spark.remote``: a session of that
    Spark Connect server, which has the jars (checked); ``spark.env`` shipped as the session's
    artifact (ship.ship_to_connect), and the executors proved as above when it is given or the
    server's master is not local. Returns the session and its task slots when the proof
    counted them (else None: found when a step asks, ``SparkJob.parallelism``)."""
    if spark.remote:
        session = connect_session(spark.remote, {"spark.app.name": name, **ARROW_BATCHES, **spark.conf})
        try:
            if jars:
                check_helper(session, spark.remote)
            if spark.env:
                ship_to_connect(session, spark.env)
            slots = None
            if spark.env or not session.conf.get("spark.master", "local").startswith("local"):
                slots = log_executor_pythons(session)
        except BaseException:
            stop_session(session)
            raise
        return session, slots
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    conf = {"spark.app.name": name}
    shipping = bool(spark.env) and not submitted and not spark.master.startswith("local")
    if shipping:
        conf.update(ship_settings(spark.env))
    use_shipped_python(shipping)
    session = make_session(spark.master, {**conf, **spark.conf},
                           helper_jars() if jars and not submitted else None,
                           small=input_bytes(paths) < SMALL_INPUT, make_archive=True)
    slots = None
    if not session.conf.get("spark.master", "").startswith("local"):
        try:
            slots = log_executor_pythons(session)
        except BaseException:
            stop_session(session)
            raise
    return session, slots


def log_executor_pythons(session) -> int:
    """``executor_pythons`` of the session, one --verbose line each (or its one-line refusal);
    the session's task slots, which the probe counted (``default_parallelism``)."""
    slots = default_parallelism(session)
    for found in executor_pythons(session, slots):
        logger.info("executors' Python: %s", json.dumps(found))
    return slots


def fit_to_input(job: SparkJob, spark: SparkOptions, paths: list[str]) -> None:
    """A job's own session, once it runs: on an input under ``SMALL_INPUT`` bytes (remote
    files sized by Spark's file index) the settings of a small job (``small_job_conf``: its
    task slots; a local master's session has them from its start already), except those the
    user set (``--spark-conf``)."""
    total = 0
    for path in paths:
        total += files.input_size(job.session, path) if is_uri(path) else input_bytes([path])
        if total >= SMALL_INPUT:
            return
    for key, value in small_job_conf(job.parallelism).items():
        if key not in spark.conf:
            job.session.conf.set(key, value)


def input_bytes(paths: list[str]) -> int:
    """The bytes of the local files under ``paths`` (a remote input counts as large; a
    ``file:`` URI is local)."""
    total = 0
    for path in paths:
        if is_uri(path):
            return SMALL_INPUT
        if path.startswith("file:"):
            path = unquote(urlsplit(path).path)
        for root, _, names in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
            total += sum(os.path.getsize(os.path.join(root, n)) for n in names if os.path.isfile(os.path.join(root, n)))
    return total
