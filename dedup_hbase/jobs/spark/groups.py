"""``dedup-hbase groups --engine spark``: groups.py's job as one Spark job, with the same output.

Data flow (D = the driver, E = the executors)::

    E  parse and fingerprint the inputs (records.py)                       [persisted]
    D  accounting and rejects in input order, as a Spark load (job.py)
    E  documents: pos = ordinal << 40 | line (the input order, groups.ORDER), id, simhash
    E  the distinct fingerprints and their first positions (pairs.py)      [persisted]
    E  pairs: the distinct fingerprints joined on (flag, segment) (pairs.py)
    E  components of the distinct fingerprints: large-star / small-star rounds
       (components.py; copies are not in them: a copy joins its first copy's group)
    E  group = the smallest pos of a component; its id and size by a window over the group
       (one shuffle); keep = pos == group
    E  OUT/documents/: Parquet, sorted by pos (the local engine's row order)
    E  OUT/groups.jsonl: one task writes the groups of two or more in order of their first
       member, each line built by Spark SQL as Python's json.dumps writes it (rows.json_string)

Only the counts of the summary come to the driver. Steps are timed in the log (INFO, logger
dedup_hbase.jobs.spark.job). ``pos`` holds a file's ordinal in its top 23 bits and the line in
the low 40: up to 8,388,607 files of up to 2^40 (1.1 * 10^12) lines each.
"""

from __future__ import annotations

import time

from ...errors import InvalidInput
from ..corpus import check_columns
from ..groups import DOCUMENTS, GROUPS_FILE, ORDER, GroupsOptions, GroupsReport, prepare_out
from ..interrupts import STOPS, Interrupted
from ..loader import LoadReport
from . import components, hadoop, inputs, pairs, records
from .job import SparkOptions, _account, _Clock, start_session
from .rows import json_string
from .session import stop as stop_session

LINE_BITS = 40


def spark_group_files(paths: list[str], out: str, options: GroupsOptions, spark: SparkOptions,
                      spec: dict, label: str, *, session=None) -> GroupsReport:
    """``groups.group_files`` as a Spark job: the same options, report and output. ``spec``
    and ``label``: the fingerprinter's (texts are fingerprinted in the executors).
    ``session``: a running SparkSession to use and leave running; else one is started and
    stopped. Raises ``Interrupted`` on SIGINT or SIGTERM."""
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    check_columns([p for p in paths if not inputs.is_uri(p)], options.fmt, options.fields, options.fingerprints)
    target = out if inputs.is_uri(out) else str(prepare_out(out).resolve())
    started = time.perf_counter()
    own = session is None
    try:
        if own:
            session = start_session(spark, "dedup-hbase groups", paths, jars=options.fingerprints)
        report = None
        try:
            report = _run(session, paths, target, options, spec, label)
        finally:
            if own:
                stop_session(session, done=report is not None)
    except STOPS as stop:
        raise Interrupted(stop, "the Spark job stopped; run the same command again (it starts over and "
                                "writes its output anew)") from None
    report.elapsed_s = time.perf_counter() - started
    return report


def _run(session, paths: list[str], out: str, options: GroupsOptions, spec: dict, label: str) -> GroupsReport:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    clock = _Clock()
    persisted: list = []
    fingerprinted = records.fingerprinted(session, paths, options.fmt, options.fields, spec, options.fingerprints,
                                          persisted).persist(StorageLevel.MEMORY_AND_DISK)
    counted = LoadReport()
    if options.rejects is not None:
        with open(options.rejects, "w", encoding="utf-8") as rejects:
            _account(fingerprinted, counted, rejects, label, options.fingerprints)
    else:
        _account(fingerprinted, counted, None, label, options.fingerprints)
    report = GroupsReport(read=counted.read, documents=counted.read - counted.rejected, rejected=counted.rejected,
                          rejected_by_reason=counted.rejected_by_reason, k=options.k, engine="spark")
    scheme = options.scheme_for(report.documents)
    report.scheme = scheme.name
    file_order, line_order = ORDER
    pos = F.shiftleft(F.col(file_order).cast("long"), LINE_BITS).bitwiseOR(F.col(line_order))
    docs = (fingerprinted.where(F.col("error").isNull()).select(pos.alias("pos"), "id", "simhash")
            .persist(StorageLevel.MEMORY_AND_DISK))
    docs.count()
    clock("read, fingerprint, account")
    fingerprinted.unpersist()
    for frame in persisted:
        frame.unpersist()
    # components of the distinct fingerprints only: a copy joins its group through its first copy
    firsts = pairs.distinct(docs.select("pos", "simhash")).persist(StorageLevel.MEMORY_AND_DISK)
    found = components.roots(pairs.distinct_pairs(firsts, scheme, options.k))
    clock("pairs and components")
    labeled = (docs.join(firsts, "simhash").join(found, F.col("first") == F.col("node"), "left")
               .select("pos", "id", "simhash", F.coalesce("root", "first").alias("group_pos")))
    group = Window.partitionBy("group_pos")  # a group's rows: its size and its first member's id, no join
    keep = F.col("pos") == F.col("group_pos")
    rows = (labeled.select("pos", "id", F.lower(F.lpad(F.hex("simhash"), 16, "0")).alias("simhash"),
                           F.max(F.when(keep, F.col("id"))).over(group).alias("group"),
                           F.count(F.lit(1)).over(group).alias("size"), keep.alias("keep"), "group_pos")
            .persist(StorageLevel.MEMORY_AND_DISK))
    rows.orderBy("pos").drop("pos", "group_pos").write.mode("overwrite").parquet(f"{out}/{DOCUMENTS}")
    clock("groups, Parquet")
    counts = rows.where(F.col("keep")).agg(F.count(F.lit(1)).alias("groups"),
                                           F.sum(F.when(F.col("size") > 1, 1).otherwise(0)).alias("multi")).first()
    report.groups, report.multi_groups = counts["groups"], counts["multi"] or 0
    _write_groups_file(session, rows.where(F.col("size") > 1), out)
    clock("groups.jsonl")
    rows.unpersist()
    firsts.unpersist()
    docs.unpersist()
    return report


def _write_groups_file(session, members, out: str) -> None:
    """``OUT/groups.jsonl`` from the rows of groups of two or more: one line per group in the
    order of its first member, written by one task, byte for byte ``groups.group_line``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    grouped = members.groupBy("group_pos").agg(F.first("size").alias("size"),
                                               F.sort_array(F.collect_list(F.struct("pos", "id"))).alias("m"))
    numbered = grouped.withColumn("n", F.row_number().over(Window.orderBy("group_pos")))
    ids = F.array_join(F.transform("m", lambda m: json_string(m["id"])), ", ")
    line = F.concat(F.lit('{"group": '), F.col("n").cast("string"), F.lit(', "size": '),
                    F.col("size").cast("string"), F.lit(', "ids": ['), ids, F.lit("]}"))
    folder = f"{out}/_{GROUPS_FILE}.parts"
    (numbered.repartition(1).sortWithinPartitions("group_pos").select(line.alias("value"))
     .write.mode("overwrite").text(folder))
    hadoop.single_file(session, folder, f"{out}/{GROUPS_FILE}")
