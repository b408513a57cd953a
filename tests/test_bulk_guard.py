"""The HBASE-30501 guard (jobs/spark/hbase.py, jvm/ BulkLoad): HFiles cut at other region
boundaries than the table's (its regions split or merged since the files were written) are not
split by BulkLoadHFiles but refused, in one line, and nothing of them is loaded; files cut at
the table's regions load; a load that fails otherwise says why in one line (and makes no table). Needs a real HBase and a local Spark with the jvm/ helper."""

from __future__ import annotations

import random
from urllib.parse import urlsplit

import pytest
from test_spark import index_cells, with_zk

from dedup_hbase import Index, open_store
from dedup_hbase.errors import DedupError

from conftest import hbase_store_url

pytestmark = [pytest.mark.spark, pytest.mark.hbase]


def thrift_tables(url: str) -> list[bytes]:
    import happybase

    where = urlsplit(url)
    connection = happybase.Connection(where.hostname, where.port)
    try:
        return connection.tables()
    finally:
        connection.close()


def write_and_load(spark, index, url: str, staging: str, splits: list[bytes], table: str | None = None):
    """1,000 documents' index cells cut at ``splits``, written and bulk-loaded into ``table``
    (the index's own by default) through the helper's data source."""
    from dedup_hbase.index.schema import load_schema
    from dedup_hbase.jobs.spark import hbase, hfiles, rows

    rnd = random.Random(4)
    docs = [(f"g{i}", rnd.getrandbits(64) - (1 << 63)) for i in range(1000)]
    parts = len(splits) + 1
    cells = (rows.index_rows(spark.createDataFrame(docs, "id string, simhash long"), index.scheme, splits,
                             rows.partition_targets(parts), 1)
             .repartition(parts, "part").sortWithinPartitions("key", "qualifier").select("key", "qualifier", "value"))
    t = load_schema()["tables"]["index"]
    target = index.store.hfile_target()
    spec = hfiles.TableFiles.of(f"{staging}/index", table or target.tables["index"], "d", t, splits)
    hfiles.write_and_load(cells, hbase.ZooKeeper.of(target, url), [spec], [0], staging, 1234567890123, 3, copy=True)


def test_hfiles_that_no_longer_fit_a_region_are_refused_not_split(spark, hbase_url, tmp_path):
    from dedup_hbase.jobs.spark import hbase, hfiles

    url = with_zk(hbase_store_url(hbase_url))
    index = Index.create(open_store(url), 4, 3, regions=4)
    try:
        table = index.store.hfile_target().tables["index"]
        regions = hfiles.region_starts(spark, hbase.ZooKeeper.of(index.store.hfile_target(), url), [table])
        splits = regions[table]
        assert len(splits) == 3 and splits == sorted(splits)
        with pytest.raises(DedupError) as refused:  # cut for one region
            write_and_load(spark, index, url, f"file://{tmp_path}/stale", [])
        assert str(refused.value) == (
            f"the regions of {table} changed (a split or a merge) while the HFiles were written: not loaded (a "
            "load that splits HFiles can lose data, HBASE-30501); run the same command again: it cuts the files "
            "at the regions of then")
        assert isinstance(refused.value, hfiles.RegionsChanged) and refused.value.table == table
        assert index_cells(url) == set()
        with pytest.raises(hfiles.BulkLoadFailed) as failed:  # not made: a failure of another kind, in one line
            write_and_load(spark, index, url, f"file://{tmp_path}/gone", splits, f"{table}_gone")
        assert str(failed.value).startswith(f"bulk load of {table}_gone failed: ")
        assert "TableNotFoundException" in str(failed.value) and "\n" not in str(failed.value)
        assert f"{table}_gone".encode() not in thrift_tables(url)
        write_and_load(spark, index, url, f"file://{tmp_path}/fresh", splits)
        assert len(index_cells(url)) == 4000
        assert not any(p.is_file() for p in tmp_path.rglob("*"))  # each staging folder removed, loaded or not
    finally:
        index.store.drop()


def test_a_bulk_load_that_met_no_master_says_so_in_one_line():
    """BulkLoad.load's message with HBase's master down (measured on scripts/cluster-local with
    the master killed: 16 attempts in 2 min 10 s), shortened to what was not there."""
    from dedup_hbase.jobs.spark import hfiles

    message = ("bulk load of m1_index failed: RetriesExhaustedException: Failed after attempts=16, exceptions: ... "
               "2026-12-04T02:54:08.749Z, RpcRetryingCaller{globalStartTime=2026-12-04T02:51:59.788Z, pause=100, "
               "maxAttempts=16}, org.apache.hadoop.hbase.MasterNotRunningException: java.io.IOException: org.apache."
               "hadoop.hbase.shaded.org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode "
               "for /hbase/master <- MasterNotRunningException: java.io.IOException: ...")
    assert hfiles.said_plainly(message) == (
        "bulk load of m1_index failed: HBase's master is not running (BulkLoadHFiles asks it for the table), after "
        "HBase's client's retries (MasterNotRunningException); run the same command again once it is back")
    other = "bulk load of t_index failed: IOException: a disk is full"
    assert hfiles.said_plainly(other) == other
