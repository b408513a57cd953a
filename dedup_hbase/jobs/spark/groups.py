"""``dedup-hbase groups --engine spark``: the local engine's job (local/groups.py) as one Spark
job, with the same output (outputs.py).

Data flow (D = the driver, E = the executors)::

    E  parse and fingerprint the inputs (records.py)                       [persisted]
    D  accounting and rejects in input order, as a Spark load (records.account)
    E  documents: pos (the input order, records.position), id, simhash
    E  the nodes: the distinct fingerprints (--signatures, --confirm: the distinct tuples of
       every signature's and the sketch), their first positions, sizes and first ids
                                                                          [persisted]
    E  pairs: the distinct fingerprints joined on (flag, segment) (pairs.py); with several
       signatures or a confirmation each one's pairs and copies mapped onto the nodes
       (``_edges``; beyond 3 bits with a confirmation, between the first nodes of each
       fingerprint's sketches within T bits)
    E  components of the distinct fingerprints: large-star / small-star rounds
       (components.py; copies are not in them: a copy joins its first copy's group)
    E  the spanning tree of each component from its smallest node: the local engine's function
       on each component, a component's edges in one task (components.tree_parents): a
       distinct fingerprint's via
    E  per node of a component: its group (the smallest first pos of the component), the
       group's id and size (a window over the component's nodes, not its documents) and its
       tree parent's first id (``_grouped_nodes``)
    E  per document, from its node: a document alone in its node is its first; the others
       take their node's first from the nodes of two or more documents, and the grouped
       ones group, size and via from the table of grouped nodes (each broadcast when it
       holds at most BROADCAST_NODES nodes, so that no document moves for it): keep = pos ==
       group; via = the node's first copy for a later copy, else the tree's parent
    E  OUT/documents/: Parquet, sorted by pos (the local engine's row order)
    E  OUT/groups.jsonl: one task writes the groups of two or more in order of their first
       member, each line built by Spark SQL as Python's json.dumps writes it (rows.json_string)
    E  OUT/dropped.jsonl: likewise, the documents not kept in input order
    D  OUT/summary.json: the report

Only the counts of the summary come to the driver. ``pos``: records.position, the input order.
"""

from __future__ import annotations

import json
from functools import reduce

from ...errors import InvalidInput
from ...index.confirm import CONFIRMED_BEYOND
from ...text.fingerprint import Fingerprinter
from ...text.shorts import SHORT_FLAG
from ..options import GroupsOptions, SparkOptions, is_uri
from ..outputs import (
    DOCUMENTS,
    DROPPED_FILE,
    GROUPS_FILE,
    SIGNATURE,
    SUMMARY_FILE,
    dropped_fields,
    prepare_out,
    via_parts,
    via_weight,
    write_summary,
)
from ..reports import GroupsReport, rejects_file
from . import components, files, pairs, records
from .harness import SparkJob, spark_job
from .rows import json_string

# the most nodes a table of nodes (the grouped ones; those of two or more documents) holds to be
# broadcast to every task of the documents' rows: about 50 bytes a node, 100 MB
BROADCAST_NODES = 2_000_000
ROWS_TASK = 1 << 21  # the documents' rows of one task of the steps after the groups: 2M, about 200 MB persisted
STOPPED = "run the same command again (it starts over and writes its output anew)"


def spark_group_files(paths: list[str], out: str, options: GroupsOptions, spark: SparkOptions,
                      fingerprinter: Fingerprinter, *, session=None) -> GroupsReport:
    """``local.group_files`` as a Spark job: the same options, report and output (texts are
    fingerprinted in the executors by ``fingerprinter``'s spec). ``session``: a running
    SparkSession to use and leave running; else one is started and stopped. Raises
    ``Interrupted`` on SIGINT or SIGTERM."""
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    options.check_inputs(paths)
    target = out if is_uri(out) else str(prepare_out(out).resolve())
    # the helper's jars: its data sources write the line files (files.py) and read --fingerprints
    with spark_job("dedup-hbase groups", spark, paths, jars=True, session=session, then=STOPPED) as job:
        report = _groups(job, paths, target, options, fingerprinter)
    report.elapsed_s = job.elapsed()
    return report


def _groups(job: SparkJob, paths: list[str], out: str, options: GroupsOptions,
            fingerprinter: Fingerprinter) -> GroupsReport:
    from pyspark.sql import functions as F

    spec = options.spec.worker_spec(fingerprinter.spec)
    fingerprinted, helpers = records.fingerprinted(job, paths, options, spec)
    report = GroupsReport(k=options.k, engine="spark", signatures=options.signatures.label, confirm=options.confirm,
                          short=options.short)
    with rejects_file(options.rejects) as rejects:
        records.account(fingerprinted, report, rejects, fingerprinter.label, options.fingerprints)
    report.documents = report.read - report.rejected
    scheme = options.scheme_for(report.documents)
    report.scheme = scheme.name
    signatures = options.signatures
    keys = ["simhash", *(f"s{j}" for j in range(1, len(signatures)))]  # each signature's simhash
    sketched = options.confirm is not None or options.short is not None
    docs = job.persist(records.good(fingerprinted).select(
        records.position().alias("pos"), "id", "simhash", *(F.col("more")[j - 1].alias(f"s{j}") for j in range(1, len(keys))),
        *(["sketch"] if sketched else []), *(["kept"] if options.short is not None else [])))
    docs.count()
    job.clock("read, fingerprint, account")
    job.unpersist(fingerprinted, *helpers)
    rows, helpers = group_rows(job, docs, keys, sketched, scheme, options.k, options.confirm, options.short,
                               signatures.names, documents=report.documents)
    rows.orderBy("pos").drop("pos", "group_pos").write.mode("overwrite").parquet(f"{out}/{DOCUMENTS}")
    job.clock("groups, Parquet")
    counts = rows.where(F.col("keep")).agg(F.count(F.lit(1)).alias("groups"),
                                           F.sum(F.when(F.col("size") > 1, 1).otherwise(0)).alias("multi")).first()
    report.groups, report.multi_groups = counts["groups"], counts["multi"] or 0
    _write_groups_file(job.session, rows.where(F.col("size") > 1), out)
    _write_dropped_file(job.session, rows.where(~F.col("keep")), out, len(keys) > 1)
    job.clock("groups.jsonl, dropped.jsonl")
    job.unpersist(rows, *helpers, docs)
    report.elapsed_s = job.elapsed()
    _write_summary(job.session, report, out)
    return report


def group_rows(job: SparkJob, docs, keys: list[str], sketched: bool, scheme, k: int, confirm: int | None,
               short: str | None, names: tuple[str, ...], *, documents: int = 0):
    """The groups of ``docs`` (pos, id, simhash, a column per other signature's simhash in
    ``keys``, ``sketch`` when ``sketched``, ``kept`` with ``short``; ``pos`` unique, the order
    of "first"), persisted: per document pos, id, simhash (hex), group (the id of its first
    member), size, keep, via (the id it joined its group through), distance, with several
    signatures ``signature`` (of ``names``), and group_pos; and the frames persisted on the
    way, for the caller to unpersist once it has read the rows. Exact: every pair within ``k``
    bits (``scheme``'s blocks) joins a group, with ``confirm`` and ``short`` as the local
    engine's ``assign``. ``documents``: about how many rows ``docs`` holds (the pair search's
    tasks: pairs.distinct_pairs)."""
    from pyspark.sql import functions as F

    nodes = keys + (["sketch"] if sketched else [])  # what a node is the distinct tuples of
    # components of the nodes only (the distinct fingerprints; several signatures: the distinct
    # tuples of them): a copy joins its group through its node's first document
    # (with short: each node's kept text, one per sketch, none where not short)
    kept = [F.min_by(F.when(F.length("kept") > 0, F.col("kept")), "pos").alias("kept")] if short is not None else []
    firsts = job.persist(docs.groupBy(*nodes).agg(F.min("pos").alias("first"), F.count(F.lit(1)).alias("n"),
                                                  F.min_by("id", "pos").alias("first_id"), *kept))
    made: list = []  # the frames _edges persists: released once the edges are computed (roots)
    edges = job.persist(_edges(firsts, keys, scheme, k, confirm, short, documents,
                               lambda frame: made.append(job.persist(frame)) or made[-1]))
    found = components.roots(edges)
    job.unpersist(*made)
    tree = components.tree_parents(edges, found, weight="weight")
    job.clock("pairs, components, tree")
    # the grouped nodes are few against the documents (their count is cheap: ``found`` is
    # checkpointed): then each document's row takes its node's from a broadcast table, and no
    # document moves for it
    few = found.count() <= BROADCAST_NODES
    grouped = _grouped_nodes(found, tree, firsts, few)
    weight = F.when(F.col("pos") != F.col("first"), F.lit(0)).otherwise(F.col("weight"))
    distance, place = via_parts(weight, F.shiftright)
    # (when: Spark 4's element_at gave a name for a null place)
    signature = ([F.when(weight.isNotNull(), F.element_at(F.array(*map(F.lit, names)),
                                                          (place + 1).cast("int"))).alias(SIGNATURE)]
                 if len(keys) > 1 else [])
    group_pos = F.coalesce("root", "first")
    # a document alone in its node is its node's first: only the copies need their node's
    # first position, size and first id (the nodes of two or more documents, broadcast when few)
    shared = firsts.where(F.col("n") > 1).select(*nodes, "first", "n", "first_id")
    shared = F.broadcast(shared) if shared.count() <= BROADCAST_NODES else shared
    # (the rows keep the documents' partitions, those of the input's splits: as many as the
    # task slots, or ROWS_TASK rows each, so that the steps that read the rows run no more tasks
    # than they need)
    placed = (docs.join(shared, nodes, "left")
              .select("pos", "id", *nodes, F.coalesce("first", "pos").alias("first"), F.coalesce("n", F.lit(1)).alias("n"),
                      F.coalesce("first_id", "id").alias("first_id"))
              .coalesce(max(job.parallelism, -(-documents // ROWS_TASK))))
    rows = job.persist(
        placed.join(F.broadcast(grouped) if few else grouped, F.col("first") == F.col("node"), "left")
        .select("pos", "id", F.lower(F.lpad(F.hex("simhash"), 16, "0")).alias("simhash"),
                F.coalesce("group", "first_id").alias("group"), F.coalesce("size", "n").alias("size"),
                (F.col("pos") == group_pos).alias("keep"),
                F.when(F.col("pos") != F.col("first"), F.col("first_id")).otherwise(F.col("parent_id")).alias("via"),
                distance.cast("int").alias("distance"), *signature, group_pos.alias("group_pos")))
    return rows, [edges, firsts]


def _grouped_nodes(found, tree, firsts, few: bool):
    """Per node of a group of two or more nodes (``found``: node -> root, the root itself
    absent; ``tree``: node -> parent, weight): its root, the group's id (its root's first id)
    and size (the documents of its nodes: ``firsts``' ``n``), the ``weight`` of its tree edge
    and its parent's first id (``parent_id``; none for the root). Nodes only, no document: a
    document's row takes its node's, so a group costs no shuffle of every document. ``few``:
    the grouped nodes are few enough to be broadcast to the tasks of ``firsts`` (whose rows
    then stay where they are)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    members = components.members(found)
    heads = firsts.select(F.col("first").alias("node"), "n", "first_id")
    member = heads.join(F.broadcast(members) if few else members, "node")
    group = Window.partitionBy("root")
    labeled = member.select("node", "root", F.sum("n").over(group).alias("size"),
                            F.max(F.when(F.col("node") == F.col("root"), F.col("first_id"))).over(group).alias("group"))
    parents = tree.join(member.select(F.col("node").alias("parent"), F.col("first_id").alias("parent_id")), "parent")
    return labeled.join(parents.select("node", "parent_id", "weight"), "node", "left")


def _edges(firsts, keys: list[str], scheme, k: int, confirm: int | None = None, short: str | None = None,
           documents: int = 0, persist=lambda frame: frame):
    """``(a, b, weight)``: the nodes (``firsts``: a node per distinct ``keys`` and, with
    ``confirm`` or ``short``, sketch, named by its first position; with ``short`` its kept
    text) joined by any signature, a < b, once, at the least ``via_weight`` of the signatures
    joining them: each signature's near pairs between the nodes of their first copies (beyond 3
    bits with ``confirm``: ``_confirmed``) and (several signatures or a sketch) each node to the
    node of its fingerprint's first copy; with ``short`` (the short-text rule) every pair of a
    fingerprint with a short node goes through ``_confirmed`` too, and inside such a fingerprint
    the nodes join as ``_short_copies`` says; local/groups.py's ``assign`` as DataFrames. A
    fingerprint's first position names the node that holds it (that node's documents all carry
    the fingerprint, so none comes before it): pairs and copies of first positions are edges
    between nodes as they are. ``persist``: the job's, for the frames that several branches of
    the plan read (each read of a frame not persisted computes it again: a broadcast job and
    its scans each; at 77,356 news texts under the short-text rule the plan ran 129 jobs)."""
    from pyspark.sql import functions as F

    sketched = confirm is not None or short is not None
    if len(keys) == 1 and not sketched:  # the nodes are the distinct fingerprints: their pairs, no mapping
        near = pairs.distinct_pairs(firsts, scheme, k, documents)
        return near.select("a", "b", via_weight(F.col("distance"), F.lit(0)).alias("weight"))
    parts = []
    for place, key in enumerate(keys):
        # (simhash, first): a fingerprint's first position is the least of its nodes' firsts
        own = persist(pairs.distinct(firsts.select(F.col("first").alias("pos"), F.col(key).alias("simhash"))))
        near = pairs.distinct_pairs(own, scheme, k, documents)
        sketches = persist(_sketches(firsts, own, key, short)) if sketched else None
        copies = firsts.select(F.col(key).alias("simhash"), F.col("first").alias("a")).join(own, "simhash")
        if short is not None:  # the fingerprints with a short node, by simhash and first position
            flagged = persist(firsts.where(F.col("sketch").bitwiseAND(F.lit(SHORT_FLAG)) != 0)
                              .select(F.col(key).alias("simhash")).distinct().join(own, "simhash"))
            near = persist(near.join(flagged.select(F.col("first").alias("a"), F.lit(True).alias("fa")), "a", "left")
                           .join(flagged.select(F.col("first").alias("b"), F.lit(True).alias("fb")), "b", "left"))
            far = (F.col("distance") > CONFIRMED_BEYOND) | F.col("fa").isNotNull() | F.col("fb").isNotNull()
            parts.append(_confirmed(near.where(far).select("a", "b", "distance"), sketches, place, confirm, short))
            near = near.where(~far).select("a", "b", "distance")
            copies = copies.join(flagged.select("simhash"), "simhash", "left_anti")
            parts.append(_short_copies(firsts, flagged, key, place, confirm, short))
        elif confirm is not None:
            parts.append(_confirmed(near.where(F.col("distance") > CONFIRMED_BEYOND), sketches, place, confirm))
            near = near.where(F.col("distance") <= CONFIRMED_BEYOND)
        parts.append(near.select("a", "b", via_weight(F.col("distance"), F.lit(place)).alias("weight")))
        parts.append(copies.select("a", F.col("first").alias("b"), F.lit(place).cast("long").alias("weight")))
    both = reduce(lambda x, y: x.unionByName(y), parts)
    return (both.where(F.col("a") != F.col("b"))
            .select(F.least("a", "b").alias("a"), F.greatest("a", "b").alias("b"), "weight")
            .groupBy("a", "b").agg(F.min("weight").alias("weight")))


def _sketches(firsts, own, key: str, short: str | None):
    """Per fingerprint (``at``: its first position) and sketch, its first node (with ``short``,
    and the sketch's kept text)."""
    from pyspark.sql import functions as F

    kept = [F.min_by("kept", "first").alias("kept")] if short is not None else [F.lit(None).cast("string").alias("kept")]
    return (firsts.groupBy(F.col(key).alias("simhash"), "sketch").agg(F.min("first").alias("node"), *kept)
            .join(own.withColumnRenamed("first", "at"), "simhash").select("at", "sketch", "node", "kept"))


def _short_copies(firsts, flagged, key: str, place: int, allowed: int | None, short: str):
    """``(a, b, weight)`` inside the fingerprints with a short node (``flagged``: simhash),
    at distance 0: local/groups.py's ``short_copy_edges`` on their nodes, a fingerprint's nodes
    in one task, a task's fingerprints in one call (held together: nodes, not documents, so the
    copies of one text are one row)."""
    from pyspark.sql import functions as F

    members = (firsts.select(F.col(key).alias("simhash"), "sketch", F.col("first").alias("node"), "kept")
               .join(flagged.select("simhash"), "simhash"))
    return (members.repartition("simhash").mapInArrow(_fingerprint_copies(allowed, short), "a long, b long")
            .select("a", "b", via_weight(F.lit(0), F.lit(place)).alias("weight")))


def _fingerprint_copies(allowed: int | None, short: str):
    """mapInArrow function: the nodes (simhash, sketch, node, kept) of whole fingerprints -> their
    edges (a, b)."""

    def run(batches):
        import numpy as np
        import pyarrow as pa

        from ..local.groups import short_copy_edges

        batches = list(batches)
        if not sum(batch.num_rows for batch in batches):
            return
        table = pa.Table.from_batches(batches).sort_by("node")  # the earliest first, as the local engine's nodes
        node = table.column("node").to_numpy()
        sketches = table.column("sketch").to_numpy().astype(np.int64).view(np.uint64)
        texts = {int(sketch): kept for sketch, kept in zip(sketches, table.column("kept").to_pylist()) if kept}
        edges = short_copy_edges(table.column("simhash").to_numpy(), sketches, allowed, short, texts)
        yield pa.RecordBatch.from_arrays([pa.array(node[edges[:, 0]]), pa.array(node[edges[:, 1]])], names=["a", "b"])
    return run


def _confirmed(far, sketches, place: int, allowed: int | None, short: str | None = None):
    """``(a, b, weight)`` of one signature's near pairs beyond 3 bits (``far``: the first
    positions ``a``, ``b`` of two fingerprints, their distance): the first node of each sketch
    among one fingerprint's nodes to that of each sketch of the other's within ``allowed`` bits
    (local/groups.py's ``_confirmed_pairs``)."""
    from pyspark.sql import functions as F

    left = sketches.select(F.col("at").alias("a"), F.col("sketch").alias("sa"), F.col("node").alias("na"),
                           F.col("kept").alias("ka"))
    right = sketches.select(F.col("at").alias("b"), F.col("sketch").alias("sb"), F.col("node").alias("nb"),
                            F.col("kept").alias("kb"))
    return (pairs.agreeing(far.join(left, "a").join(right, "b"), F.col("distance"), "sa", "sb", allowed, short,
                           ("ka", "kb"))
            .select(F.col("na").alias("a"), F.col("nb").alias("b"),
                    via_weight(F.col("distance"), F.lit(place)).alias("weight")))


def _write_dropped_file(session, dropped, out: str, signed: bool) -> None:
    """``OUT/dropped.jsonl``: the documents not kept, in input order, written by one task,
    byte for byte ``outputs.dropped_line``."""
    from pyspark.sql import functions as F

    pieces = []
    for name in dropped_fields(signed):
        value = F.col(name).cast("string") if name == "distance" else json_string(F.col(name))
        pieces += [F.lit(('{' if not pieces else ', ') + f'"{name}": '), value]
    files.write_file(dropped.repartition(1).sortWithinPartitions("pos")
                     .select(F.concat(*pieces, F.lit("}")).alias("value")), f"{out}/{DROPPED_FILE}")


def _write_summary(session, report: GroupsReport, out: str) -> None:
    """``OUT/summary.json`` (outputs.write_summary); on a cluster's file system, by one task."""
    if not is_uri(out):
        write_summary(out, report.to_dict())
        return
    files.write_file(session.createDataFrame([(json.dumps(report.to_dict(), ensure_ascii=False),)], "value string")
                     .repartition(1), f"{out}/{SUMMARY_FILE}")


def _write_groups_file(session, members, out: str) -> None:
    """``OUT/groups.jsonl`` from the rows of groups of two or more: one line per group in the
    order of its first member, written by one task, byte for byte ``groups.group_line``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    grouped = members.groupBy("group_pos").agg(F.first("size").alias("size"),
                                               F.sort_array(F.collect_list(F.struct("pos", "id"))).alias("m"))
    # one window over every group, as one task writes them all (partitioned by a constant: the
    # same plan, without Spark's warning of a window with no partition)
    numbered = grouped.withColumn("n", F.row_number().over(Window.partitionBy(F.lit(0)).orderBy("group_pos")))
    ids = F.array_join(F.transform("m", lambda m: json_string(m["id"])), ", ")
    line = F.concat(F.lit('{"group": '), F.col("n").cast("string"), F.lit(', "size": '),
                    F.col("size").cast("string"), F.lit(', "ids": ['), ids, F.lit("]}"))
    files.write_file(numbered.repartition(1).sortWithinPartitions("group_pos").select(line.alias("value")),
                     f"{out}/{GROUPS_FILE}")
