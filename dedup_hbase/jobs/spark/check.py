"""``check --engine spark``: every input document's matches in an HBase index, as one Spark
job that reads the index in bulk from the executors, joined on the scan prefix.

Data flow (D = the driver, E = the executors' Python workers, J = the executors' JVMs)::

    E  parse and fingerprint the input (records.py, as a Spark load)      [persisted]
    J  the distinct query fingerprints, exploded to (query, scan prefix), one row per flag;
       range-partitioned by prefix (a task holds a contiguous range of prefixes, ~ a region)
       and sorted within each task
    J  per task (hadoop.index_runs: the helper's IndexLookup, HBase's own client, no
       gateway): its prefixes read with one multi-range scan per ``SCAN_PROBES`` probes,
       each index row (one indexed fingerprint) compared once with each query of its
       prefix; out: (query, run) rows with every id of the run
    E  with a TTL only: the documents of the runs older than the TTL left out (one read of
       their document rows, ``retention.unexpired_runs``)
    E  per query (hash-partitioned, sorted): the flags' runs merged (each fingerprint once),
       then ``candidates.bounded``, as a local lookup: ids deduplicated keeping the nearest,
       at most ``max_matches`` by (distance, id), and the match count (distinct documents)
    J  joined back to the documents by fingerprint: the records of ``check --json``, written
       as JSON lines (``DIR/json/part-*.jsonl``) and Parquet (``DIR/parquet/``)
    D  the summary (one aggregate)

Each query fingerprint is looked up once however many documents carry it, and each indexed
fingerprint is compared once however many documents it holds (skew: 50,000 copies of one
text cost one comparison per query). No call per document: one scan per ``SCAN_PROBES``
probes of a task. A run's ids travel whole to the merge: the match count is of distinct
documents, and an id under two fingerprints (a stale row) may lie past any cut of a run, so a
query's merge holds every id of its runs (memory in proportion to the copies).

``add_new``: the documents that match nothing in the index (but themselves) nor an earlier
document of the input are then indexed by HFiles (bulk.py), as ``load --skip-near-dups``
of the same input in one batch would.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ...errors import InvalidInput
from ...index.candidates import Run, bounded
from ...index.index import Index
from ...index.retention import unexpired_runs
from ...index.schema import load_schema
from ...text.fingerprint import to_hex
from ..corpus import Fields, check_columns
from ..interrupts import STOPS, Interrupted
from . import hadoop, inputs, records, rows, stages
from .job import SparkOptions, _Clock, start_session
from .session import stop as stop_session

MATCH_TYPE = "array<struct<id:string,simhash:string,distance:int>>"
MERGED_SCHEMA = f"query long, matches {MATCH_TYPE}, match_count long"
PROBES_PER_TASK = 200_000  # (query, prefix) rows per lookup task, at least
SCAN_PROBES = 200_000  # (query, prefix) rows read with one scan (bounds a task's memory)
CHUNK = 50_000  # rows per output batch of the Python steps


@dataclass(frozen=True)
class CheckOptions:
    """What ``check --engine spark`` reads and writes: ``out`` the output folder or URI,
    ``k`` (None: the index's), ``max_matches`` per document (None: all), ``add_new``."""

    out: str
    fmt: str = "auto"
    fields: Fields = Fields()
    fingerprints: bool = False
    k: int | None = None
    max_matches: int | None = 1000
    add_new: bool = False


@dataclass
class CheckReport:
    """The summary of a check: documents read, those with a match, those rejected; with
    ``add_new`` the documents indexed and those left out as near-duplicates."""

    documents: int = 0
    with_matches: int = 0
    rejected: int = 0
    added: int | None = None
    skipped: int | None = None
    out: str = ""
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        d = {"documents": self.documents, "with_matches": self.with_matches, "rejected": self.rejected}
        if self.added is not None:
            d["added"], d["near_duplicates_skipped"] = self.added, self.skipped
        return {**d, "out": self.out, "elapsed_s": round(self.elapsed_s, 3)}

    def summary(self) -> str:
        added = (f", added {self.added:,} new (skipped {self.skipped:,} near-duplicates)" if self.added is not None
                 else "")
        return (f"checked {self.documents:,} documents: {self.with_matches:,} with matches, "
                f"{self.rejected:,} rejected{added}; records in {self.out}")


def spark_check_files(index: Index, paths: list[str], options: CheckOptions, spark: SparkOptions = SparkOptions(),
                      *, session=None) -> CheckReport:
    """Every record of ``paths`` looked up in ``index`` (an HBase store) as a Spark job; the
    records of ``check --json`` written under ``options.out``. ``session``: a running
    SparkSession to use and leave running. Raises ``Interrupted`` on SIGINT or SIGTERM."""
    if index.store.hfile_target() is None:
        raise InvalidInput("check --engine spark reads an HBase index (hbase://...); use the local engine here")
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    if options.max_matches is not None and (isinstance(options.max_matches, bool) or options.max_matches < 1):
        raise InvalidInput(f"max_matches is a whole number >= 1, not {options.max_matches!r}")
    k = index.k if options.k is None else index.scheme.check_k(options.k)
    if options.add_new and k != index.k:
        raise InvalidInput(f"--add-new finds near-duplicates within the index's k ({index.k}), not --k {k}")
    hadoop.ZooKeeper.of(index.store.hfile_target(), index.store.url)  # refused before a session starts
    check_columns([p for p in paths if not inputs.is_uri(p)], options.fmt, options.fields, options.fingerprints)
    try:
        return _run(index, paths, options, k, spark, session)
    except STOPS as stop:
        raise Interrupted(stop, "the Spark job stopped; run the same command again (it starts over and "
                                "rewrites its output)") from None


def _run(index: Index, paths: list[str], options: CheckOptions, k: int, spark: SparkOptions, session) -> CheckReport:
    started = time.perf_counter()
    clock = _Clock()
    own_session = session is None
    if own_session:
        session = start_session(spark, "dedup-hbase check", paths, jars=True)
        clock("spark session")
    done = False
    try:
        from pyspark import StorageLevel

        persisted: list = []
        fingerprinted = records.fingerprinted(session, paths, options.fmt, options.fields, index.fingerprinter.spec,
                                              options.fingerprints, persisted).persist(StorageLevel.MEMORY_AND_DISK)
        answers = answer_records(session, index, fingerprinted, k, options.max_matches)
        clock("read, fingerprint, plan")
        answers = answers.persist(StorageLevel.MEMORY_AND_DISK)
        report = write_answers(session, answers, output_uri(options.out), clock)
        report.out = options.out
        for frame in persisted:
            frame.unpersist()
        if options.add_new:
            from .adding import add_new

            report.added, report.skipped = add_new(session, index, fingerprinted, answers, spark.staging, clock)
        answers.unpersist()
        fingerprinted.unpersist()
        done = True
    finally:
        if own_session:
            stop_session(session, done)
    report.elapsed_s = time.perf_counter() - started
    return report


def output_uri(out: str) -> str:
    """The output folder as a URI (a local path made absolute)."""
    return out if inputs.is_uri(out) or out.startswith("file:") else "file://" + os.path.abspath(out)


def answer_records(spark, index: Index, fingerprinted, k: int, max_matches: int | None):
    """Per input record (ordinal, line, source, id, simhash, error): ``simhash_hex``,
    ``matches`` (by distance, id; null for a rejected record) and ``match_count`` (set when
    there are more than ``matches``)."""
    from pyspark.sql import functions as F

    good = F.col("error").isNull()
    queries = fingerprinted.where(good).select(F.col("simhash").alias("query")).distinct()
    flags = range(1, len(index.scheme.flags) + 1)
    prefix = F.explode(F.array(*[F.shiftleft(rows.segment(index.scheme, f, F.col("query")), 8).bitwiseOR(F.lit(f))
                                 for f in flags]))
    probes = queries.select("query", prefix.alias("prefix"))
    tasks = max(2 * spark.sparkContext.defaultParallelism, -(-probes.count() // PROBES_PER_TASK))
    target = index.store.hfile_target()
    runs = hadoop.index_runs(spark, hadoop.ZooKeeper.of(target, index.store.url), target.tables["index"],
                             load_schema()["family"], probes.repartitionByRange(tasks, "prefix").sortWithinPartitions(
                                 "prefix"), len(flags), k, SCAN_PROBES)
    if index.ttl:
        runs = runs.mapInArrow(expire_runs(index.store.url), hadoop.RUNS_SCHEMA)
    merged = runs.repartition("query").sortWithinPartitions("query").mapInArrow(
        merge_runs(max_matches), MERGED_SCHEMA)
    joined = fingerprinted.join(merged, fingerprinted["simhash"] == merged["query"], "left")
    return joined.select(
        "ordinal", "line", "source", "id", "simhash", "error",
        F.when(good, F.lower(F.lpad(F.hex("simhash"), 16, "0"))).alias("simhash_hex"),
        F.when(good, F.coalesce("matches", F.array().cast(MATCH_TYPE))).alias("matches"),
        F.col("match_count"))


def write_answers(spark, answers, out: str, clock=lambda step: None) -> CheckReport:
    """``answers`` as the records of ``check --json``: JSON lines under ``out/json``, Parquet
    under ``out/parquet`` (both replaced); the counts."""
    from pyspark.sql import functions as F

    good = F.col("error").isNull()
    record = F.when(good, F.to_json(F.struct(
        "id", F.col("simhash_hex").alias("simhash"), "matches", "match_count"))).otherwise(
        F.to_json(F.struct("id", "source", "line", "error"), {"ignoreNullFields": "false"}))
    answers.select(record.alias("value")).write.mode("overwrite").text(f"{out}/json")
    hadoop.rename_suffix(spark, f"{out}/json", ".txt", ".jsonl")
    clock("look up, merge, JSON lines")
    answers.select("id", F.col("simhash_hex").alias("simhash"), "matches", "match_count", "source", "line",
                   "error").write.mode("overwrite").parquet(f"{out}/parquet")
    counts = answers.agg(F.count(F.lit(1)), F.sum(F.when(good & (F.size("matches") > 0), 1).otherwise(0)),
                         F.sum(F.when(good, 0).otherwise(1))).collect()[0]
    clock("Parquet, summary")
    return CheckReport(counts[0], counts[1] or 0, counts[2] or 0)


# -- in the executors' Python workers ------------------------------------------------------


def expire_runs(url: str):
    """(query, run) batches (RUNS_SCHEMA) -> the same without the documents older than the
    index's TTL (runs left empty dropped)."""

    def run(batches):
        import pyarrow as pa

        index = stages._index(url)
        for batch in batches:
            queries, simhashes, distances, ids = (batch.column(n).to_pylist()
                                                  for n in ("query", "simhash", "distance", "ids"))
            found = unexpired_runs(index.store, [[Run(d, s, i)] for d, s, i in zip(distances, simhashes, ids)],
                                   index.ttl)
            kept = [(q, runs[0]) for q, runs in zip(queries, found) if runs]
            cols = [[q for q, _ in kept], [r.simhash for _, r in kept], [r.distance for _, r in kept],
                    [list(r.ids) for _, r in kept]]
            types = [pa.int64(), pa.int64(), pa.int32(), pa.list_(pa.string())]
            yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types)],
                                             names=["query", "simhash", "distance", "ids"])
    return run


def merge_runs(max_matches: int | None):
    """(query, run) rows, sorted by query, every id of each run -> per query its matches
    (MERGED_SCHEMA): each indexed fingerprint once (it is found under every flag it
    shares), then ``candidates.bounded``, as a local lookup answers."""

    def run(batches):
        import pyarrow as pa

        current, runs = None, {}
        out: list[tuple] = []
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("query", "simhash", "distance", "ids")]
            for query, simhash, distance, ids in zip(*cols):
                if query != current:
                    if current is not None:
                        out.append(_merged(current, runs, max_matches))
                    current, runs = query, {}
                if simhash not in runs:
                    runs[simhash] = Run(distance, simhash & ((1 << 64) - 1), ids)
            if len(out) >= CHUNK:
                yield _merged_batch(pa, out)
                out = []
        if current is not None:
            out.append(_merged(current, runs, max_matches))
        if out:
            yield _merged_batch(pa, out)
    return run


def _merged(query: int, runs: dict, limit: int | None) -> tuple:
    found, count = bounded(sorted(runs.values(), key=lambda r: (r.distance, r.simhash)), limit)
    matches = [{"id": i, "simhash": to_hex(s), "distance": d} for i, s, d in found]
    return query, matches, count if count > len(matches) else None


def _merged_batch(pa, out: list[tuple]):
    match = pa.struct([("id", pa.string()), ("simhash", pa.string()), ("distance", pa.int32())])
    return pa.RecordBatch.from_arrays(
        [pa.array([o[0] for o in out], pa.int64()), pa.array([o[1] for o in out], pa.list_(match)),
         pa.array([o[2] for o in out], pa.int64())], names=["query", "matches", "match_count"])
