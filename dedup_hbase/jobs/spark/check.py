"""``check --engine spark``: every input document's matches in an HBase index, as one Spark
job that reads the index in bulk from the executors, joined on the scan prefix.

Data flow (D = the driver, E = the executors' Python workers, J = the executors' JVMs)::

    E  parse and fingerprint the input (records.py, as a Spark load)      [persisted]
    J  the distinct query fingerprints, exploded to (query, scan prefix), one row per flag;
       range-partitioned by prefix (a task holds a contiguous range of prefixes, ~ a region)
       and sorted within each task
    J  the probes written to DIR/_lookup/ (a file per task, removed at the end)
    J  per task (hbase.index_runs: the helper's data source IndexLookup, HBase's own
       client): its file's prefixes read with one multi-range scan per ``SCAN_PROBES`` probes,
       each index row (one indexed fingerprint) compared once with each query of its
       prefix; out: (query, run) rows with the run's size and its first ``max_matches`` ids
       (every id with a TTL)
    E  with a TTL only: the documents of the runs older than the TTL left out (one read of
       their document rows, ``retention.unexpired_runs``)
    E  per query (hash-partitioned, sorted): the flags' runs merged (each fingerprint once),
       then ``candidates.bounded``, as a local lookup: ids deduplicated keeping the nearest,
       at most ``max_matches`` by (distance, id), and the match count (index entries: the
       sum of the runs' sizes)
    J  joined back to the documents by fingerprint: the records of ``check --json``, written
       as JSON lines (``DIR/json/part-*.jsonl``) and Parquet (``DIR/parquet/``)
    D  the summary (one aggregate)

Each query fingerprint is looked up once however many documents carry it, and each indexed
fingerprint is compared once however many documents it holds (skew: 50,000 copies of one
text cost one comparison per query). No call per document: one scan per ``SCAN_PROBES``
probes of a task. A run travels cut to its first ``max_matches`` ids with its size: a query's
merge holds at most ``max_matches`` ids per fingerprint within k (with a TTL every id, which
the expiry reads, as a local lookup does).

``add_new``: the documents that match nothing in the index (but themselves) nor an earlier
document of the input are then indexed by HFiles (bulk.py), as ``load --skip-near-dups``
of the same input in one batch would.
"""

from __future__ import annotations

from ...errors import InvalidInput
from ...index.candidates import Run, bounded
from ...index.index import Index
from ...index.schema import load_schema
from ...text.fingerprint import to_hex
from ..options import CheckOptions, SparkOptions, uri_of
from ..outputs import CHECK_JSON, CHECK_PARQUET
from ..reports import CheckReport
from . import files, hbase, records, rows, signed, stages
from .harness import SparkJob, spark_job

MATCH_TYPE = "array<struct<id:string,simhash:string,distance:int>>"
MERGED_SCHEMA = f"query long, matches {MATCH_TYPE}, match_count long"
PROBES_PER_TASK = 200_000  # (query, prefix) rows per lookup task, at least
SCAN_PROBES = 200_000  # (query, prefix) rows read with one scan (bounds a task's memory)
CHUNK = 50_000  # rows per output batch of the Python steps
LOOKUP = "_lookup"  # the probes' folder in the output folder (hidden: "_"), while the job runs
STOPPED = "run the same command again (it starts over and rewrites its output)"


def spark_check_files(index: Index, paths: list[str], options: CheckOptions, spark: SparkOptions = SparkOptions(),
                      *, session=None) -> CheckReport:
    """Every record of ``paths`` looked up in ``index`` (an HBase store) as a Spark job; the
    check records (outputs.py) written under ``options.out``; with ``options.add_new`` the new
    documents then indexed (adding.py). ``session``: a running SparkSession to use and leave
    running. Raises ``Interrupted`` on SIGINT or SIGTERM."""
    if index.store.hfile_target() is None:  # first: no --out makes this store one it reads
        raise InvalidInput("check engine=spark reads an HBase index (hbase://...); use the local engine here",
                           arguments=("engine",))
    if options.out is None:
        raise InvalidInput("check engine=spark writes its records to a folder: give out=DIR", arguments=("engine", "out"))
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    k = index.k if options.k is None else index.scheme.check_k(options.k)
    if options.add_new and k != index.k:
        raise InvalidInput(f"add_new=True finds near-duplicates within the index's k ({index.k}), not k={k}",
                           arguments=("add_new", "k"))
    index.spec.check_inputs(options.fingerprints, lookups=True)
    hbase.ZooKeeper.of(index.store.hfile_target(), index.store.url)  # refused before a session starts
    options.check_inputs(paths)
    with spark_job("dedup-hbase check", spark, paths, jars=True, session=session, then=STOPPED) as job:
        fingerprinted, helpers = records.fingerprinted(job, paths, options, stages.job_spec(index, lookups=True))
        staged = f"{uri_of(options.out)}/{LOOKUP}"
        answers = answer_records(job, index, fingerprinted, k, options.max_matches, staged)
        job.clock("read, fingerprint, plan")
        answers = job.persist(answers)
        report = write_answers(job.session, answers, uri_of(options.out), job.clock)
        report.out = options.out
        job.unpersist(*helpers)
        if options.add_new:
            from .adding import add_new

            report.added, report.skipped = add_new(job, index, fingerprinted, answers, spark.staging)
        job.unpersist(answers, fingerprinted)
        files.remove(job.session, staged)
    report.elapsed_s = job.elapsed()
    return report


def answer_records(job: SparkJob, index: Index, fingerprinted, k: int, max_matches: int | None, staged: str):
    """Per input record (ordinal, line, source, id, simhash, error): ``simhash_hex``,
    ``matches`` (by distance, id; null for a rejected record) and ``match_count`` (set when
    there are more than ``matches``). ``staged``: the folder of the lookups' probes, replaced
    (the caller removes it once the answers are no longer read: ``files.remove``)."""
    from pyspark.sql import functions as F

    spark = job.session
    good = F.col("error").isNull()
    if index.lookup_options:  # several signatures or probes: signed.py
        merged = signed.signed_matches(job, index, fingerprinted, k, max_matches, staged, PROBES_PER_TASK,
                                       SCAN_PROBES)
        joined = fingerprinted.withColumn("key", F.when(good, signed.lookup_key())).join(merged, "key", "left")
        return _answer_columns(joined, good, signed.SIGNED_MATCH_TYPE)
    queries = fingerprinted.where(good).select(F.col("simhash").alias("query")).distinct()
    flags = range(1, len(index.scheme.flags) + 1)
    prefix = F.explode(F.array(*[F.shiftleft(rows.segment(index.scheme, f, F.col("query")), 8).bitwiseOR(F.lit(f))
                                 for f in flags]))
    probes = queries.select("query", prefix.alias("prefix"))
    tasks = max(2 * job.parallelism, -(-probes.count() // PROBES_PER_TASK))
    target = index.store.hfile_target()
    runs = hbase.index_runs(spark, hbase.ZooKeeper.of(target, index.store.url), target.tables["index"],
                           load_schema()["family"], probes.repartitionByRange(tasks, "prefix").sortWithinPartitions(
                               "prefix"), staged, len(flags), k, None if index.ttl else max_matches, SCAN_PROBES)
    if index.ttl:
        runs = runs.mapInArrow(stages.expire_runs(index.store.url), hbase.RUNS_SCHEMA)
    merged = runs.repartition("query").sortWithinPartitions("query").mapInArrow(
        merge_runs(max_matches), MERGED_SCHEMA)
    joined = fingerprinted.join(merged, fingerprinted["simhash"] == merged["query"], "left")
    return _answer_columns(joined, good, MATCH_TYPE)


def _answer_columns(joined, good, match_type: str):
    from pyspark.sql import functions as F

    return joined.select(
        "ordinal", "line", "source", "id", "simhash", "error",
        F.when(good, F.lower(F.lpad(F.hex("simhash"), 16, "0"))).alias("simhash_hex"),
        F.when(good, F.coalesce("matches", F.array().cast(match_type))).alias("matches"),
        F.col("match_count"))


def write_answers(spark, answers, out: str, clock=lambda step: None) -> CheckReport:
    """``answers`` as the check records (outputs.py): JSON lines under ``out/json``, Parquet
    under ``out/parquet`` (both replaced); the counts."""
    from pyspark.sql import functions as F

    good = F.col("error").isNull()
    record = F.when(good, F.to_json(F.struct(
        "id", F.col("simhash_hex").alias("simhash"), "matches", "match_count"))).otherwise(
        F.to_json(F.struct("id", "source", "line", "error", F.lit(None).cast("string").alias("simhash"),
                           F.array().alias("matches")), {"ignoreNullFields": "false"}))  # outputs.check_record's keys
    files.write_folder(answers.select(record.alias("value")), f"{out}/{CHECK_JSON}", ".jsonl")
    clock("look up, merge, JSON lines")
    answers.select("id", F.col("simhash_hex").alias("simhash"), "matches", "match_count", "source", "line",
                   "error").write.mode("overwrite").parquet(f"{out}/{CHECK_PARQUET}")
    counts = answers.agg(F.count(F.lit(1)), F.sum(F.when(good & (F.size("matches") > 0), 1).otherwise(0)),
                         F.sum(F.when(good, 0).otherwise(1))).collect()[0]
    clock("Parquet, summary")
    return CheckReport(read=counts[0], with_matches=counts[1] or 0, rejected=counts[2] or 0)


# -- in the executors' Python workers ------------------------------------------------------


def merge_runs(max_matches: int | None):
    """(query, run) rows, sorted by query, each run's first ``max_matches`` ids (or all) and
    its size -> per query its matches (MERGED_SCHEMA): each indexed fingerprint once (it is
    found under every flag it shares), then ``candidates.bounded``, as a local lookup answers;
    the match count the sum of the runs' sizes (``candidates.entries``). A run's first
    ``max_matches`` ids hold every id ``bounded`` lists: memory per query is in proportion to
    ``max_matches`` and the fingerprints within k, not to the copies."""

    def run(batches):
        import pyarrow as pa

        current, runs = None, {}
        out: list[tuple] = []
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("query", "simhash", "distance", "total", "ids")]
            for query, simhash, distance, total, ids in zip(*cols):
                if query != current:
                    if current is not None:
                        out.append(_merged(current, runs, max_matches))
                    current, runs = query, {}
                if simhash not in runs:
                    runs[simhash] = (Run(distance, simhash & ((1 << 64) - 1), ids), total)
            if len(out) >= CHUNK:
                yield _merged_batch(pa, out)
                out = []
        if current is not None:
            out.append(_merged(current, runs, max_matches))
        if out:
            yield _merged_batch(pa, out)
    return run


def _merged(query: int, runs: dict, limit: int | None) -> tuple:
    found, _ = bounded(sorted((run for run, _ in runs.values()), key=lambda r: (r.distance, r.simhash)), limit)
    count = sum(total for _, total in runs.values())
    matches = [{"id": i, "simhash": to_hex(s), "distance": d} for i, s, d in found]
    return query, matches, count if count > len(matches) else None


def _merged_batch(pa, out: list[tuple]):
    match = pa.struct([("id", pa.string()), ("simhash", pa.string()), ("distance", pa.int32())])
    return pa.RecordBatch.from_arrays(
        [pa.array([o[0] for o in out], pa.int64()), pa.array([o[1] for o in out], pa.list_(match)),
         pa.array([o[2] for o in out], pa.int64())], names=["query", "matches", "match_count"])
