"""A job's output files written by Spark under their final names, through the JVM helper's
data source ``dedup-hbase-lines`` (jvm/ LinesSink), reached by the DataFrame API alone: no file
is moved or renamed afterwards by the caller (a Spark Connect client cannot reach the server's
file systems). Each takes a DataFrame of one string column, ``value``, one line per row."""

from __future__ import annotations


def write_file(lines, target: str) -> None:
    """``lines`` as the one file ``target`` (replaced), written by one task in the order of the
    rows (``lines`` must have at most one non-empty partition); no rows: an empty file."""
    lines.select("value").write.format("dedup-hbase-lines").mode("append").option("file", target).save()


def write_folder(lines, folder: str, suffix: str) -> None:
    """``lines`` as ``folder/part-NNNNN<suffix>``, a file per non-empty partition, and
    ``_SUCCESS``; what ``folder`` held before is removed."""
    (lines.select("value").write.format("dedup-hbase-lines").mode("append")
     .options(folder=folder, suffix=suffix).save())
