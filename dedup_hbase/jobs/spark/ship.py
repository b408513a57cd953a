"""The executors' Python environment on a cluster: packed once (``pack_env``, the command
``dedup-hbase pack-env``), shipped with every job on a cluster (``ship_settings``:
``spark.archives=ARCHIVE#env``, the workers' Python ``./env/bin/python``), and proven at the
session's start (``executor_pythons``: a task in every slot imports dedup_hbase; a job refuses
with one line when it cannot).

The packed environment is a virtualenv made with a Python every node has at the same path (by
default /usr/bin/python3.11; the archive keeps the venv's link to it, as venv-pack does, so it
runs only where that Python is) holding a copy of the packages this process runs with: the
project as installed (or imported), its compiled core, its dependencies, PySpark's Python code.
Not copied: pip, setuptools, an editable install's hooks, the packages only the command line
imports (``CLI_ONLY``), and PySpark's jars (the executors run their own Spark's; keep the
PySpark of the packing environment at the cluster's Spark version).
The packages are binary ones for this Python's minor version: the given Python must be the same
minor version (it is checked).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import DedupError
from ..options import uri_of

ENV_NAME = "env"  # the folder the archive is unpacked to, in each executor's working folder
SHIPPED_PYTHON = f"./{ENV_NAME}/bin/python"
DEFAULT_PYTHON = "/usr/bin/python3.11"
# not packed: installers, an editable install's path hooks, PySpark's jars (the cluster has its
# own), the JVM helper's (a job gives them to its executors: spark.jars), PySpark's examples,
# sample data, licenses and launch scripts, type stubs, test suites, C headers, and what only
# the command line imports (CLI_ONLY): no executor reads them, and each file costs a node as it
# unpacks the archive (a YARN NodeManager without Hadoop's native library starts `chmod` once
# per file: docs/testing.md)
CLI_ONLY = ("typer", "shellingham", "pygments", "markdown_it", "mdurl")  # Typer, and rich's syntax and Markdown
LEFT_OUT = re.compile(r"(pip|setuptools|wheel|_distutils_hack)(-[^/]*\.dist-info)?(/.*)?|__editable__.*|"
                      rf"({'|'.join(CLI_ONLY)}|markdown_it_py)(-[^/]*\.dist-info)?(/.*)?|"
                      r"distutils-precedence\.pth|(pyspark|dedup_hbase/jobs/spark)/jars(/.*)?|"
                      r"pyspark/(examples|data|licenses|bin|sbin)(/.*)?|.*\.pyi|"
                      r"(pandas|pyarrow|numpy(/[^/]+)?)/tests/.*|pyarrow/include/.*|.*/__pycache__/.*\.opt-[12]\.pyc")


@dataclass
class Packed:
    archive: str
    python: str
    packages: int
    bytes: int


def pack_env(archive: str, python: str = DEFAULT_PYTHON) -> Packed:
    """Write ``archive`` (.tar.gz or .tgz): a virtualenv of ``python`` with this process's
    packages (see the module's docstring). Replaces an archive there only once the new one is
    complete. Not a .tar: Spark unpacks a .tar in Java, which drops the executable bits and
    refuses the venv's link to its Python (a .tar.gz goes through tar(1), which keeps both)."""
    if not re.search(r"\.(tar\.gz|tgz)$", archive):
        raise DedupError(f"{archive}: name the archive .tar.gz or .tgz (Spark unpacks those with tar, which keeps "
                         "the environment's links and executable files; a .zip or a .tar loses them)")
    minor = _python_minor(python)
    if minor != f"{sys.version_info[0]}.{sys.version_info[1]}":
        raise DedupError(f"{python} is Python {minor}, this dedup-hbase runs on {sys.version_info[0]}."
                         f"{sys.version_info[1]}: its compiled packages need the same minor version (run pack-env "
                         "from an environment of that Python, or give --python a matching one)")
    with tempfile.TemporaryDirectory(prefix="dedup-hbase-env-") as work:
        env = Path(work) / ENV_NAME
        made = subprocess.run([python, "-m", "venv", "--without-pip", str(env)], capture_output=True, text=True)
        if made.returncode != 0:
            raise DedupError(f"{python} -m venv failed: {made.stderr.strip()[-500:]}")
        target = Path(subprocess.run([str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig."
                                      "get_paths()['purelib'])"], capture_output=True, text=True,
                                     check=True).stdout.strip())
        packages = _copy_packages(target)
        partial = f"{archive}.part"
        with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
            tar.add(env, arcname=".")
        os.replace(partial, archive)
    return Packed(archive, python, packages, os.path.getsize(archive))


def _python_minor(python: str) -> str:
    try:
        found = subprocess.run([python, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
    except OSError as e:
        raise DedupError(f"cannot run {python}: {e.strerror}") from None
    if found.returncode != 0:
        raise DedupError(f"{python} has no venv module (or does not run): {found.stderr.strip()[-300:]}")
    return found.stdout.strip()


def _copy_packages(target: Path) -> int:
    """Copy this process's site-packages into ``target`` (but ``LEFT_OUT``), then the dedup_hbase
    package this process imports, wherever it is (an editable install's, a checkout on
    PYTHONPATH); the number of top-level entries copied."""
    import dedup_hbase

    sources = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    count = 0
    for source in map(Path, sources):
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source).as_posix()
            if LEFT_OUT.fullmatch(relative) or path.is_dir() and not path.is_symlink():
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / relative, follow_symlinks=False)
        count += sum(1 for p in source.iterdir() if not LEFT_OUT.fullmatch(p.name))
    package = Path(dedup_hbase.__file__).resolve().parent
    shutil.rmtree(target / "dedup_hbase", ignore_errors=True)
    shutil.copytree(package, target / "dedup_hbase", ignore=shutil.ignore_patterns("__pycache__", "jars"))
    return count


def ship_settings(archive: str) -> dict[str, str]:
    """The Spark settings that ship ``archive`` (a path or URI) to every executor and run their
    Python workers with its Python. PySpark started from Python takes the workers' Python from
    $PYSPARK_PYTHON, not from the setting: set it too (``use_shipped_python``)."""
    if "://" not in archive and not os.path.isfile(archive):
        raise DedupError(f"spark_env={archive}: no such file (make it with: dedup-hbase pack-env {archive})",
                         arguments=("spark_env",))
    return {"spark.archives": f"{uri_of(archive)}#{ENV_NAME}", "spark.pyspark.python": SHIPPED_PYTHON}


def ship_to_connect(spark, archive: str) -> None:
    """Ship ``archive`` (a local file: the Spark Connect client uploads it) to the executors of a
    Spark Connect session, as an artifact of the session unpacked to ``env`` in their working
    folders, and run the session's Python UDFs with its Python (the session's
    spark.sql.execution.pyspark.python). Other sessions of the server keep their own Python."""
    if "://" in archive and not archive.startswith("file://"):
        raise DedupError(f"spark_env={archive}: through Spark Connect the environment is a local file (the client "
                         "uploads it to the server with the session)", arguments=("spark_env",))
    path = archive.removeprefix("file://")
    if not os.path.isfile(path):
        raise DedupError(f"spark_env={archive}: no such file (make it with: dedup-hbase pack-env {archive})",
                         arguments=("spark_env",))
    spark.addArtifacts(f"{os.path.abspath(path)}#{ENV_NAME}", archive=True)
    spark.conf.set("spark.sql.execution.pyspark.python", SHIPPED_PYTHON)


def use_shipped_python(shipped: bool = True) -> None:
    """Make the Python workers of sessions started from now on run the shipped environment's
    Python (``shipped``), or no longer (a local session after a shipping one, same process)."""
    if shipped:
        os.environ["PYSPARK_PYTHON"] = SHIPPED_PYTHON
    elif os.environ.get("PYSPARK_PYTHON") == SHIPPED_PYTHON:
        del os.environ["PYSPARK_PYTHON"]


def executor_pythons(spark, slots: int) -> list[dict]:
    """What each of the ``slots`` task slots' Python is: ``python`` (sys.executable),
    ``dedup_hbase`` (the file of the package it imports) and ``version``, one entry per distinct
    answer, found by a task per slot (a Python UDF over a range, no Arrow: the executors' Python
    may lack it; classic or through Spark Connect). Raises a one-line DedupError when the
    executors cannot run dedup-hbase (no such module, a Python they cannot run) or cannot read a
    jar of their class path (``spark.executor.extraClassPath``: the JVM helper's, at the
    driver's paths unless set otherwise). It does not prove that every slot of a cluster ran
    the probe: Spark may run two of its tasks in one slot."""
    from pyspark.sql import functions as F

    from .jvm import jvm_log_level

    classpath = [p for p in spark.conf.get("spark.executor.extraClassPath", "").split(os.pathsep) if p.endswith(".jar")]
    probe = F.udf(lambda _: _probe(classpath), "string", useArrow=False)
    try:
        with jvm_log_level(spark, "OFF"):  # a failing probe's task errors: said below in one line
            rows = spark.range(0, slots, 1, slots).select(probe("id").alias("found")).collect()
    except Exception as e:  # py4j's or Spark Connect's error; its str() may itself fail
        raise DedupError(f"the Spark executors cannot run dedup-hbase ({failure_reason(e)}): ship an environment "
                         "made by `dedup-hbase pack-env ARCHIVE` with spark_env=ARCHIVE", arguments=("spark_env",)) from None
    found = [json.loads(row["found"]) for row in rows]
    unread = sorted({p for f in found for p in f.pop("unreadable")})
    if unread:
        raise DedupError(f"the Spark executors cannot read {', '.join(unread)} (their class path: the JVM helper's "
                         "jars at the driver's paths): install dedup-hbase at the same path on every node, or "
                         "give the jars' paths there with --spark-conf spark.executor.extraClassPath=...")
    return [dict(t) for t in dict.fromkeys(tuple(sorted(f.items())) for f in found)]


def _probe(classpath: list[str]) -> str:
    """One executor Python's answer to ``executor_pythons``, as JSON."""
    import dedup_hbase

    return json.dumps({"python": sys.executable, "dedup_hbase": dedup_hbase.__file__, "version": dedup_hbase.__version__,
                       "unreadable": [p for p in classpath if not os.access(p, os.R_OK)]})


def failure_reason(error: Exception) -> str:
    """The cause of a failed probe, found in what py4j or Spark Connect gives of the executors' error."""
    texts = []
    for get in (lambda: str(error), lambda: error.java_exception.toString()):
        try:
            texts.append(get())
        except Exception:
            pass
    text = "\n".join(texts)
    for pattern in (r"No module named '[^']+'", r"Cannot run program \"[^\"]+\": error=\d+, [^\n]+",
                    r"(?m)^\w+(Error|Exception): [^\n]+"):
        found = re.search(pattern, text)
        if found:
            return found.group(0)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else type(error).__name__
