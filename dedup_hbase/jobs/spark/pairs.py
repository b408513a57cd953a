"""Near-duplicates inside a DataFrame of fingerprints, the pigeonhole way, as Spark joins:
neardup.py's search on a cluster.

Input: a DataFrame of ``(pos long, simhash long)``; ``pos`` orders the documents (the input
order, spark/groups.py), ``simhash`` is the fingerprint's 64 bits as a signed long
(arrays.py). Nothing is collected to the driver.

* Identical fingerprints collapse first: one row per distinct fingerprint with ``first``,
  its smallest position; each other copy gives one edge to it (n copies: n - 1 edges, a
  join on the simhash, never n²/2 pairs).
* Per flag of the scheme, every distinct fingerprint is keyed by that flag's segment
  (rows.segment: bit-identical to layout.py); a self-join on (flag, segment) pairs the
  fingerprints that share it, ``bit_count(a ^ b) <= k`` keeps the near ones, and a pair is
  kept only under the first flag whose segments it shares, so each near pair once: exactly
  the pairs brute force finds (the pigeonhole argument of layout.py).

``near_pairs`` gives edges spanning the same components as all pairs within k bits (what
groups need); ``earliest_earlier`` gives, per position, the earliest smaller position
within k bits (what skipping near-duplicates and ``--add-new`` need: a document is new
when it is null).
"""

from __future__ import annotations

from ...index.layout import Scheme
from .rows import segment


def distinct(df):
    """``(pos, simhash)`` -> ``(simhash, first)``: each distinct fingerprint and its smallest position."""
    from pyspark.sql import functions as F

    return df.groupBy("simhash").agg(F.min("pos").alias("first"))


def distinct_pairs(firsts, scheme: Scheme, k: int):
    """``(simhash, first)`` of distinct fingerprints -> ``(a, b)``: the ``first`` positions of
    every pair of distinct fingerprints within ``k`` bits, a < b, each pair once."""
    from pyspark.sql import functions as F

    scheme.check_k(k)
    flags = range(1, len(scheme.flags) + 1)
    keyed = firsts.select("simhash", "first", F.explode(F.array(*[
        F.struct(F.lit(flag).alias("flag"), segment(scheme, flag, F.col("simhash")).alias("segment"))
        for flag in flags])).alias("key")).select("simhash", "first", "key.flag", "key.segment")
    left, right = keyed.alias("l"), keyed.alias("r")
    ls, rs = F.col("l.simhash"), F.col("r.simhash")
    joined = left.join(right, (F.col("l.flag") == F.col("r.flag")) & (F.col("l.segment") == F.col("r.segment"))
                       & (ls < rs) & (F.bit_count(ls.bitwiseXOR(rs)) <= F.lit(k)))
    # the first flag whose segments the two share: the pair is kept under that flag only
    shared = F.coalesce(*[F.when(segment(scheme, flag, ls) == segment(scheme, flag, rs), F.lit(flag))
                          for flag in flags])
    kept = joined.where(shared == F.col("l.flag"))
    return kept.select(F.least("l.first", "r.first").alias("a"), F.greatest("l.first", "r.first").alias("b"))


def copy_edges(df, firsts):
    """``(a, b)``: each copy of a fingerprint to its first copy (n copies: n - 1 edges)."""
    from pyspark.sql import functions as F

    return (df.join(firsts, "simhash").where(F.col("pos") != F.col("first"))
            .select(F.col("first").alias("a"), F.col("pos").alias("b")))


def near_pairs(df, scheme: Scheme, k: int, firsts=None):
    """``(pos, simhash)`` -> ``(a, b)`` positions, a < b, spanning the same components as
    every pair within ``k`` bits: each copy to its fingerprint's first copy, and the first
    copies of every pair of distinct fingerprints within k bits, once each
    (``NearPairs.edges`` of neardup.py). ``firsts``: ``distinct(df)`` if the caller has it."""
    firsts = distinct(df) if firsts is None else firsts
    return copy_edges(df, firsts).unionByName(distinct_pairs(firsts, scheme, k))


def earliest_earlier(df, scheme: Scheme, k: int, firsts=None):
    """``(pos, simhash)`` -> ``(pos, earlier)``: for every position, the earliest smaller
    position within ``k`` bits of it, or null (``NearPairs.earliest_earlier``). A document
    to skip as a near-duplicate of one earlier in the input is one whose ``earlier`` is set."""
    from pyspark.sql import functions as F

    firsts = distinct(df) if firsts is None else firsts
    near = distinct_pairs(firsts, scheme, k)
    nearest = (near.select(F.col("a").alias("node"), F.col("b").alias("other"))
               .unionByName(near.select(F.col("b").alias("node"), F.col("a").alias("other")))
               .groupBy("node").agg(F.min("other").alias("nearest")))
    with_first = df.join(firsts, "simhash").join(nearest, F.col("first") == F.col("node"), "left")
    own = F.when(F.col("first") < F.col("pos"), F.col("first"))
    best = F.least(own, F.col("nearest"))  # least skips nulls
    return with_first.select("pos", F.when(best < F.col("pos"), best).alias("earlier"))
