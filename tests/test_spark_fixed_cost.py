"""A Spark job's fixed cost (docs/spark.md, "A job's fixed cost"): the class archive of a local
JVM (spark/cds.py), written by a job's JVM as it exits and mapped by the next session; the few
input files as a table built in the JVM; the cores of a local master."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark]


@pytest.fixture(autouse=True)
def pyspark_needed():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        from conftest import require_or_skip

        require_or_skip("PySpark is not installed (pip install -e '.[spark]')")


def test_local_cores():
    from dedup_hbase.jobs.spark.session import local_cores

    assert [local_cores(m) for m in ("local", "local[3]", "local[4,2]", "yarn", "k8s://https://h:443")] == [
        1, 3, 4, None, None]
    assert local_cores("local[*]") == (os.cpu_count() or 1)


def test_the_archive_key_follows_the_jars(tmp_path, monkeypatch):
    from dedup_hbase.jobs.spark import cds

    monkeypatch.setenv("DEDUP_HBASE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(cds.ENV, "1")  # the suite turns it off (conftest.py)
    jar = tmp_path / "helper.jar"
    jar.write_bytes(b"one")
    first = cds.archive_for(str(jar), "2g")
    assert first is not None and first.path.parent == tmp_path / "cache" / "spark-cds"
    assert cds.archive_for(str(jar), "2g") == first
    assert cds.archive_for(str(jar), "4g") != first  # another heap
    jar.write_bytes(b"rebuilt")
    assert cds.archive_for(str(jar), "2g") != first  # a rebuilt jar
    monkeypatch.setenv(cds.ENV, "0")
    assert cds.archive_for(str(jar), "2g") is None


def test_no_archive_with_a_configuration_folder_on_the_class_path(tmp_path, monkeypatch):
    """Spark's launcher puts HADOOP_CONF_DIR (and SPARK_CONF_DIR, YARN_CONF_DIR) on the class path;
    a JVM refuses to write or map an archive with a non-empty folder there (it printed "Cannot
    have non-empty directory in paths" at the end of every job on a cluster's client conf)."""
    from dedup_hbase.jobs.spark import cds

    monkeypatch.setenv("DEDUP_HBASE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(cds.ENV, "1")
    for name in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(name, raising=False)
    jar = tmp_path / "helper.jar"
    jar.write_bytes(b"one")
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    assert cds.archive_for(str(jar), "2g") is not None  # an empty folder: no harm
    (conf / "core-site.xml").write_text("<configuration/>")
    assert cds.archive_for(str(jar), "2g") is None


def test_only_a_whole_archive_is_kept(tmp_path, monkeypatch):
    from dedup_hbase.jobs.spark import cds

    monkeypatch.setenv("DEDUP_HBASE_CACHE_DIR", str(tmp_path))
    archive = cds.Archive(cds.cache_dir() / "k.jsa")
    archive.path.parent.mkdir(parents=True)
    assert cds.java_options(archive, make=False) == ""
    assert cds.java_options(archive, make=True) == f"-XX:ArchiveClassesAtExit={archive.making()} {cds.QUIET}"
    archive.making().write_bytes(b"part")
    cds.finish(archive, written=False)  # killed or stopped as it wrote
    assert not archive.making().exists() and not archive.exists
    archive.making().write_bytes(b"whole")
    cds.finish(archive, written=True)
    assert archive.path.read_bytes() == b"whole" and not archive.making().exists()
    assert cds.java_options(archive, make=True) == f"-XX:SharedArchiveFile={archive.path} {cds.QUIET}"
    for i in range(cds.KEEP + 2):  # older ones beyond KEEP go
        old = archive.path.with_name(f"old{i}.jsa")
        old.write_bytes(b"x")
        os.utime(old, (1000 + i, 1000 + i))
    cds.finish(archive, written=False)
    assert sorted(p.name for p in archive.path.parent.glob("*.jsa")) == sorted(
        ["k.jsa"] + [f"old{i}.jsa" for i in range(3, cds.KEEP + 2)])


def test_a_job_writes_the_class_archive_and_the_next_session_maps_it(no_shared_spark, tmp_path, monkeypatch):
    """A session whose job is done leaves an archive; the next session's JVM loads Spark's classes
    from it (the JVM's class loading log names the archive as their source). A session stopped
    before its job is done keeps no part of one: ``finish(written=False)``, which stop() calls
    then, test_only_a_whole_archive_is_kept."""
    from dedup_hbase.jobs.spark.session import make_session, stop

    monkeypatch.setenv("DEDUP_HBASE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DEDUP_HBASE_SPARK_CDS", "1")  # the suite turns it off (conftest.py)
    folder = tmp_path / "cache" / "spark-cds"

    spark = make_session("local[1]", {}, None, small=True, make_archive=True)
    assert spark.range(5).count() == 5
    stop(spark, done=True)
    archives = list(folder.iterdir())
    assert [p.suffix for p in archives] == [".jsa"] and archives[0].stat().st_size > 0

    monkeypatch.setenv("JDK_JAVA_OPTIONS", f"-Xlog:class+load=info:file={tmp_path}/load-%p.log")
    spark = make_session("local[1]", {}, None, small=True, make_archive=True)
    try:
        assert spark.range(5).count() == 5
        arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
        assert f"-XX:SharedArchiveFile={archives[0]}" in arguments
    finally:
        stop(spark, done=True)
    logs = "".join(Path(p).read_text(errors="replace") for p in tmp_path.glob("load-*.log"))
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in logs
    assert list(folder.iterdir()) == archives  # mapped, not written again


def test_a_few_files_as_a_jvm_table(spark):
    """records.file_rows: the same rows, schema and one file per partition as a parallelized
    Python list, up to FEW_FILES (built in the JVM) and beyond (the list as a table)."""
    from pyspark.sql import functions as F

    from dedup_hbase.jobs.spark import inputs, records

    rows = [(0, "/a/b ü", "src", "jsonl", None, 0, -1, 1), (1, '/c"d\\e', "s2", "lines", "id1", 5, 100, 7),
            (2, "/x\n", "s", "auto", None, 0, -1, 1)]
    built = records.file_rows(spark, rows)
    listed = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), inputs.FILE_SCHEMA)
    assert built.schema == listed.schema
    assert [tuple(r) for r in built.collect()] == rows
    assert built.rdd.glom().map(len).collect() == [1, 1, 1]
    many = [(i, f"/f{i}", f"f{i}", "jsonl", None, 0, -1, 1) for i in range(records.FEW_FILES + 1)]
    table = records.file_rows(spark, many)
    assert table.schema == listed.schema
    assert sorted(tuple(r) for r in table.collect()) == many
    assert table.rdd.getNumPartitions() == len(many)
    per_partition = table.groupBy(F.spark_partition_id().alias("p")).count().collect()
    assert len(per_partition) == len(many) and {r["count"] for r in per_partition} == {1}


def test_the_default_parallelism_without_spark_default_parallelism(spark):
    """harness.range_partitions, the path of a cluster's session (no spark.default.parallelism
    set there): one small job's partitions, which on a local master are its task slots (the
    CI run at 09eec03 failed on every cluster job here: an aggregate of spark_partition_id())."""
    from dedup_hbase.jobs.spark.harness import default_parallelism, range_partitions

    slots = spark.range(0, 1 << 16).rdd.getNumPartitions()
    assert range_partitions(spark) == slots >= 1
    assert default_parallelism(spark) == int(spark.conf.get("spark.default.parallelism", str(slots)))


def test_a_failed_job_keeps_its_message_once_its_session_is_gone(spark):
    """harness.SparkJobFailed reads a PySpark exception's message while the session runs: after
    spark_job stops its own session, PySpark's str() of it fails (its JVM gone), and the CLI
    printed ``AnalysisException: <exception str() failed>``."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from dedup_hbase.jobs.spark.harness import SparkJobFailed

    with pytest.raises(AnalysisException) as raised:
        spark.range(4).agg(F.max(F.spark_partition_id())).first()
    failed = SparkJobFailed(raised.value)
    assert str(failed).startswith("AnalysisException: [AGGREGATE_FUNCTION_WITH_NONDETERMINISTIC_EXPRESSION]")
    assert failed.__traceback__ is raised.value.__traceback__


def listing_tree(root: Path) -> list[tuple[str, str | None]]:
    """A folder of inputs with hidden ones beside them: the (uri, relative) pairs files.list_files
    must give for it."""
    for name in ("b.jsonl", "a b%41.jsonl", "sub/deep/c.jsonl", "sub/_hidden.jsonl", ".dot/d.jsonl",
                 "_staging/e.jsonl", "sub/.f.jsonl", "ü.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")
    expected = ["a b%41.jsonl", "b.jsonl", "sub/deep/c.jsonl", "ü.txt"]
    return [(f"file://{root}/{name}", name) for name in expected]


def test_remote_inputs_are_listed_by_sparks_file_index(spark, tmp_path):
    """files.list_files (the listing of an input URI, through the DataFrame API alone, as a
    Spark Connect session lists too: test_spark_connect): files under folders, names with a
    space, a '%' and non-ASCII as they are, hidden names skipped, sorted by relative path; a
    file given is itself; a path not there one line."""
    from dedup_hbase.errors import InvalidInput
    from dedup_hbase.jobs.spark.files import list_files

    expected = listing_tree(tmp_path / "in")
    assert list_files(spark, f"file://{tmp_path}/in") == expected
    assert list_files(spark, f"file://{tmp_path}/in/") == expected
    assert list_files(spark, f"file://{tmp_path}/in/sub/deep/c.jsonl") == [(f"file://{tmp_path}/in/sub/deep/c.jsonl", None)]
    with pytest.raises(InvalidInput) as missing:
        list_files(spark, f"file://{tmp_path}/nothing")
    assert str(missing.value) == f"file://{tmp_path}/nothing: no such file or folder"


def test_a_remote_inputs_size_is_of_the_files_the_listing_finds(spark, tmp_path):
    """files.input_size: the bytes of the files list_files gives (hidden ones not counted), 0
    for a path not there (the listing says so, in the job's words)."""
    from dedup_hbase.jobs.spark.files import input_size

    listing_tree(tmp_path / "in")
    (tmp_path / "in" / "b.jsonl").write_text("x" * 1000)
    (tmp_path / "in" / "_staging" / "e.jsonl").write_text("y" * 5000)  # hidden
    assert input_size(spark, f"file://{tmp_path}/in") == 1000 + 3 * 3
    assert input_size(spark, f"file://{tmp_path}/in/b.jsonl") == 1000
    assert input_size(spark, f"file://{tmp_path}/nothing") == 0


@pytest.fixture
def sql_conf_restored(spark):
    keys = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    before = {key: spark.conf.get(key) for key in keys}
    yield
    for key, value in before.items():
        spark.conf.set(key, value)


def test_a_small_remote_input_gets_a_small_jobs_settings_once_the_session_runs(spark, sql_conf_restored, tmp_path):
    """harness.fit_to_input, the path of a cluster's or a Connect server's session (a local one
    has them from its start): a remote input under SMALL_INPUT bytes plans each shuffle in as
    many partitions as the session has task slots, without adaptive execution; a setting the
    user gave stays; an input at SMALL_INPUT bytes keeps the session's. (A ``file:`` URI is
    sized as a local path; input_size, the remote files' size, is tested above.)"""
    from dedup_hbase.jobs.options import SparkOptions
    from dedup_hbase.jobs.spark import harness

    small = tmp_path / "small.jsonl"
    small.write_text("{}\n" * 10)
    large = tmp_path / "large.bin"
    with open(large, "wb") as f:
        f.truncate(harness.SMALL_INPUT)
    slots = harness.default_parallelism(spark)

    def fitted(paths, conf=None):
        for key, value in (("spark.sql.adaptive.enabled", "true"), ("spark.sql.shuffle.partitions", "16")):
            spark.conf.set(key, value)
        harness.fit_to_input(harness.SparkJob(spark), SparkOptions(master="spark://elsewhere:7077", conf=conf or {}),
                             paths)
        return spark.conf.get("spark.sql.adaptive.enabled"), spark.conf.get("spark.sql.shuffle.partitions")

    assert fitted([f"file://{small}"]) == ("false", str(slots))
    assert fitted([str(small)]) == ("false", str(slots))
    assert fitted([f"file://{small}"], {"spark.sql.shuffle.partitions": "16"}) == ("false", "16")
    assert fitted([f"file://{small}", str(large)]) == ("true", "16")
    assert fitted([f"file://{large}"]) == ("true", "16")
