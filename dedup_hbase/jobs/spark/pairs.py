"""Near-duplicates inside a DataFrame of fingerprints, the pigeonhole way: neardup.py's
search on a cluster, the same code.

Input: a DataFrame of ``(pos long, simhash long)``; ``pos`` orders the documents (the input
order, spark/groups.py), ``simhash`` is the fingerprint's 64 bits as a signed long
(arrays.py). Nothing is collected to the driver.

* Identical fingerprints collapse first: one row per distinct fingerprint with ``first``,
  its smallest position (``distinct``); a copy joins its group through it (n copies: a join
  on the simhash, never n²/2 pairs).
* A flag's segment is two blocks (the 5-split) or one (the 4-split), and each flag has a
  lead, its first block: the 5-split's ten flags have four leads. Per lead, every distinct
  fingerprint becomes a row (lead, simhash, first), and one shuffle puts the rows of equal
  lead and value of that block (rows.block: bit-identical to layout.py) in one partition:
  two fingerprints that share a flag's segment share its lead's block, so they meet there.
  Each partition runs the local engine's search on its rows, each flag of each lead in turn
  (``neardup.flag_pairs`` through ``mapInArrow``): sorted by segment, compared inside runs of
  equal segments, a pair kept only under the first flag whose segments it shares, so each
  near pair once: exactly the pairs brute force finds (the pigeonhole argument of layout.py).
  A partition's rows are held in its Python worker at once: ``TASK_ROWS`` bounds them. Four
  rows per fingerprint where a row per flag would be ten: the shuffle is the search's cost.

``distinct_pairs`` gives every pair of distinct fingerprints within k bits, once: the edges of
the groups (spark/groups.py) and the near fingerprints ``--add-new`` needs (spark/adding.py).
``query_pairs`` gives what lookups find among fingerprints (``--add-new`` with probes, several
signatures or sketches): the same search over the values of both.
"""

from __future__ import annotations

from functools import reduce

from ...index.layout import Scheme
from ...text.shorts import SHORT_FLAG
from .rows import block

TASK_ROWS = 1 << 22  # (lead block, fingerprint) rows of one pair-search task: 4M, about 100 MB in its Python worker
QUERY, FOUND = 1, 2  # query_pairs: the sides a value is on, as bits


def agreeing(df, distance, a: str, b: str, allowed: int | None, short: str | None, kept: tuple[str, str]):
    """The rows of ``df`` whose pair at ``distance`` with the sketches in columns ``a`` and ``b``
    (signed longs) match by ``confirm.sketches_agree`` itself, run on each batch in the Python
    workers: under a confirmation of ``allowed`` bits (None: none) and the short-text rule
    ``short`` (None: none). ``kept``: the columns of ``df`` holding each side's kept text (what
    the rule reads of two short sketches; null where not short)."""
    rows = df.withColumn("_distance", distance.cast("int"))
    return rows.mapInArrow(_agree(a, b, kept, allowed, short), rows.schema).drop("_distance")


def _agree(a: str, b: str, kept: tuple[str, str], allowed: int | None, short: str | None):
    """mapInArrow function: each batch's rows that ``confirm.sketches_agree`` lets match; the
    kept texts read (``kept``: their columns) of the rows the rule reads them for alone: both
    sketches short and unequal."""

    def run(batches):
        import numpy as np
        import pyarrow as pa

        from ...index.confirm import sketches_agree

        flag = np.uint64(SHORT_FLAG)
        for batch in batches:
            sa, sb = (batch.column(c).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64) for c in (a, b))
            texts = {}
            if short is not None:
                read = np.flatnonzero(((sa & flag) != 0) & ((sb & flag) != 0) & (sa != sb))
                for column, sketches in zip(kept, (sa, sb)):
                    texts.update((int(sketches[n]), batch.column(column)[n].as_py()) for n in read)
            keep = sketches_agree(batch.column("_distance").to_numpy(zero_copy_only=False), sa, sb, allowed, short, texts)
            yield batch.filter(pa.array(keep))
    return run


def distinct(df):
    """``(pos, simhash)`` -> ``(simhash, first)``: each distinct fingerprint and its smallest position."""
    from pyspark.sql import functions as F

    return df.groupBy("simhash").agg(F.min("pos").alias("first"))


def distinct_pairs(firsts, scheme: Scheme, k: int, expected: int = 0):
    """``(simhash, first)`` of distinct fingerprints -> ``(a, b, distance)``: the ``first``
    positions of every pair of distinct fingerprints within ``k`` bits, a < b, each pair once,
    and their Hamming distance (int). ``expected``: about how many rows ``firsts`` holds, so
    that no task of the search holds more than ``TASK_ROWS`` (lead block, fingerprint) rows."""
    from pyspark.sql import functions as F

    return _near(firsts, scheme, k, expected).select(F.least("fa", "fb").alias("a"), F.greatest("fa", "fb").alias("b"),
                                                     "distance")


def query_pairs(queries, fingerprints, scheme: Scheme, k: int, expected: int = 0):
    """``(q)`` query fingerprints and ``(simhash)`` distinct fingerprints -> ``(q, simhash)``:
    every query and fingerprint within ``k`` bits, each pair once: what a lookup of each query
    finds among them. The search of ``distinct_pairs`` over the distinct values of both, each
    marked by the sides it is on (as probed.py's ``found_edges`` searches a batch's bases and
    lookups together); a value on both sides is its own pair, at 0 bits."""
    from pyspark.sql import functions as F

    sides = (queries.select(F.col("q").alias("simhash"), F.lit(QUERY).alias("side"))
             .unionByName(fingerprints.select("simhash", F.lit(FOUND).alias("side")))
             .groupBy("simhash").agg(F.bit_or("side").cast("long").alias("first")))
    near = _near(sides, scheme, k, expected)
    # each pair both ways from one read of the search (two reads would run it twice)
    ways = [F.struct(F.col(q).alias("q"), F.col(found).alias("simhash"), F.col(fq).alias("asks"),
                     F.col(ff).alias("found")) for q, found, fq, ff in (("sa", "sb", "fa", "fb"), ("sb", "sa", "fb", "fa"))]
    both = near.select(F.explode(F.array(*ways)).alias("way")).select("way.*")
    asks, found = F.col("asks").bitwiseAND(F.lit(QUERY)) != 0, F.col("found").bitwiseAND(F.lit(FOUND)) != 0
    return (both.where(asks & found).select("q", "simhash")
            .unionByName(sides.where(F.col("first") == F.lit(QUERY | FOUND))
                         .select(F.col("simhash").alias("q"), "simhash")))


def _near(firsts, scheme: Scheme, k: int, expected: int):
    """``(simhash, first)`` of distinct fingerprints, ``first`` any long carried along (a
    position; query_pairs' sides) -> ``(fa, fb, sa, sb, distance)``: every pair within ``k``
    bits once, by its two ``first`` values and simhashes, in no order."""
    from pyspark.sql import functions as F

    scheme.check_k(k)
    leads = sorted({blocks[0] for blocks in scheme.flags})
    keyed = firsts.select(F.explode(F.array(*map(F.lit, leads))).alias("lead"), "simhash", "first")
    lead, simhash = F.col("lead"), F.col("simhash")
    value = reduce(lambda chosen, b: chosen.when(lead == b, block(scheme, b, simhash)), leads[1:],
                   F.when(lead == leads[0], block(scheme, leads[0], simhash)))
    configured = int(firsts.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    tasks = max(configured, -(-expected * len(leads) // TASK_ROWS))
    # every fingerprint with a given value of a lead block in one partition, the value not shipped
    return keyed.repartition(tasks, lead, value).mapInArrow(_search(scheme, k),
                                                           "fa long, fb long, sa long, sb long, distance int")


def _search(scheme: Scheme, k: int):
    """mapInArrow function: a partition's (lead, simhash, first) rows -> their pairs: for each
    lead block, each flag that begins with it through ``neardup.flag_pairs``, the local
    engine's search, on the rows of that lead. Each pair's row is the same whatever the order
    of the partition's rows (the smaller fingerprint as ``sa``): a plan that reads the search
    twice gets the same rows twice."""

    def search(batches):
        import numpy as np
        import pyarrow as pa

        from ...index.arrays import as_signed, as_unsigned
        from ...index.neardup import flag_pairs

        tables = list(batches)
        if not tables:
            return
        rows = pa.Table.from_batches(tables)
        del tables
        lead = rows.column("lead").to_numpy()
        simhash = as_unsigned(rows.column("simhash").to_numpy())
        first = rows.column("first").to_numpy().astype(np.int64)
        del rows
        for blocks_lead in np.unique(lead).tolist():
            mine = np.flatnonzero(lead == blocks_lead)
            fingerprints, positions = simhash[mine], first[mine]
            for flag, blocks in enumerate(scheme.flags, 1):
                if blocks[0] != blocks_lead:
                    continue
                found = flag_pairs(fingerprints, scheme, flag, k)
                if len(found):
                    # each pair the smaller fingerprint first: flag_pairs orders a pair as the
                    # partition's rows come, and a shuffle's rows come in another order each
                    # time a task runs (a plan that reads the search twice runs it twice)
                    found = np.where((fingerprints[found[:, 0]] > fingerprints[found[:, 1]])[:, None],
                                     found[:, ::-1], found)
                    a, b = fingerprints[found[:, 0]], fingerprints[found[:, 1]]
                    columns = [positions[found[:, 0]], positions[found[:, 1]], as_signed(a), as_signed(b),
                               np.bitwise_count(a ^ b).astype(np.int32)]
                    yield pa.RecordBatch.from_arrays([pa.array(c) for c in columns],
                                                     names=["fa", "fb", "sa", "sb", "distance"])

    return search
