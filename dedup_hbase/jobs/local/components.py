"""Connected components on this machine: the local engine's one implementation, for
``groups`` (positions of documents) and ``load --groups`` (edges between document ids); and
the spanning tree that says through which member each document of a group was joined
(``tree_parents``, the ``via`` of ``groups``).

``roots`` and ``tree_parents`` work on whole numpy arrays: memory in proportion to the nodes
and edges, so n copies of one page (n - 1 edges, neardup.py) cost n, never n²."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

import numpy as np


def roots(count: int, edges: np.ndarray) -> np.ndarray:
    """Connected components of nodes 0..count-1 and (e, 2) ``edges``, vectorised (hooking on
    the smaller label, then pointer jumping, until every edge agrees): node -> the smallest
    node of its component. Linear work per round."""
    label = np.arange(count, dtype=np.int64)
    if not len(edges):
        return label
    a, b = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    while True:
        la, lb = label[a], label[b]
        differ = la != lb
        if not differ.any():
            return label
        a, b, la, lb = a[differ], b[differ], la[differ], lb[differ]
        low, high = np.minimum(la, lb), np.maximum(la, lb)
        np.minimum.at(label, high, low)  # hook the larger root under the smaller label
        while True:  # compress: every node points to its root
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped


def tree_parents(count: int, edges: np.ndarray, weights: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A breadth-first spanning forest of nodes 0..count-1 and the undirected (e, 2) ``edges``
    (``weights``: one small non-negative integer per edge), grown from the nodes ``start``
    (boolean per node): per node, its parent (-1 for a start node and a node no start reaches)
    and the weight of the edge to it (-1 likewise).

    A node's parent is, among its neighbours one hop nearer a start node than itself, the one
    of least (weight, node number): so a node of a chain a - b - c started at a has parent b,
    and the tree is the same whatever order the edges come in. The Spark engine runs this
    function on each component (spark/components.py). Work O(nodes + edges) over as many
    rounds as the deepest node's hops; memory in proportion to the edges."""
    parent = np.full(count, -1, dtype=np.int64)
    weight = np.full(count, -1, dtype=np.int64)
    if not len(edges):
        return parent, weight
    src = np.concatenate([edges[:, 0], edges[:, 1]]).astype(np.int64)
    dst = np.concatenate([edges[:, 1], edges[:, 0]]).astype(np.int64)
    both = np.concatenate([weights, weights]).astype(np.int64)
    order = np.argsort(src, kind="stable")
    dst, both = dst[order], both[order]
    degree = np.bincount(src, minlength=count)
    begins = np.cumsum(degree) - degree
    seen = np.asarray(start, dtype=bool).copy()
    frontier = np.flatnonzero(seen & (degree > 0))  # a start node without edges reaches nothing
    while len(frontier):
        counts = degree[frontier]
        at = np.repeat(begins[frontier] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        node, via, w = dst[at], np.repeat(frontier, counts), both[at]
        new = ~seen[node]
        node, via, w = node[new], via[new], w[new]
        best = np.lexsort((via, w, node))  # per node, the least (weight, parent) first
        node, via, w = node[best], via[best], w[best]
        lead = np.r_[True, node[1:] != node[:-1]] if len(node) else np.empty(0, bool)
        frontier = node[lead]
        parent[frontier], weight[frontier] = via[lead], w[lead]
        seen[frontier] = True
    return parent, weight


def groups_of(label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``label`` (node -> the first node of its group, as ``roots`` gives): the nodes of
    the groups of two or more, by group (in the order of their first node) and in node order
    within one, and where each group starts in them (``cuts``: one more than the groups)."""
    sizes = np.bincount(label, minlength=len(label))
    members = np.flatnonzero(sizes[label] > 1)
    members = members[np.argsort(label[members], kind="stable")]
    starts = np.flatnonzero(np.r_[True, label[members][1:] != label[members][:-1]]) if len(members) else []
    return members, np.r_[starts, len(members)].astype(np.int64)


def id_groups(pairs: Iterable[tuple[str, str]]) -> Iterator[list[str]]:
    """The connected components of edges between ids, each a list of ids in the order they
    were first seen, the components in the order of their first-seen id."""
    number: dict[str, int] = {}
    ends = array("q")
    for a, b in pairs:
        ends.append(number.setdefault(a, len(number)))
        ends.append(number.setdefault(b, len(number)))
    ids = list(number)
    del number
    members, cuts = groups_of(roots(len(ids), np.frombuffer(ends, np.int64).reshape(-1, 2)))
    for g in range(len(cuts) - 1):
        yield [ids[i] for i in members[cuts[g]:cuts[g + 1]].tolist()]
