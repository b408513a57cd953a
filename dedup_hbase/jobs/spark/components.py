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

``tree_parents`` runs local/components.py's ``tree_parents`` on each component (one shuffle
puts a component's edges in one task): the same breadth-first spanning tree, one function.

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


def members(found):
    """``roots``' ``(node, root)`` with each root as a row of its own: every node of a component
    of two or more, with its root."""
    from pyspark.sql import functions as F

    return found.unionByName(found.select(F.col("root").alias("node"), "root").distinct())


def tree_parents(edges, found, node_a: str = "a", node_b: str = "b", weight: str = "distance"):
    """local/components.tree_parents, the same function, run on each component: ``edges`` (two
    long node columns and an int ``weight``, undirected) and ``found`` (``roots``' ``(node,
    root)``) -> ``(node, parent, weight)`` for every node of a component but its root, grown
    from the root (its smallest node).

    One shuffle puts each component's edges in one partition (by root); each partition's
    components are one forest for the local function, its roots the start nodes (``_forest``).
    A component is held whole by one task: memory in proportion to its edges (the copies of a
    page are not nodes: they join their first copy's node)."""
    from pyspark.sql import functions as F

    rooted = (edges.where(F.col(node_a) != F.col(node_b))
              .join(members(found).select(F.col("node").alias(node_a), "root"), node_a)
              .select(F.col(node_a).alias("a"), F.col(node_b).alias("b"), F.col(weight).cast("long").alias("w"),
                      "root"))
    tree = rooted.repartition("root").mapInArrow(_forest, "node long, parent long, weight long")
    return tree.withColumn("weight", F.col("weight").cast(edges.schema[weight].dataType))


def _forest(batches):
    """mapInArrow function: rows (a, b, w, root) of whole components -> (node, parent, weight)
    of each node a root reaches, the roots excepted, by local/components.tree_parents."""
    import numpy as np
    import pyarrow as pa

    from ..local.components import tree_parents as local_tree

    batches = list(batches)
    if not batches or not sum(b.num_rows for b in batches):
        return
    table = pa.Table.from_batches(batches)
    a, b, w, root = (table.column(name).to_numpy() for name in ("a", "b", "w", "root"))
    nodes, inverse = np.unique(np.concatenate([a, b, root]), return_inverse=True)  # in node order: the same ties
    n = len(a)
    start = np.zeros(len(nodes), dtype=bool)
    start[inverse[2 * n:]] = True
    parent, weights = local_tree(len(nodes), np.stack([inverse[:n], inverse[n:2 * n]], axis=1), w, start)
    reached = np.flatnonzero(parent >= 0)
    for at in range(0, len(reached), 1 << 20):
        part = reached[at:at + (1 << 20)]
        yield pa.RecordBatch.from_arrays([pa.array(nodes[part]), pa.array(nodes[parent[part]]),
                                          pa.array(weights[part])], names=["node", "parent", "weight"])
