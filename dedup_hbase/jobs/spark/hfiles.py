"""A Spark load's HFiles and their bulk load, through the JVM helper's two data sources
(jvm/, ``dedup.hbase.spark``), reached by the DataFrame API alone (so the same in classic
Spark and through Spark Connect):

* ``dedup-hbase-regions`` (RegionStarts): tables' region start keys, read on the driver;
* ``dedup-hbase-hfiles`` (HFileSink): cells written as HFiles in the executors, one per Spark
  partition and region, then handed to HBase by BulkLoadHFiles when every task has committed,
  table by table; the load's staging folder removed before the tasks start and after the load.

What the data sources are told goes as options of strings; what a load wrote is counted by
the caller (an Observation of its rows): the sink returns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import DedupError
from .hbase import ZooKeeper

REGIONS_CHANGED = "dedup-hbase: regions changed: "  # HFileSink.REGIONS_CHANGED
FAILED = "bulk load of "  # BulkLoad.load's message of any other failure


@dataclass(frozen=True)
class TableFiles:
    """What the HFile writer needs for one table: where its files go, the table, its
    family's settings (schema/tables.json) and its region start keys."""

    folder: str
    table: str
    family: str
    compression: str
    encoding: str
    bloom: str
    bloom_prefix: int
    splits: list[bytes]
    block_size: int = 65536

    @classmethod
    def of(cls, folder: str, table: str, family: str, settings: dict, splits: list[bytes]) -> TableFiles:
        """The files of ``table`` with its schema/tables.json entry ``settings`` (compression,
        encoding, Bloom filter, block size: what HBase's own flushes and compactions write)."""
        return cls(folder, table, family, settings["compression"], settings["data_block_encoding"],
                   settings["bloom_filter"], int(settings.get("bloom_prefix_length") or 0), splits,
                   settings.get("block_size") or cls.block_size)

    def line(self) -> str:
        return "\t".join([self.folder, self.table, self.family, self.compression, self.encoding, self.bloom,
                          str(self.bloom_prefix), str(self.block_size), ",".join(s.hex() for s in self.splits)])


def _zk_options(zk: ZooKeeper | None) -> dict[str, str]:
    return {} if zk is None else {"quorum": zk.quorum, "port": str(zk.port), "parent": zk.parent}


def region_starts(spark, zk: ZooKeeper, tables: list[str]) -> dict[str, list[bytes]]:
    """Each table's region start keys but the first (empty) one, in key order."""
    found = (spark.read.format("dedup-hbase-regions").options(tables=",".join(tables), **_zk_options(zk))
             .load().collect())
    starts: dict[str, list[bytes]] = {table: [] for table in tables}
    for row in found:
        starts[row["table"]].append(bytes(row["start"]))
    return {table: sorted(keys) for table, keys in starts.items()}


def write_and_load(cells, zk: ZooKeeper | None, tables: list[TableFiles], firsts: list[int], staging: str, timestamp: int,
                   tag: int, copy: bool = False) -> None:
    """HFiles of ``cells`` (a DataFrame of key, qualifier, value, sorted within partitions;
    partition p belongs to the last table whose ``firsts`` entry is at most p), bulk-loaded
    table by table in the order of ``tables``, whose folders lie in ``staging`` (removed
    before and after). A table whose regions changed since the files were cut is not loaded
    and raises RegionsChanged (the tables before it stay loaded); any other failure of the load
    BulkLoadFailed, in one line. ``copy``: HBase copies the files (else moves them when it
    shares their file system). Without ``zk`` the files are written and kept, not loaded."""
    try:
        (cells.write.format("dedup-hbase-hfiles").mode("append")
         .options(tables="\n".join(t.line() for t in tables), firsts=",".join(map(str, firsts)),
                  timestamp=str(timestamp), tag=str(tag), staging=staging, copy=str(copy).lower(),
                  **_zk_options(zk))
         .save())
    except Exception as e:  # classic: a captured JVM error; Spark Connect: a gRPC one; same texts
        text = _jvm_text(e)
        if REGIONS_CHANGED in text:
            table = text[text.index(REGIONS_CHANGED) + len(REGIONS_CHANGED):].split()[0].rstrip(".;:,")
            raise RegionsChanged(table) from None
        if FAILED in text:
            line = next(line for line in text.splitlines() if FAILED in line)
            raise BulkLoadFailed(said_plainly(line[line.index(FAILED):])) from None
        raise


# HBase's client's errors that say which part of HBase was not there, and what to say instead
UNREACHABLE = (("MasterNotRunningException", "HBase's master is not running (BulkLoadHFiles asks it for the table)"),
               ("NoServerForRegionException", "no region server holds the table's regions"),
               ("ConnectionLossException", "HBase's ZooKeeper does not answer"))


def said_plainly(message: str) -> str:
    """BulkLoad.load's message (``bulk load of TABLE failed: CAUSE <- CAUSE ...``), shortened to
    what was not there when HBase's client names it (after its retries: about 2 minutes)."""
    for marker, plain in UNREACHABLE:
        if marker in message:
            table = message[len(FAILED):].split(" failed", 1)[0]
            return (f"{FAILED}{table} failed: {plain}, after HBase's client's retries ({marker}); "
                    "run the same command again once it is back")
    return message


def _jvm_text(error: BaseException) -> str:
    """Every message of a Spark error and its causes, as far as this client sees them:
    Spark wraps the sink's error ("Writing job aborted"), so its own message lies in a cause
    (classic) or in the server's stack trace (Spark Connect)."""
    texts: list[str] = []
    current, seen = error, 0
    while current is not None and seen < 10:
        seen += 1
        texts.append(_said(str, current))
        trace = _said(lambda e: e.getStackTrace(), current) if hasattr(current, "getStackTrace") else None
        if trace:
            texts.append(trace if isinstance(trace, str) else "\n".join(map(str, trace)))
        current = getattr(current, "cause", None) or current.__cause__
    return "\n".join(texts)


def check_helper(spark, where: str) -> None:
    """Refuse, in one line, a session whose driver lacks the JVM helper's data sources (a Spark
    Connect server started without its jars); ``where``: the server, for the message. Reads
    nothing (the source is resolved, not scanned)."""
    try:
        columns = spark.read.format("dedup-hbase-regions").options(tables="", quorum="-", port="0").load().columns
    except Exception as e:  # classic or Connect, the same text
        text = _jvm_text(e)
        if "DATA_SOURCE_NOT_FOUND" in text or "dedup-hbase-regions" in text:
            raise DedupError(f"the Spark session of {where} lacks dedup-hbase's JVM helper (the data source "
                             "dedup-hbase-regions is not on its class path): start the server with the helper's "
                             "jars on its driver's and executors' class path (scripts/connect-local does; "
                             "docs/spark.md#spark-connect)") from None
        raise
    if columns != ["table", "start"]:
        raise DedupError(f"the Spark session of {where} has another dedup-hbase-regions data source than "
                         f"this dedup-hbase's (its columns: {', '.join(columns)})")


def _said(read, error: BaseException):
    """What ``read(error)`` gives, or "" when the client cannot say (a py4j error's str()
    fails once its JVM is gone)."""
    try:
        return read(error) or ""
    except Exception:  # whatever the client raises
        return ""


class BulkLoadFailed(DedupError):
    """BulkLoadHFiles stopped for a reason other than the table's regions changing."""


class RegionsChanged(DedupError):
    """A table's regions split or merged between reading them and bulk-loading HFiles cut at
    them: the load stopped (what it loaded before is loaded again, cell for cell, by a load of
    files cut anew)."""

    def __init__(self, table: str):
        super().__init__(f"the regions of {table} changed (a split or a merge) while the HFiles were written: "
                         "not loaded (a load that splits HFiles can lose data, HBASE-30501); run the same command "
                         "again: it cuts the files at the regions of then")
        self.table = table
