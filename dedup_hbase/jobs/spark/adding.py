"""``check --engine spark --add-new`` and ``load --engine spark --skip-near-dups``: index, by
HFiles, the documents that match nothing in the index nor an earlier document of the input (the
batch form of ``add?if_new=true``).

The rule is ``load --skip-near-dups``'s (local/load.py, ``near_duplicates``, with local/left_out.py
across its batches): a document is left out when the index holds a document with another id within k bits
of it, or an earlier document of the input (by file, then line) has another id and is within
k bits. A document whose only match is itself (its id, indexed before) is written again.

The earlier-in-the-input part, without comparing copies with each other: per distinct
fingerprint ``u`` its first copy (position p1, id1) and the first copy with another id (p2);
over ``u`` and its near fingerprints (spark/pairs.py: the join on (flag, segment)) the first
of the p1 (A), the first p1 whose id1 differs from A's (B) and the first p2 (P2). A document
at position ``pos`` with ``id`` has an earlier near document with another id exactly when
``A.p1 < pos and A.id != id``, or ``B < pos``, or ``P2 < pos``.

An index of several signatures, with probes, a confirmation or the short-text rule
(``earlier_found``): the same
firsts per signature, over the fingerprints each of a document's lookups (its simhash of that
signature and each probe) finds among the input's, not over near fingerprints; a document has an
earlier near one when any of its lookups does. With a sketch the firsts are per fingerprint
and sketch, and a lookup (with the document's own simhash and sketch) counts a fingerprint where
``confirm.sketches_agree`` says (pairs.agreeing): beyond 3 bits of its own simhash only
with the two sketches within the bits allowed; with the short-text rule, a pair with a short
document at any distance only when both are and their kept texts are near (text/units.py).
The firsts' rule holds over any partition of the earlier documents, so copies still cost in
proportion: copies share their fingerprint, sketch and lookups.
"""

from __future__ import annotations

import time
from functools import reduce

from ...index.index import Index
from ..reports import LoadReport
from . import bulk, pairs, records, rows
from .harness import SparkJob


def add_new(job: SparkJob, index: Index, fingerprinted, answers, staging: str | None,
            report: LoadReport | None = None) -> tuple[int, int]:
    """Write the new documents of ``fingerprinted`` (``answers``: their matches in the index,
    check.answer_records) into ``index``'s HBase tables; (documents added, near-duplicates
    skipped). ``report``: a load's, given the new and replaced documents (bulk.load)."""
    from pyspark.sql import functions as F

    good = records.good(fingerprinted).withColumn("pos", records.position())
    in_index = answers.where(F.col("error").isNull()).select(
        "ordinal", "line", (F.exists("matches", lambda m: m["id"] != F.col("id")) | F.col("match_count").isNotNull())
        .alias("in_index"))
    earlier = earlier_found(good, index) if index.lookup_options else earlier_near(good, index)
    flagged = good.join(in_index, ["ordinal", "line"]).join(earlier, "pos", "left")
    flagged = flagged.withColumn("skip", F.col("in_index") | F.coalesce(F.col("earlier"), F.lit(False)))
    flagged = job.persist(flagged)
    counts = flagged.agg(F.sum(F.when(F.col("skip"), 0).otherwise(1)), F.sum(F.when(F.col("skip"), 1).otherwise(0)))
    added, skipped = (c or 0 for c in counts.collect()[0])
    job.clock("new documents found")
    if added:
        bulk.load(job, index, index.store.hfile_target(), flagged.where(~F.col("skip")), report or LoadReport(),
                  staging, None, int(time.time() * 1000))
    job.unpersist(flagged)
    return added, skipped


def earlier_near(good, index: Index):
    """``(pos, earlier)``: whether an earlier document of ``good`` (``pos``, ``id``,
    ``simhash``) with another id is within the index's k bits, for the documents that have one."""
    from pyspark.sql import functions as F

    docs = good.select("pos", "id", "simhash")
    first = docs.groupBy("simhash").agg(F.min(F.struct("pos", "id")).alias("f"))
    second = (docs.join(first, "simhash").where(F.col("id") != F.col("f.id"))
              .groupBy("simhash").agg(F.min("pos").alias("p2")))
    stats = first.select("simhash", F.col("f.pos").alias("first"), F.col("f.id").alias("id1")).join(
        second, "simhash", "left")
    near = pairs.distinct_pairs(stats.select("simhash", "first"), index.scheme, index.k)
    links = (stats.select(F.col("first").alias("node"), F.col("first").alias("other"))
             .unionByName(near.select(F.col("a").alias("node"), F.col("b").alias("other")))
             .unionByName(near.select(F.col("b").alias("node"), F.col("a").alias("other"))))
    around = links.join(stats.select(F.col("first").alias("other"), "id1", "p2"), "other")
    a = around.groupBy("node").agg(F.min(F.struct(F.col("other").alias("p1"), "id1")).alias("a"),
                                   F.min("p2").alias("p2"))
    b = (around.join(a.select("node", F.col("a.id1").alias("a_id")), "node").where(F.col("id1") != F.col("a_id"))
         .groupBy("node").agg(F.min("other").alias("b")))
    per_fingerprint = stats.select("simhash", F.col("first").alias("node")).join(a, "node").join(b, "node", "left")
    pos = F.col("pos")
    earlier = (((F.col("a.p1") < pos) & (F.col("a.id1") != F.col("id"))) | (F.col("b") < pos)
               | (F.col("p2") < pos))
    return (docs.join(per_fingerprint, "simhash").select("pos", earlier.alias("earlier"))
            .where(F.col("earlier")))


def earlier_found(good, index: Index):
    """``earlier_near`` of an index of several signatures, with probes, a confirmation or the
    short-text rule: whether a lookup of a document (every signature's simhash and probe:
    lookup.py) finds an earlier document of ``good`` with another id, for the documents where
    one does. Per signature, the same three firsts as ``earlier_near`` (per fingerprint, and
    with a sketch per fingerprint and sketch), over the fingerprints each lookup finds
    (pairs.query_pairs)."""
    from pyspark.sql import functions as F

    sketched = index.spec.sketched
    # a short document's kept text (what the short-text rule reads), carried with its sketch
    kept = F.when(F.length("kept") > 0, F.col("kept")) if index.spec.short is not None else F.lit(None).cast("string")
    docs = good.select("pos", "id", "simhash", "more", "masks",
                       (F.col("sketch") if sketched else F.lit(None).cast("bigint")).alias("sketch"), kept.alias("kept"))
    # a lookup's answer depends on its query, and with a sketch on its own simhash and sketch
    lookup = ["q", "own", "sketch"] if sketched else ["q"]
    parts = []
    for place, scheme in enumerate(index.schemes):
        own = rows.signature_simhash(place)
        bases = docs.select("pos", "id", own.alias("simhash"), "sketch", "kept")
        group = ["simhash", "sketch"] if sketched else ["simhash"]
        # (with a sketch, the kept text of the first copy: one per sketch)
        first = bases.groupBy(*group).agg(F.min(F.struct("pos", "id")).alias("f"),
                                          *([F.min_by("kept", "pos").alias("kept")] if sketched else []))
        second = (bases.join(first.select(*group, "f"), group).where(F.col("id") != F.col("f.id"))
                  .groupBy(*group).agg(F.min("pos").alias("p2")))
        stats = first.select(*group, F.col("f.pos").alias("p1"), F.col("f.id").alias("id1"),
                             *(["kept"] if sketched else [])).join(second, group, "left")
        probed = place < len(index.probes) and index.probes[place]
        queries = docs.select("pos", "id", own.alias("own"), "sketch", "kept",
                              F.explode(_queries(own, F.element_at("masks", place + 1) if probed else None)).alias("q"))
        near = pairs.query_pairs(queries.select("q").distinct(), stats.select("simhash").distinct(), scheme, index.k)
        if not sketched:
            around = near.join(stats, "simhash")
        else:
            found = queries.select(*lookup, "kept").distinct().join(near, "q").join(
                stats.withColumnRenamed("sketch", "their").withColumnRenamed("kept", "their_kept"), "simhash")
            around = pairs.agreeing(found, F.bit_count(F.col("own").bitwiseXOR(F.col("simhash"))), "sketch", "their",
                                    index.confirm, index.spec.short, ("kept", "their_kept"))
        a = around.groupBy(*lookup).agg(F.min(F.struct("p1", "id1")).alias("a"), F.min("p2").alias("p2"))
        b = (around.join(a.select(*lookup, F.col("a.id1").alias("a_id")), lookup).where(F.col("id1") != F.col("a_id"))
             .groupBy(*lookup).agg(F.min("p1").alias("b")))
        pos = F.col("pos")
        earlier = (((F.col("a.p1") < pos) & (F.col("a.id1") != F.col("id"))) | (F.col("b") < pos)
                   | (F.col("p2") < pos))
        parts.append(queries.join(a.join(b, lookup, "left"), lookup).where(earlier).select("pos"))
    return reduce(lambda x, y: x.unionByName(y), parts).distinct().select("pos", F.lit(True).alias("earlier"))


def _queries(own, masks):
    """A document's lookups of one signature: ``own`` (its simhash), and it with each of
    ``masks`` (an array column, or None without probes) flipped."""
    from pyspark.sql import functions as F

    if masks is None:
        return F.array(own)
    return F.concat(F.array(own), F.transform(F.coalesce(masks, F.array().cast("array<bigint>")),
                                              lambda m: own.bitwiseXOR(m)))
