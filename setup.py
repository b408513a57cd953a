"""The wheel carries the Spark engine's JVM helper: jvm/pom.xml's jars (the helper and the HBase
jars it runs with, ``jvm/target/dedup-hbase-spark.jar`` + ``jvm/target/lib/*.jar``) are copied
into the package as ``dedup_hbase/jobs/spark/jars/``, where the installed package finds them
(jobs/spark/session.py). Jars in jvm/target newer than the pom and the Java sources are reused;
else Maven builds them (``mvn -B -q -f jvm/pom.xml package``: Java 17 and Maven needed, and
Maven Central or a ~/.m2 that has the dependencies). Without Maven or Java the wheel is built
without the helper, with a warning (every engine but spark works; the Spark engine then says
how to get it), as with DEDUP_HBASE_SPARK_HELPER=skip; DEDUP_HBASE_SPARK_HELPER=DIR takes the
jars built elsewhere (DIR and DIR/lib). A Maven build that fails stops the install. An editable install (pip install -e) copies nothing: the package finds the checkout's
jvm/target itself (built by scripts/build-spark-helper).

The dependency jars (hbase-shaded-mapreduce, 55 MB) go into the wheel rather than being
resolved by Spark from Maven Central (``spark.jars.packages``): they must be on the JVMs' own
class path (docs/spark.md, "The JVM side"), which packages are not; the helper jar itself is on
no registry; and a job then needs no registry at run time.
"""

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.warnings import InformationOnly

# An editable install (pip install -e ., as scripts/setup does) of this layout, where the package
# dedup_hbase._schema is the folder schema/, goes through setuptools' import finder, and setuptools
# then emits an 11-line notice, "Editable installation. ... Please be careful with folders in your
# working directory with the same name as your package", which pip 25 and later print as a
# BuildBackendWarning on every install. It asks nothing of a user (the one folder named like the
# package is the package): it is information only, and not shown. Any other warning is.
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

HERE = Path(__file__).resolve().parent
POM = HERE / "jvm" / "pom.xml"
TARGET = HERE / "jvm" / "target"
ENV = "DEDUP_HBASE_SPARK_HELPER"
PACKAGE_DIR = ("dedup_hbase", "jobs", "spark", "jars")


def fresh(target: Path) -> bool:
    """Whether ``target`` holds the helper's jars, newer than the pom and every Java source."""
    jar = target / "dedup-hbase-spark.jar"
    if not jar.exists() or not list((target / "lib").glob("*.jar")):
        return False
    if not POM.exists():
        return True
    built = jar.stat().st_mtime
    return all(p.stat().st_mtime <= built for p in [POM, *(POM.parent / "src").rglob("*.java")])


def helper_jars() -> list[Path]:
    """The jars to package: from $DEDUP_HBASE_SPARK_HELPER=DIR, fresh ones in jvm/target, or built
    now by Maven; [] when $DEDUP_HBASE_SPARK_HELPER=skip."""
    given = os.environ.get(ENV, "")
    if given == "skip":
        print(f"dedup-hbase: {ENV}=skip: a wheel without the Spark engine's JVM helper", file=sys.stderr)
        return []
    target = Path(given) if given else TARGET
    if not fresh(target):
        if given:
            raise SystemExit(f"error: {ENV}={given}: no dedup-hbase-spark.jar and lib/*.jar there")
        missing = [tool for tool in ("mvn", "java") if shutil.which(tool) is None]
        if missing or not POM.exists():  # a user without Java installs everything but the Spark engine
            print(f"dedup-hbase: WARNING: a wheel without the Spark engine's JVM helper ({' and '.join(missing) or 'its pom'} "
                  f"not found; every engine but spark works). For --engine spark install Java 17 and Maven and "
                  f"install again, or set {ENV}=DIR (jars built elsewhere by scripts/build-spark-helper: "
                  f"DIR/dedup-hbase-spark.jar, DIR/lib/*.jar)", file=sys.stderr)
            return []
        print(f"dedup-hbase: building the Spark engine's JVM helper with Maven ({POM}) ...", file=sys.stderr)
        built = subprocess.run(["mvn", "-B", "-q", "-f", str(POM), "package"], capture_output=True, text=True)
        if built.returncode != 0 or not fresh(target):
            raise SystemExit(f"error: Maven could not build {POM}:\n{built.stdout[-3000:]}{built.stderr[-2000:]}")
    return [target / "dedup-hbase-spark.jar", *sorted((target / "lib").glob("*.jar"))]


class BuildWithHelper(build_py):
    """build_py, plus the JVM helper's jars as package data (not in an editable install)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        jars = helper_jars()
        folder = Path(self.build_lib, *PACKAGE_DIR)
        if folder.exists():
            shutil.rmtree(folder)
        if jars:
            folder.mkdir(parents=True)
            for jar in jars:
                shutil.copy2(jar, folder / jar.name)


setup(cmdclass={"build_py": BuildWithHelper})
