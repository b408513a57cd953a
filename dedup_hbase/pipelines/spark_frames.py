"""The Arrow batch API (arrow.py) for Spark DataFrames, in a Spark job of your own, classic or
through Spark Connect (the DataFrame API alone): a DataFrame in, a DataFrame out, the input's
columns kept and the calls' columns added. Each call is a few lines over the function that
already has its behaviour:

* ``fingerprints(df, index=None)``: ``arrow.fingerprints`` on each batch in the Python workers
  (``mapInArrow``), lazy like any transformation;
* ``groups(df, k=3)``: the Spark groups job's exact groups (jobs/spark/groups.py ``group_rows``:
  near pairs by joins, components, the spanning tree of ``via``);
* ``check(df, index, staging=...)``: ``check --engine spark``'s bulk read of an HBase index
  (jobs/spark/check.py ``answer_records``, the JVM helper's data source ``dedup-hbase-lookup``).

Spark has no unsigned long: ``simhash`` (and ``simhash_leadN``, ``sketch``) are the 64 bits as a
signed ``long`` (two's complement: the bits of arrow.py's uint64; ``F.lower(F.lpad(F.hex(c), 16,
"0"))`` gives the hex the CLI prints). "First" (a group's kept row, ``via``'s earlier row) is by
the DataFrame's row order: partition, then row within it (``monotonically_increasing_id``).

What the calls do not do: a row that cannot be fingerprinted (a null or featureless text, a
null or empty id) is not an error of the call: its ``error`` says why, it matches nothing and is
in no group. ``groups`` and ``check`` run their Spark jobs when called and return a
materialized DataFrame (``localCheckpoint``: its rows in the executors' block managers, lost
with an executor), not a lazy one. ``groups`` uses no index and writes nothing; ``check``
writes nothing to the index (no ``--add-new``: that is ``dedup-hbase check --engine spark
--add-new``) and needs the JVM helper's jars in the session (``session.helper_jars()``;
``scripts/connect-local`` starts a Connect server with them).
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import InvalidInput
from ..index.index import Index
from ..jobs.corpus import Record
from ..jobs.options import GroupsOptions, uri_of
from ..jobs.spark import check as spark_check
from ..jobs.spark import files, stages
from ..jobs.spark import groups as spark_groups
from ..jobs.spark.harness import SparkJob
from ..stores import open_store
from ..text.native import NO_TEXT
from .arrow import default_fingerprinter
from .columns import ERROR, SIMHASH, id_errors, short_rule

ROW = "_dedup_row"  # a row's place in the DataFrame's order, while a call runs
SOURCE = "dataframe"  # the source of a row's record (its line: its place)
GROUP_COLUMNS = ("group", "size", "keep", "via", "distance")
CHECK_COLUMNS = (SIMHASH, ERROR, "matches", "match_count")


def fingerprints(df: Any, index: str | None = None, *, id_column: str = "id", text_column: str = "text") -> Any:
    """``df`` with ``simhash`` (long) and ``error`` per row; with ``index`` (a store URL, read on
    the driver only) its fingerprinter, its other signatures (``simhash_leadN``) and ``sketch``
    when it keeps them: ``arrow.fingerprints`` of each batch in the Python workers, the same
    bits. Lazy; reads no store in the workers and writes none."""
    import pyspark.sql.types as T

    if index is None:
        names, spec = _added(df, None, id_column, text_column), dict(default_fingerprinter().spec)
    else:
        with open_store(index) as store:
            opened = Index.open(store)
            names, spec = _added(df, opened, id_column, text_column), stages.job_spec(opened)
    longs = [n for n in names if n != ERROR]
    schema = T.StructType([*df.schema.fields, *(T.StructField(n, T.LongType()) for n in longs),
                           T.StructField(ERROR, T.StringType())])
    return df.mapInArrow(_fingerprint_batches(spec, id_column, text_column, longs), schema)


def groups(df: Any, *, id_column: str = "id", text_column: str = "text", k: int = 3,
           scheme: str | None = None, short_texts: str = "on") -> Any:
    """``fingerprints(df)`` with the groups of ``dedup-hbase groups --engine spark`` at ``k``
    bits (``scheme``: its blocks, default by the rows' number) and ``short_texts`` (``"on"``, as
    there by default: two rows of which either text is short are near only by their words,
    text/units.py; ``"off"``: by their bits alone): ``group`` (the id of its first row),
    ``size``, ``keep`` (the first row of each group), ``via`` and ``distance`` (the row it was
    joined through); null for a row with an error. Exact: every pair the rule joins within ``k``
    bits is in one group. Ids are compared as strings. Runs its jobs now."""
    import pyspark.sql.types as T
    from pyspark.sql import functions as F

    options = GroupsOptions(k=k, scheme=scheme, short=short_rule(short_texts))  # refuses a bad k or scheme
    job = SparkJob(df.sparkSession)
    printed = job.persist(fingerprints(df, id_column=id_column, text_column=text_column)
                          .withColumn(ROW, F.monotonically_increasing_id()))
    docs = printed.where(F.col(ERROR).isNull()).select(
        F.col(ROW).alias("pos"), F.col(id_column).cast("string").alias("id"), SIMHASH,
        *([F.col(text_column).alias("kept")] if options.short else []))
    if options.short:  # each text's sketch and kept text under the rule (units.text_sketches), the text let go
        schema = T.StructType([*docs.schema.fields[:3], T.StructField("sketch", T.LongType()),
                               T.StructField("kept", T.StringType())])
        docs = docs.mapInArrow(_kept_batches, schema)
    # computed now and cut from its lineage: the plans group_rows builds over it stay within the
    # depth a Spark Connect server decodes (the rule's joins and unions are deep already)
    docs = docs.localCheckpoint()
    documents = docs.count()
    rows, helpers = spark_groups.group_rows(job, docs, [SIMHASH], options.short is not None,
                                            options.scheme_for(documents), options.k, None, options.short, ("body",),
                                            documents=documents)
    found = rows.select(F.col("pos").alias(ROW), *GROUP_COLUMNS)
    return _materialized(job, printed.join(found, ROW, "left").orderBy(ROW).drop(ROW), rows, *helpers, printed)


def _kept_batches(batches):
    """mapInArrow: (pos, id, simhash, kept: the text) -> (pos, id, simhash, sketch, kept): the
    sketch and kept text of the short-text rule (``units.text_sketches``; a long text's sketch 0
    and kept "")."""
    import pyarrow as pa

    from dedup_hbase.text.units import text_sketches

    for batch in batches:
        sketches, kepts = text_sketches(batch.column("kept").to_pylist())
        yield pa.RecordBatch.from_arrays([*batch.columns[:3], pa.array(sketches, pa.uint64()).cast(pa.int64(), safe=False),
                                          pa.array(kepts, pa.string())], names=[*batch.schema.names[:3], "sketch", "kept"])


def check(df: Any, index: str, *, staging: str, id_column: str = "id", text_column: str = "text",
          k: int | None = None, max_matches: int | None = 1000) -> Any:
    """``df`` with each row's ``simhash``, ``error``, ``matches`` in the HBase index at the store
    URL ``index`` (id, distance; within ``k`` bits, default the index's; at most
    ``max_matches``, the nearest first by (distance, id); None: all) and ``match_count`` (how
    many there are in all), null for a row with an error: ``arrow.check``'s answers, found as
    ``check --engine spark`` finds them, the index read in bulk by the executors. ``staging``:
    a folder or URI every executor reaches (the probes are written to a new folder in it,
    ``dedup-hbase-lookup-*``, removed when the call returns; a call that fails leaves it). Does
    not compare the rows with each other; writes nothing to the index. Runs its jobs now."""
    from pyspark.sql import functions as F

    with open_store(index) as store:
        if store.hfile_target() is None:
            raise InvalidInput(f"{index}: check reads an HBase index (hbase://...) in bulk", arguments=("index",))
        opened = Index.open(store)
        _added(df, opened, id_column, text_column)  # the arguments, as fingerprints checks them
        k = opened.k if k is None else opened.scheme.check_k(k)
        spec = stages.job_spec(opened, lookups=True)
        job = SparkJob(df.sparkSession)
        numbered = job.persist(df.withColumn(ROW, F.monotonically_increasing_id()))
        records = job.persist(numbered.select(F.col(id_column).alias("id"), F.col(text_column).alias("text"), ROW)
                              .mapInArrow(_records(spec), stages.FINGERPRINTED_SCHEMA))
        staged = f"{uri_of(staging).rstrip('/')}/dedup-hbase-lookup-{uuid.uuid4().hex}"
        answers = spark_check.answer_records(job, opened, records, k, max_matches, staged)
        matches = F.transform("matches", lambda m: F.struct(m["id"].alias("id"), m["distance"].alias("distance")))
        found = answers.select(F.col("line").alias(ROW), SIMHASH, ERROR, matches.alias("matches"),
                               F.when(F.col(ERROR).isNull(), F.coalesce("match_count", F.size("matches")))
                               .alias("match_count"))
        result = _materialized(job, numbered.join(found, ROW, "left").orderBy(ROW).drop(ROW), records, numbered)
        files.remove(df.sparkSession, staged)
    return result


def _added(df: Any, index: Index | None, id_column: str, text_column: str) -> list[str]:
    """The names ``fingerprints`` adds, the arguments checked first: ``arrow.fingerprints`` of no
    rows of the two columns, on the driver (its own checks, its own columns)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    for what, name in (("id_column", id_column), ("text_column", text_column)):
        if name not in df.columns:
            raise InvalidInput(f"{what}={name!r}: the DataFrame has no such column (it has {', '.join(df.columns)})",
                               arguments=(what,))
    fields = {f.name: f for f in df.schema.fields}
    empty = pa.RecordBatch.from_pylist([], pa.schema([(n, to_arrow_type(fields[n].dataType))
                                                      for n in dict.fromkeys((id_column, text_column))]))
    from . import arrow

    out = arrow.fingerprints(empty, index, id_column=id_column, text_column=text_column)
    names = out.schema.names[empty.num_columns:]
    there = [n for n in names if n in df.columns]
    if there:
        raise InvalidInput(f"the DataFrame has a column {there[0]!r} already, which fingerprints adds",
                           arguments=("df",))
    return names


def _fingerprint_batches(spec: dict, id_column: str, text_column: str, longs: list[str]):
    """``arrow.fingerprints_with`` of each batch, with the index's parts made from its worker
    ``spec`` (``stages.job_spec``), the uint64 columns as int64 (the same bits)."""
    def run(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        from dedup_hbase.pipelines import arrow

        sketcher = stages.fingerprinter(spec["sketch"]) if "sketch" in spec else None
        for batch in batches:
            out = arrow.fingerprints_with(batch, stages.fingerprinter(spec), stages.signatures_of(spec), sketcher,
                                          bool(spec.get("short")), id_column=id_column, text_column=text_column)
            columns = [pc.cast(out.column(n), pa.int64(), safe=False) if n in longs else out.column(n)
                       for n in out.schema.names]
            yield pa.RecordBatch.from_arrays(columns, names=out.schema.names)
    return run


def _records(spec: dict):
    """(id, text, row) batches -> the records of a Spark check (FINGERPRINTED_SCHEMA), its
    line a row's place; an id or text that ``arrow.fingerprints`` refuses refused in its words.
    Records, not ``fingerprints``' columns: a probed index's lookups need each text's probe
    masks, which the check job's ``stages.fingerprint_records`` makes with the fingerprints."""
    finish = stages.fingerprint_records(spec, False)

    def run(batches):
        for batch in batches:
            if not batch.num_rows:
                continue
            bad = id_errors(batch.column("id"))
            rows = batch.to_pylist()
            yield finish([(0, Record(SOURCE, r[ROW], id=r["id"], error=bad[i]) if i in bad
                           else Record(SOURCE, r[ROW], id=r["id"], error=NO_TEXT) if r["text"] is None
                           else Record(SOURCE, r[ROW], id=r["id"], text=r["text"])) for i, r in enumerate(rows)])
    return run


def _materialized(job: SparkJob, frame: Any, *persisted: Any) -> Any:
    """``frame`` computed now and cut from its lineage (``localCheckpoint``); ``persisted``
    released."""
    done = frame.localCheckpoint()
    job.unpersist(*persisted)
    return done

