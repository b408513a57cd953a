"""The SparkSession of a load, and the JVM helper's jars.

``spark.jars`` = the project's helper (jvm/, built by Maven) + hbase-shaded-mapreduce: HBase
with every third-party library relocated and no Hadoop, next to Spark's own Hadoop client
(hadoop-client-api/-runtime), so neither side's guava, protobuf, netty or ZooKeeper meets
the other's. The same jars go to the driver and, through ``spark.jars``, to every executor.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

from ...errors import DedupError
from . import cds, jvm
from .connect import cannot_connect, is_connect, stop_connect

JARS_ENV = "DEDUP_HBASE_SPARK_JARS"
_REPO = Path(__file__).resolve().parents[3]
_POM = _REPO / "jvm" / "pom.xml"
_TARGET = _REPO / "jvm" / "target"
_PACKAGED = Path(__file__).resolve().parent / "jars"  # an installed (not editable) package's (setup.py)


def helper_jars(build: bool = True) -> list[str]:
    """The jars of the JVM helper: $DEDUP_HBASE_SPARK_JARS (comma-separated), else the ones the
    installed package carries (``jars/`` next to this module: setup.py puts them in the wheel),
    else those jvm/pom.xml builds in a checkout (an editable install; built now if Maven is
    there and they are missing or older than their sources: a checkout updated since the last
    build gets the helper its Python code calls)."""
    given = os.environ.get(JARS_ENV)
    if given:
        jars = [j for j in given.split(",") if j]
        missing = [j for j in jars if not Path(j).exists()]
        if missing:
            raise DedupError(f"${JARS_ENV} names missing jars: {', '.join(missing)}")
        return jars
    packaged = _PACKAGED / "dedup-hbase-spark.jar"
    if packaged.exists():
        return [str(packaged)] + sorted(str(j) for j in _PACKAGED.glob("*.jar") if j != packaged)
    main = _TARGET / "dedup-hbase-spark.jar"
    if not main.exists() or not list((_TARGET / "lib").glob("*.jar")) or _stale(main):
        if not _POM.exists():
            raise DedupError("the Spark engine's JVM helper is not installed: this dedup-hbase was installed "
                             "without it (DEDUP_HBASE_SPARK_HELPER=skip?); pip install it again where Java 17 "
                             f"and Maven are (setup.py builds it), or set ${JARS_ENV} to its jars")
        if not (build and shutil.which("mvn")):
            raise DedupError("the Spark engine's JVM helper is not built (or older than its sources): "
                             "run scripts/build-spark-helper "
                             f"(Maven, from {_POM}), or set ${JARS_ENV} to its jars")
        print("dedup-hbase: building the Spark engine's JVM helper with Maven (once) ...", file=sys.stderr)
        result = subprocess.run(["mvn", "-B", "-q", "-f", str(_POM), "package"], capture_output=True, text=True)
        if result.returncode != 0:
            raise DedupError(f"Maven could not build {_POM}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return [str(main)] + sorted(str(j) for j in (_TARGET / "lib").glob("*.jar"))


def _stale(jar: Path) -> bool:
    """Whether the pom or a source (Java, or a resource such as the data sources' registry) is
    newer than ``jar`` (False where there are no sources)."""
    if not _POM.exists():
        return False
    built = jar.stat().st_mtime
    return any(p.stat().st_mtime > built for p in [_POM, *(_POM.parent / "src").rglob("*")] if p.is_file())


def _log_config() -> str:
    with resources.as_file(resources.files("dedup_hbase.jobs.spark").joinpath("log4j2.properties")) as path:
        return str(path)


def local_heap_gib() -> int:
    """The heap of a local-mode JVM: a quarter of this machine's RAM, at least 2 and at most 8
    GiB (2 GiB runs out at 10^7 fingerprints in ``groups --engine spark`` on local[2])."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(2, min(8, ram // 4 >> 30))


def local_cores(master: str) -> int | None:
    """The cores of a local master (``local``, ``local[4]``, ``local[*]``, ``local[4,2]``); None
    for another master."""
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master.strip())
    if found is None:
        return None
    if found.group(1) in (None, ""):
        return 1
    return os.cpu_count() or 1 if found.group(1) == "*" else max(1, int(found.group(1)))


def make_session(master: str = "local[*]", conf: dict[str, str] | None = None, jars: list[str] | None = None,
                 small: bool = False, make_archive: bool = False):
    """A SparkSession for a job. ``conf`` (``--spark-conf``) overrides the defaults here.
    ``small``: a job on little input, whose JVMs compile with C1 only (a short job spends more
    CPU in the C2 compiler, warming up Spark's and HBase's classes, than C2 code saves it).
    On a local master a small job also takes ``small_job_conf`` (its cores) from the start.
    A local JVM maps the classes of its class path from an archive (cds.py) when there is
    one; ``make_archive``: else its JVM writes one as it exits, kept when
    ``stop(spark, done=True)`` stops it.

    Under ``spark-submit`` (its JVM is running already) the submit command owns the master,
    the class path and the JVM options: only ``conf`` is applied."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise DedupError("the Spark engine needs PySpark: pip install '.[spark]' in the dedup-hbase folder (and Java 17+)") from None
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit
        builder = SparkSession.builder
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise DedupError("the Spark engine needs Java 17 or newer (java not found, JAVA_HOME not set)")
    _refuse_silent_masters(master)
    settings = _settings(master, conf or {}, jars, small)
    archive = None
    if master.startswith("local") and "spark.driver.extraJavaOptions" not in (conf or {}):
        archive = cds.archive_for(settings.get("spark.driver.extraClassPath", ""), settings.get("spark.driver.memory", ""))
        options = cds.java_options(archive, make_archive) if archive else ""
        settings["spark.driver.extraJavaOptions"] += f" {options}" if options else ""
        if archive is not None and (archive.exists or not make_archive):
            archive = None  # nothing to write
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return jvm.start(builder, master, settings, archive)


def _refuse_silent_masters(master: str) -> None:
    """Refuse in one line, at once, a standalone master (``spark://HOST:PORT[,HOST:PORT...]``)
    where none of its addresses accepts a connection: Spark would try for a minute, then say
    only that its context stopped."""
    if not master.startswith("spark://"):
        return
    refusals = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not port.isdigit():
            return  # Spark says what is wrong with it
        refused = cannot_connect(host.strip("[]") or "localhost", int(port))
        if refused is None:
            return
        refusals.append(refused)
    raise DedupError(f"the Spark master {master} does not answer: {'; '.join(refusals)}")


def stop(spark, done: bool = False) -> None:
    """Stop a session that ``make_session`` made. A classic session's JVM ends (``jvm.stop``:
    ``done``, the job ran to its end, gives a JVM writing its class archive the time to); a
    Spark Connect client's session is released, its server runs on. Never raises (but a signal
    that arrives while a JVM exits, when no archive is written)."""
    if is_connect(spark):
        stop_connect(spark)
        return
    jvm.stop(spark, done)


# A JVM that compiles with C1 only (a short job's or a test's: C2's compiling costs more than it
# saves there). Its code cache is then 48 MB unless set, and a session that runs many queries
# fills it with the classes Spark generates for each: the JVM flushes and compiles again, or
# stops compiling and interprets (a test process's session, three test modules: 280 CPU s with
# 48 MB, 218 with 240 MB, C2's default). The space is reserved, not used, until filled.
C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

# The Arrow batches between the JVM and the Python workers: at most 10,000 rows and 16 MiB
# (runtime settings: a Connect session sets them too). The bytes bound keeps a remote file's
# chunks (inputs.CHUNK_BYTES) a few at a time in a worker.
ARROW_BATCHES = {"spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
                 "spark.sql.execution.arrow.maxBytesPerBatch": str(16 << 20)}


def connect_server_conf(master: str, jars: bool = True, c1: bool = False) -> dict[str, str]:
    """The settings of a Spark Connect server that runs dedup-hbase's jobs (scripts/connect-local
    starts one with them): those of a session ``make_session`` starts on ``master``, with the
    JVM helper's jars on its class path when ``jars``; its JVMs compiling with C1 only when
    ``c1`` (a server for short jobs, as the tests': C2's compiling costs more than it saves)."""
    settings = _settings(master, {}, helper_jars() if jars else None, small=False)
    del settings["spark.app.name"]
    if c1:
        for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
            settings[key] += f" {C1_ONLY}"
    return settings


def small_job_conf(slots: int) -> dict[str, str]:
    """The SQL settings of a job on little input, with ``slots`` task slots: planned once
    (adaptive execution runs a job per shuffle, and on a cluster each is queued behind the
    others), each shuffle in as many partitions as there are slots (a task costs tens of ms on
    two cores whatever its size: a 3,000-document ``groups`` on a 2-core cluster, 111 s with 16
    adaptive partitions, 66 s with 2). Runtime settings: a running session takes them too."""
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(slots)}


def _settings(master: str, conf: dict[str, str], jars: list[str] | None, small: bool) -> dict[str, str]:
    """The Spark settings of a session ``make_session`` starts (``conf`` over the defaults)."""
    if master.startswith("local"):
        # the Python workers of a local Spark run this same Python (with dedup-hbase installed)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # one machine: loopback, no interface scan
    java_opts = (f"-Dlog4j2.configurationFile=file:{_log_config()} "
                 "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true"
                 + (f" {C1_ONLY}" if small else ""))
    settings = {
        "spark.app.name": "dedup-hbase load",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        **ARROW_BATCHES,
        "spark.sql.shuffle.partitions": "16",
        # the records are persisted between the job's steps: columns compressed cost more CPU
        # (dictionary statistics of every value) than the memory they save here
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # adaptive execution may coalesce a persisted frame's partitions as any shuffle's: the
        # frames groups persists are mostly small, and each read of one was a task per shuffle
        # partition (the news corpus x4 under the short-text rule: the pair step 28 s -> 20 s)
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
        # the workers fork from a daemon that has PySpark's worker module compiled (spark_daemon.py)
        "spark.python.daemon.module": "dedup_hbase.jobs.spark_daemon",
    }
    if master.startswith("local"):  # one JVM is driver and executors: a quarter of the RAM, 2-8 GiB
        settings["spark.driver.memory"] = f"{local_heap_gib()}g"
        # its cores, as Spark's local default, said where a job reads it (harness.default_parallelism)
        settings["spark.default.parallelism"] = str(local_cores(master))
    if small and master.startswith("local"):  # elsewhere set once the session knows its cores (harness.py)
        settings.update(small_job_conf(local_cores(master)))
    if jars:
        # On the JVMs' own classpath, not spark.jars: hbase-shaded-mapreduce puts a few classes
        # into Hadoop's packages (org.apache.hadoop.metrics2.lib), which must share the class
        # loader of Spark's Hadoop jars (package-private access: the HFile writer in the
        # executors reaches them too). So on a cluster the jars must be at these paths on
        # every node (dedup-hbase installed at one path everywhere; ship.py checks it), or
        # shipped where the cluster manager puts them before an executor starts (YARN:
        # spark.yarn.dist.jars plus spark.executor.extraClassPath=<jar file names>, below).
        # Spark standalone fetches spark.jars only into an executor that runs already.
        classpath = os.pathsep.join(jars)
        settings["spark.driver.extraClassPath"] = classpath
        settings["spark.executor.extraClassPath"] = classpath
        if master == "yarn":  # each container's working folder has them before its executor starts
            settings["spark.yarn.dist.jars"] = ",".join(jars)
            settings["spark.executor.extraClassPath"] = os.pathsep.join(Path(j).name for j in jars)
    settings.update(conf)
    return settings


