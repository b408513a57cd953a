"""pack-env and --spark-env without a cluster: the refusals, and the settings a job ships an
environment with (the packing itself, and the shipping, run on a cluster: test_cluster.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dedup_hbase.cli.command import as_flags
from dedup_hbase.errors import DedupError
from dedup_hbase.jobs.spark import ship


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(["dedup-hbase", *args], capture_output=True, text=True, cwd=cwd)


def test_pack_env_refusals_are_one_line(tmp_path):
    for name in ("env.zip", "env.tar"):  # a .tar: Spark's Java untar drops bin/python's executable bit
        done = run("pack-env", str(tmp_path / name))
        assert (done.returncode, done.stderr) == (1, f"error: {tmp_path / name}: name the archive .tar.gz or .tgz "
                                                     "(Spark unpacks those with tar, which keeps the environment's "
                                                     "links and executable files; a .zip or a .tar loses them)\n")
    done = run("pack-env", str(tmp_path / "env.tar.gz"), "--python", str(tmp_path / "nopython"))
    assert (done.returncode, done.stderr) == (1, f"error: cannot run {tmp_path / 'nopython'}: No such file or "
                                                 "directory\n")
    assert not list(tmp_path.iterdir())


def test_a_missing_input_is_refused_before_the_session_starts(tmp_path):
    """No Java on the PATH: a session's start would say so; the missing input is said first."""
    python_only = tmp_path / "bin"
    python_only.mkdir()
    (python_only / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(python_only), "JAVA_HOME": ""}
    for missing in ("missing.jsonl", f"file:{tmp_path}/missing"):
        done = subprocess.run([sys.executable, "-m", "dedup_hbase", "groups", "--engine", "spark", "--spark-master",
                               "local[1]", missing, "--out", str(tmp_path / "out")], capture_output=True, text=True,
                              cwd=tmp_path, env=env)
        assert (done.returncode, done.stderr) == (1, f"error: no such file or folder: {missing.removeprefix('file:')}\n")
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "dedup_hbase", "groups", "--engine", "spark", "--spark-master",
                           "local[1]", "in.jsonl", "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert (done.returncode, done.stderr) == (1, "error: the Spark engine needs Java 17 or newer (java not found, "
                                                 "JAVA_HOME not set)\n")


@pytest.mark.parametrize("setting, said", [  # settings split at commas
    # the launcher's JVM exits before it answers: what Java said first
    ("spark.driver.memory=zz", "Java exited: Invalid maximum heap size: -Xmxzz"),
    ("spark.driver.memory=12", "Java exited: Too small maximum heap"),  # said on Java's stdout
    # SparkContext refuses to start (a Py4JJavaError, whose text the JVM holds)
    ("spark.eventLog.enabled=true,spark.eventLog.dir={missing}", "java.io.FileNotFoundException: File file:{missing} does not exist"),
    # Spark SQL refuses a setting once the session runs (a CapturedException)
    ("spark.sql.shuffle.partitions=-3", "[INVALID_CONF_VALUE.REQUIREMENT] The value '-3' in the config "
                                        "\"spark.sql.shuffle.partitions\" is invalid. The value of "
                                        "spark.sql.shuffle.partitions must be positive SQLSTATE: 22022"),
])
def test_a_session_spark_refuses_to_start_is_one_line(tmp_path, setting, said):
    """Spark's own words, in the last line, and no traceback (before: 200 lines ending in
    ``Py4JJavaError: <exception str() failed>``, the JVM ended before its message was read)."""
    (tmp_path / "in.jsonl").write_text('{"id": "a", "simhash": "00000000000000ff"}\n', encoding="utf-8")
    missing = tmp_path / "no-events"
    confs = [arg for conf in setting.format(missing=missing).split(",") for arg in ("--spark-conf", conf)]
    done = run("groups", "in.jsonl", "--fingerprints", "--engine", "spark", "--spark-master", "local[1]", *confs,
               "--out", "out", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == f"error: the Spark session did not start: {said.format(missing=missing)}"
    assert "Traceback" not in done.stderr


def test_a_master_spark_cannot_reach_is_one_line(tmp_path):
    """A standalone master where nothing listens: said before the JVM starts (Spark tried for a
    minute, then said "Cannot call methods on a stopped SparkContext"); YARN without its
    configuration: Spark's own words, not the warnings logged before them."""
    (tmp_path / "in.jsonl").write_text('{"id": "a", "simhash": "00000000000000ff"}\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    for master, said in [("spark://127.0.0.1:1,localhost:1", "the Spark master spark://127.0.0.1:1,localhost:1 does not "
                          "answer: cannot connect to 127.0.0.1:1 (Connection refused); cannot connect to localhost:1 "
                          "(Connection refused)"),
                         ("yarn", "the Spark session did not start: Java exited: org.apache.spark.SparkException: "
                          "When running with master 'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in "
                          "the environment.")]:
        done = subprocess.run(["dedup-hbase", "groups", "in.jsonl", "--fingerprints", "--engine", "spark",
                               "--spark-master", master, "--out", "out"], capture_output=True, text=True, cwd=tmp_path,
                              env=env)
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1] == f"error: {said}"


def test_the_reason_spark_gives_when_it_ends_the_application():
    """What a driver JVM wrote when a standalone master accepted the connection and never
    answered (a Python socket that accepts and holds, as run once by hand: Spark's three
    registrations of 20 s, a minute not spent here): its reason is what the start says, not the
    stopped context it leaves; Spark's other lines leave it None."""
    from dedup_hbase.jobs.spark.jvm import _Output

    output = _Output()
    for line in ["21:49:29 WARN  Utils: Set SPARK_LOCAL_IP if you need to bind to another address",
                 "21:50:31 WARN  StandaloneSchedulerBackend: Application ID is not initialized yet.",
                 "21:50:31 ERROR StandaloneSchedulerBackend: Application has been killed. Reason: All masters are "
                 "unresponsive! Giving up.",
                 "21:50:32 ERROR TransportResponseHandler: Still have 3 requests outstanding when connection from "
                 "127.0.0.1/127.0.0.1:7177 is closed"]:
        output.add(f"{line}\n".encode())
    assert (output.ended, len(output.first)) == ("All masters are unresponsive! Giving up.", 4)
    quiet = _Output()
    quiet.add(b"21:49:29 WARN  Utils: Your hostname, vm, resolves to a loopback address\n")
    assert quiet.ended is None


def test_spark_env_settings_and_a_missing_archive(tmp_path):
    archive = tmp_path / "env.tar.gz"
    with pytest.raises(DedupError, match=r"^spark_env=.*env.tar.gz: no such file \(make it with: dedup-hbase "
                                         r"pack-env .*env.tar.gz\)$") as refused:
        ship.ship_settings(str(archive))
    assert as_flags(refused.value).startswith(f"--spark-env {archive}: no such file")  # the CLI's words
    archive.write_bytes(b"")
    assert ship.ship_settings(str(archive)) == {"spark.archives": f"file://{archive}#env",
                                                "spark.pyspark.python": "./env/bin/python"}
    assert ship.ship_settings("hdfs://nn:8020/envs/e.tgz")["spark.archives"] == "hdfs://nn:8020/envs/e.tgz#env"


def test_left_out_of_the_pack():
    left_out = lambda path: ship.LEFT_OUT.fullmatch(path) is not None
    for path in ["pip/__init__.py", "pip-23.2.1.dist-info/RECORD", "setuptools/x.py", "__editable__.dedup_hbase-0.2.0.pth",
                 "pyspark/jars/spark-core_2.13-4.3.0.jar", "dedup_hbase/jobs/spark/jars/dedup-hbase-spark.jar",
                 "pandas/tests/frame/test_api.py", "numpy/tests/test_x.py", "numpy/linalg/tests/test_linalg.py",
                 "pyarrow/include/arrow/api.h", "pyspark/examples/src/main/python/pi.py", "pyspark/data/mllib/als/test.data",
                 "pyspark/licenses/LICENSE-py4j.txt", "pyspark/bin/spark-submit", "pyspark/sbin/start-master.sh",
                 "numpy/__init__.pyi", "pyspark/sql/functions/builtin.pyi", "typer/main.py",
                 "typer-0.29.3.dist-info/RECORD", "pygments/lexers/python.py", "markdown_it/main.py",
                 "markdown_it_py-4.3.0.dist-info/METADATA", "mdurl/__init__.py", "shellingham/posix/ps.py"]:
        assert left_out(path), path
    for path in ["pyspark/__init__.py", "pyspark/sql/functions/builtin.py", "dedup_hbase/jobs/spark/ship.py",
                 "pipx/__init__.py", "numpy/linalg/_linalg.py", "dedup_hbase_core/__init__.py", "pyarrow/lib.so",
                 "pyspark/sql/pandas/types.py", "pyspark/pandas/frame.py", "pyspark/python/pyspark/shell.py",
                 "rich/console.py", "rich-15.0.0.dist-info/RECORD", "typing_extensions.py"]:
        assert not left_out(path), path


def test_what_executors_import_needs_nothing_left_out_as_the_command_lines():
    """Every module of the package but the command line's (dedup_hbase.cli, __main__) imports in
    a Python that cannot import ``ship.CLI_ONLY``: the packed environment, which leaves them out,
    runs whatever an executor imports."""
    program = f"""
import importlib, pkgutil, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {ship.CLI_ONLY!r}:
            raise ImportError("left out of the pack: " + name)
sys.meta_path.insert(0, Refuse())
import dedup_hbase
failed = []
for module in pkgutil.walk_packages(dedup_hbase.__path__, "dedup_hbase."):
    if not module.name.startswith(("dedup_hbase.cli", "dedup_hbase.__main__")):
        try:
            importlib.import_module(module.name)
        except ImportError as e:
            failed.append(module.name + ": " + str(e))
print(*failed, sep="\\n", end="")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (0, [], "")


def test_the_reason_of_a_failed_probe():
    class Failed(Exception):
        def __str__(self):
            return ("An error occurred ...\norg.apache.spark.SparkException: \nError from python worker:\n  "
                    "/usr/bin/python3: Error while finding module specification for 'dedup_hbase.jobs.spark_daemon' "
                    "(ModuleNotFoundError: No module named 'dedup_hbase')\nPYTHONPATH was: ...")

    assert ship.failure_reason(Failed()) == "No module named 'dedup_hbase'"


def test_through_spark_connect_the_environment_is_a_local_file(tmp_path):
    """ship_to_connect refuses, before the session is touched, an archive the client cannot upload."""
    with pytest.raises(DedupError, match=r"^spark_env=hdfs://nn:8020/envs/e.tgz: through Spark Connect the "
                                         r"environment is a local file \(the client uploads it to the server "
                                         r"with the session\)$"):
        ship.ship_to_connect(None, "hdfs://nn:8020/envs/e.tgz")
    with pytest.raises(DedupError, match=r"^spark_env=.*env.tar.gz: no such file \(make it with: dedup-hbase "
                                         r"pack-env .*env.tar.gz\)$"):
        ship.ship_to_connect(None, str(tmp_path / "env.tar.gz"))


def test_on_yarn_the_jars_are_shipped_and_named_in_the_containers_folder():
    from dedup_hbase.jobs.spark.session import _settings

    jars = ["/opt/x/dedup-hbase-spark.jar", "/opt/x/lib/hbase-shaded-mapreduce-2.6.4-hadoop3.jar"]
    yarn = _settings("yarn", {}, jars, small=False)
    assert (yarn["spark.yarn.dist.jars"], yarn["spark.driver.extraClassPath"], yarn["spark.executor.extraClassPath"]) == (
        ",".join(jars), ":".join(jars), "dedup-hbase-spark.jar:hbase-shaded-mapreduce-2.6.4-hadoop3.jar")
    standalone = _settings("spark://m:7077", {}, jars, small=False)
    assert "spark.yarn.dist.jars" not in standalone and standalone["spark.executor.extraClassPath"] == ":".join(jars)
    given = _settings("yarn", {"spark.executor.extraClassPath": "/nodes/jars/*"}, jars, small=False)
    assert given["spark.executor.extraClassPath"] == "/nodes/jars/*"  # --spark-conf wins
