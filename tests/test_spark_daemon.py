"""spark_daemon.py: the installed PySpark goes before Spark's zip of it only when the two are the
same version (else the zip, which matches the JVM, stays first); the daemon imports nothing that
starts a thread before it forks."""

import os
import subprocess
import sys
import zipfile

import pyspark

from dedup_hbase.jobs import spark_daemon


def _zip(path, version_py: bytes):
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyspark/__init__.py", "")
        z.writestr("pyspark/version.py", version_py)
    return str(path)


def test_the_installed_pyspark_first_only_when_it_is_the_same(tmp_path, monkeypatch):
    installed = open(os.path.join(os.path.dirname(pyspark.__file__), "version.py"), "rb").read()
    same = _zip(tmp_path / "a" / "pyspark.zip", installed)
    other = _zip(tmp_path / "b" / "pyspark.zip", b'__version__ = "0.0.1"\n')
    monkeypatch.setattr(sys, "path", [same, "/x", *sys.path])
    assert spark_daemon.installed_first() and sys.path[-1] == same and sys.path[0] == "/x"
    monkeypatch.setattr(sys, "path", [other, *sys.path[:-1]])
    assert not spark_daemon.installed_first() and sys.path[0] == other
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.endswith("pyspark.zip")])
    assert not spark_daemon.installed_first()


def test_the_daemon_starts_no_thread_before_it_forks():
    code = ("import os, runpy, sys\n"
            "import pyspark.daemon\n"
            "pyspark.daemon.manager = lambda: print(len(os.listdir('/proc/self/task')), "
            "'numpy' in sys.modules, 'pyarrow' in sys.modules)\n"
            "runpy.run_module('dedup_hbase.jobs.spark_daemon', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "False", "False"]
