"""A job's files through the DataFrame API alone, so that a job runs through Spark Connect too (a
Connect client cannot reach the server's file systems): the input files under a URI listed by
Spark's own file index, and the output files written by Spark under their final names through
the JVM helper's data source ``dedup-hbase-lines`` (jvm/ LinesSink): no file is moved or renamed
afterwards by the caller. The writers take a DataFrame of one string column, ``value``, one line
per row."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from ...errors import InvalidInput


def list_files(spark, uri: str) -> list[tuple[str, str | None]]:
    """The files under ``uri`` (a folder, walked down, or a file) on any file system the session
    reads: (uri, path relative to a folder given, or None for a file given), sorted by it; a
    name of a folder or file starting with "." or "_" is hidden and skipped. Listed by Spark's
    file index (``DataFrame.inputFiles`` of a ``binaryFile`` read, whose contents are never
    read: no job runs). A ``uri`` that is not there: ``InvalidInput``."""
    from pyspark.errors import AnalysisException

    try:
        found = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(uri)
                 .inputFiles())
    except AnalysisException as e:
        if "PATH_NOT_FOUND" not in f"{e.getCondition()}":
            raise
        raise InvalidInput(f"{uri}: no such file or folder") from None
    given = urlsplit(uri).path.rstrip("/")
    files: list[tuple[str, str | None]] = []
    for escaped in found:  # the file index gives URIs, escaped ("a b" as "a%20b")
        name = unquote(escaped)
        path = unquote(urlsplit(escaped).path)
        if path == given:
            files.append((name, None))
        elif path.startswith(given + "/"):
            relative = path[len(given) + 1:]
            if not any(part.startswith((".", "_")) for part in relative.split("/")):
                files.append((name, relative))
    return sorted(files, key=lambda f: f[1] or "")


def input_size(spark, uri: str) -> int:
    """The bytes of the files ``list_files`` finds under ``uri`` (0 when there is none), summed
    by a small job over Spark's file index (the files' contents are not read)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        found = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(uri)
                 .select(F.sum("length")).first()[0])
    except AnalysisException as e:
        if "PATH_NOT_FOUND" not in f"{e.getCondition()}":
            raise
        return 0  # said by the listing, in the job's own words
    return found or 0


def write_file(lines, target: str) -> None:
    """``lines`` as the one file ``target`` (replaced), written by one task in the order of the
    rows (``lines`` must have at most one non-empty partition); no rows: an empty file."""
    lines.select("value").write.format("dedup-hbase-lines").mode("append").option("file", target).save()


def write_folder(lines, folder: str, suffix: str) -> None:
    """``lines`` as ``folder/part-NNNNN<suffix>``, a file per non-empty partition, and
    ``_SUCCESS``; what ``folder`` held before is removed."""
    (lines.select("value").write.format("dedup-hbase-lines").mode("append")
     .options(folder=folder, suffix=suffix).save())


def remove(spark, target: str) -> None:
    """The file or folder ``target`` removed with what it holds (nothing there: nothing done), by
    the driver of the session (an empty write to ``dedup-hbase-lines``)."""
    (spark.createDataFrame([], "value string").write.format("dedup-hbase-lines").mode("append")
     .option("remove", target).save())
