"""Connected components of an edge DataFrame, distributed: large-star and small-star
(Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii, "Connected Components in MapReduce
and Beyond", SoCC 2014), on DataFrames.

Edges are kept as ``(src, dst)`` with ``src > dst``, undirected. With ``m(u)`` the smallest
of u and its neighbours:

* large-star: every neighbour v > u of every node u is linked to m(u);
* small-star: every node u and its neighbours v < u are linked to m over those neighbours.

Both keep every component connected and never add a link across components; alternated,
they end with each component a star around its smallest node (the paper: O(log² n) rounds).
The loop stops when the edges are stars (no node both a child and a parent, one parent per
child): then ``dst`` is the component's smallest node. Each round's edges are cut from their
lineage (``localCheckpoint``), so a round's plan does not grow with the rounds.

``tree_parents`` grows, from given start nodes, the breadth-first spanning tree that
local/components.py's ``tree_parents`` grows (the same parents), one round per hop.

Skew: a node with many neighbours (the first copy of a page with 100,000 copies) is one
window partition of that many rows, sorted and spilled by Spark; the edges of copies to
their first copy already form a star and take no round.
"""

from __future__ import annotations

import logging

from ...errors import DedupError

logger = logging.getLogger(__name__)
MAX_ROUNDS = 100


def _large_star(edges):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    both = (edges.select(F.col("src").alias("u"), F.col("dst").alias("v"))
            .unionByName(edges.select(F.col("dst").alias("u"), F.col("src").alias("v"))))
    smallest = F.least(F.min("v").over(Window.partitionBy("u")), F.col("u"))
    return (both.withColumn("m", smallest).where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("src"), F.col("m").alias("dst")).distinct())


def _small_star(edges):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_m = edges.withColumn("m", F.min("dst").over(Window.partitionBy("src")))
    return (with_m.select(F.col("dst").alias("src"), F.col("m").alias("dst")).where(F.col("src") != F.col("dst"))
            .unionByName(with_m.select("src", F.col("m").alias("dst"))).distinct())


def _stars(edges) -> bool:
    """Whether every component of ``edges`` is a star around its smallest node."""
    from pyspark.sql import functions as F

    if not edges.groupBy("src").agg(F.count(F.lit(1)).alias("n")).where(F.col("n") > 1).isEmpty():
        return False
    children = edges.select(F.col("src").alias("dst"))
    return edges.join(children, "dst", "left_semi").isEmpty()


def roots(edges, node_a: str = "a", node_b: str = "b"):
    """``edges`` (two long columns, any orientation, self-loops allowed) -> ``(node, root)``
    for every node of an edge: ``root`` the smallest node of its component (a node in no
    edge is its own component and absent here)."""
    from pyspark.sql import functions as F

    a, b = F.col(node_a), F.col(node_b)
    current = (edges.where(a != b).select(F.greatest(a, b).alias("src"), F.least(a, b).alias("dst"))
               .distinct().localCheckpoint())
    rounds = 0
    while not _stars(current):
        if rounds == MAX_ROUNDS:
            raise DedupError(f"connected components did not converge in {MAX_ROUNDS} rounds of large-star/small-star")
        current = _small_star(_large_star(current)).localCheckpoint()
        rounds += 1
    logger.info("connected components: %d rounds of large-star and small-star", rounds)
    return current.select(F.col("src").alias("node"), F.col("dst").alias("root"))


def tree_parents(edges, start, node_a: str = "a", node_b: str = "b", weight: str = "distance"):
    """local/components.tree_parents on DataFrames: ``edges`` (two long node columns and an int
    ``weight``, undirected, no self-loops) and ``start`` (one long column ``node``) ->
    ``(node, parent, weight)`` for every node a start node reaches, the start nodes excepted:
    among a node's neighbours one hop nearer a start node, the one of least (weight, node).

    One round per hop, each a join of the last level's nodes with their edges: a neighbour of
    a node of level L is of level L - 1, L or L + 1, so excluding the last two levels leaves
    the next one, and no round reads the nodes reached before (work O(nodes + edges))."""
    from functools import reduce

    from pyspark.sql import functions as F

    both = (edges.select(F.col(node_a).alias("src"), F.col(node_b).alias("node"), F.col(weight).alias("weight"))
            .unionByName(edges.select(F.col(node_b).alias("src"), F.col(node_a).alias("node"),
                                      F.col(weight).alias("weight")))).localCheckpoint()
    frontier = start.select("node").distinct().localCheckpoint()
    previous = frontier.limit(0)
    levels = []
    while True:
        reached = (frontier.select(F.col("node").alias("src")).join(both, "src")
                   .join(frontier, "node", "left_anti").join(previous, "node", "left_anti")
                   .groupBy("node").agg(F.min(F.struct("weight", "src")).alias("best"))
                   .select("node", F.col("best.src").alias("parent"), F.col("best.weight").alias("weight"))
                   .localCheckpoint())
        if reached.isEmpty():
            break
        levels.append(reached)
        previous, frontier = frontier, reached.select("node")
    logger.info("spanning tree: %d levels", len(levels))
    return reduce(lambda x, y: x.unionByName(y), levels, reached)
