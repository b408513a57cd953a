"""Class data sharing (AppCDS) for the JVM of a local Spark session: the fixed cost of a job.

A local Spark JVM loads and verifies some 23,000 classes from ~300 jars before and during
its first job: most of a small load's time (docs/benchmarks.md, "Spark load"). The JVM can map
them from an archive instead (Java 13+: ``-XX:ArchiveClassesAtExit`` writes the classes a
run loaded when that JVM exits; ``-XX:SharedArchiveFile`` maps them in later runs).

One archive per class path, made by the first job that finds none (that job's JVM writes it
as it exits: the job itself runs as before, its stop takes longer), used by every later session on the same class path, Java and heap. The key
names every jar with its size and time, so a rebuilt helper or another Spark gets its own
archive. The JVM checks the archive itself and runs without it when it does not fit.

Where: ``$DEDUP_HBASE_CACHE_DIR/spark-cds`` (default ``~/.cache/dedup-hbase``, as
scripts/hbase-local), the last ``KEEP`` used. ``DEDUP_HBASE_SPARK_CDS=0`` turns it off.
Local masters only: a cluster's executors are other machines' JVMs; and none where a
configuration folder with files in it is on the class path (``HADOOP_CONF_DIR``...: the JVM
refuses an archive then).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

ENV = "DEDUP_HBASE_SPARK_CDS"
KEEP = 4                 # archives kept (each ~200 MB)
QUIET = "-Xlog:cds*=off"  # the JVM's CDS warnings (a jar it skips, an archive that does not fit) go to stdout


@dataclass(frozen=True)
class Archive:
    path: Path  # the archive of one class path, Java and heap

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def making(self) -> Path:
        """The file this process's JVM writes as it exits (renamed to ``path`` when whole)."""
        return self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp")


def cache_dir() -> Path:
    base = os.environ.get("DEDUP_HBASE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dedup-hbase")
    return Path(base) / "spark-cds"


def archive_for(classpath: str, heap: str) -> Archive | None:
    """The archive of a local Spark JVM started with ``classpath`` (``spark.driver.extraClassPath``)
    and ``heap``; None when turned off or the cache folder cannot be made."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    java = _java()
    if java is None or _conf_dir_on_classpath():
        return None
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    jars = [p for p in classpath.split(os.pathsep) if p] + sorted(glob.glob(os.path.join(home, "jars", "*.jar")))
    key = {
        "java": [java, *_stat(java), *_stat(os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "server",
                                                         "libjvm.so"))],
        "jars": [[j, *_stat(j)] for j in jars],
        "heap": heap,
        "env": [os.environ.get(v) for v in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR",
                                             "SPARK_DIST_CLASSPATH")],
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return Archive(folder / f"{digest}.jsa")


def java_options(archive: Archive, make: bool) -> str:
    """The JVM options: map the archive when it is there (and mark it used), else write it at
    exit when ``make``; "" when neither."""
    if archive.exists:
        try:
            os.utime(archive.path)
        except OSError:
            pass
        return f"-XX:SharedArchiveFile={archive.path} {QUIET}"
    if make:
        return f"-XX:ArchiveClassesAtExit={archive.making()} {QUIET}"
    return ""


def finish(archive: Archive, written: bool) -> None:
    """After the JVM that was to write the archive ended: keep what it wrote when ``written``
    (it exited by itself, status 0), else remove any part of it; then only the ``KEEP`` most
    recently used archives stay."""
    making = archive.making()
    try:
        if written and making.is_file() and making.stat().st_size > 0:
            os.replace(making, archive.path)
        else:
            making.unlink(missing_ok=True)
    except OSError:
        pass
    try:  # the cache kept small; a file another process removes first, or cannot be removed, is left
        kept = sorted(archive.path.parent.glob("*.jsa"), key=_used, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
        for left in archive.path.parent.glob("*.tmp"):  # a part written by a JVM killed as it exited
            if time.time() - _used(left) > 3600:
                left.unlink(missing_ok=True)
    except OSError:
        pass


def _used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _conf_dir_on_classpath() -> bool:
    """A configuration folder with files in it, which Spark's launcher puts on the class path
    (a cluster's client conf: ``HADOOP_CONF_DIR`` and the like): the JVM can neither write nor
    map an archive then ("Cannot have non-empty directory in paths", printed at the job's end)."""
    for name in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        folder = os.environ.get(name)
        try:
            if folder and any(os.scandir(folder)):
                return True
        except OSError:
            pass
    return False


def _java() -> str | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def _stat(path: str) -> list[int]:
    try:
        s = os.stat(path)
        return [s.st_size, s.st_mtime_ns]
    except OSError:
        return []
