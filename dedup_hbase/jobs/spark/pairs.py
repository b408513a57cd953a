"""Near-duplicates inside a DataFrame of fingerprints, the pigeonhole way, as Spark joins:
neardup.py's search on a cluster.

Input: a DataFrame of ``(pos long, simhash long)``; ``pos`` orders the documents (the input
order, spark/groups.py), ``simhash`` is the fingerprint's 64 bits as a signed long
(arrays.py). Nothing is collected to the driver.

* Identical fingerprints collapse first: one row per distinct fingerprint with ``first``,
  its smallest position (``distinct``); a copy joins its group through it (n copies: a join
  on the simhash, never n²/2 pairs).
* Per flag of the scheme, every distinct fingerprint is keyed by that flag's segment
  (rows.segment: bit-identical to layout.py); a self-join on (flag, segment) pairs the
  fingerprints that share it, ``bit_count(a ^ b) <= k`` keeps the near ones, and a pair is
  kept only under the first flag whose segments it shares, so each near pair once: exactly
  the pairs brute force finds (the pigeonhole argument of layout.py).

``distinct_pairs`` gives every pair of distinct fingerprints within k bits, once: the edges of
the groups (spark/groups.py) and the near fingerprints ``--add-new`` needs (spark/adding.py).
"""

from __future__ import annotations

from ...index.confirm import CONFIRMED_BEYOND
from ...index.layout import Scheme
from ...text.shorts import SHORT_FLAG
from .rows import segment


def sketches_agree(distance, a, b, allowed: int | None, short: int | None):
    """``confirm.sketches_agree`` in Spark SQL: whether a pair at ``distance`` with the sketches
    ``a`` and ``b`` (signed long columns) matches, under a confirmation of ``allowed`` bits
    (None: none) and the short-text rule of ``short`` bits (None: none)."""
    from pyspark.sql import functions as F

    apart = F.bit_count(a.bitwiseXOR(b))
    plain = (distance <= F.lit(CONFIRMED_BEYOND)) | (apart <= F.lit(allowed) if allowed is not None else F.lit(False))
    if short is None:
        return plain
    fa, fb = (c.bitwiseAND(F.lit(SHORT_FLAG)) != 0 for c in (a, b))
    return F.when(fa | fb, fa & fb & (apart <= F.lit(short))).otherwise(plain)


def distinct(df):
    """``(pos, simhash)`` -> ``(simhash, first)``: each distinct fingerprint and its smallest position."""
    from pyspark.sql import functions as F

    return df.groupBy("simhash").agg(F.min("pos").alias("first"))


def distinct_pairs(firsts, scheme: Scheme, k: int):
    """``(simhash, first)`` of distinct fingerprints -> ``(a, b, distance)``: the ``first``
    positions of every pair of distinct fingerprints within ``k`` bits, a < b, each pair once,
    and their Hamming distance (int)."""
    from pyspark.sql import functions as F

    scheme.check_k(k)
    flags = range(1, len(scheme.flags) + 1)
    keyed = firsts.select("simhash", "first", F.explode(F.array(*[
        F.struct(F.lit(flag).alias("flag"), segment(scheme, flag, F.col("simhash")).alias("segment"))
        for flag in flags])).alias("key")).select("simhash", "first", "key.flag", "key.segment")
    # a shuffled hash join: a sort-merge join sorts both sides, the same rows twice (63% of the
    # executors' CPU at 10^7, docs/benchmarks.md); a partition's segments are hashed instead
    left, right = keyed.alias("l"), keyed.alias("r").hint("shuffle_hash")
    ls, rs = F.col("l.simhash"), F.col("r.simhash")
    joined = left.join(right, (F.col("l.flag") == F.col("r.flag")) & (F.col("l.segment") == F.col("r.segment"))
                       & (ls < rs) & (F.bit_count(ls.bitwiseXOR(rs)) <= F.lit(k)))
    # the first flag whose segments the two share: the pair is kept under that flag only
    shared = F.coalesce(*[F.when(segment(scheme, flag, ls) == segment(scheme, flag, rs), F.lit(flag))
                          for flag in flags])
    kept = joined.where(shared == F.col("l.flag"))
    return kept.select(F.least("l.first", "r.first").alias("a"), F.greatest("l.first", "r.first").alias("b"),
                       F.bit_count(ls.bitwiseXOR(rs)).alias("distance"))


def query_pairs(queries, fingerprints, scheme: Scheme, k: int):
    """``(q)`` query fingerprints and ``(simhash)`` distinct fingerprints -> ``(q, simhash)``:
    every query and fingerprint within ``k`` bits, each pair once (kept under the first flag
    whose segments the two share): what a lookup of each query finds among them."""
    from pyspark.sql import functions as F

    scheme.check_k(k)
    flags = range(1, len(scheme.flags) + 1)

    def keyed(frame, column: str):
        return frame.select(column, F.explode(F.array(*[
            F.struct(F.lit(flag).alias("flag"), segment(scheme, flag, F.col(column)).alias("segment"))
            for flag in flags])).alias("key")).select(column, "key.flag", "key.segment")

    q, u = F.col("q"), F.col("simhash")
    joined = keyed(queries, "q").join(keyed(fingerprints, "simhash"), ["flag", "segment"]).where(
        F.bit_count(q.bitwiseXOR(u)) <= F.lit(k))
    shared = F.coalesce(*[F.when(segment(scheme, flag, q) == segment(scheme, flag, u), F.lit(flag)) for flag in flags])
    return joined.where(shared == F.col("flag")).select("q", "simhash")
