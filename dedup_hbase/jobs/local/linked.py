"""The groups of ``groups`` kept sparse: what each document in a group of two or more belongs
to and was joined through, and nothing for the others (a singleton is its own group, kept,
with no ``via``). Memory in proportion to the documents in groups and the edges between
them, not to the input: at 10^8 fingerprints with a few percent near each other, the
difference between a few hundred MB and 3.2 GB of per-position arrays.

``spread`` makes it from the nodes of the pair search (groups.py) and their edges: the
components and the breadth-first ``via`` tree (components.py) over the nodes an edge touches
only, numbered in the order of their first documents, so that a component's smallest node is
its earliest document and ties break as first positions do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..outputs import via_parts
from .components import roots, tree_parents

_CHUNK = 1 << 22  # positions looked at per step of a scan over all of them


@dataclass(frozen=True)
class Linked:
    """The groups of ``n`` documents (positions 0..n-1, input order).

    Per member (a document in a group of two or more; ``members`` ascending): ``group``, the
    group's first position; ``via``, the position it was joined through (-1 for the kept
    one, its group's first); ``distance`` and ``place`` (the signature that joined it) of that
    edge (-1 for the kept); ``size``, its group's size. ``unique`` and ``inverse`` give every
    position's body simhash (``unique[inverse[p]]``)."""

    n: int
    members: np.ndarray
    group: np.ndarray
    via: np.ndarray
    distance: np.ndarray
    place: np.ndarray
    size: np.ndarray
    unique: np.ndarray
    inverse: np.ndarray

    def dense(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per position: its group's first position, its via (-1 for a kept document), their
        distance and the signature's place (both -1 likewise)."""
        group = np.arange(self.n, dtype=np.int64)
        via, distance, place = (np.full(self.n, -1, np.int64) for _ in range(3))
        group[self.members], via[self.members] = self.group, self.via
        distance[self.members], place[self.members] = self.distance, self.place
        return group, via, distance, place

    def simhashes(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The body simhashes of positions ``start``..``stop`` - 1."""
        return self.unique[self.inverse[start:self.n if stop is None else stop]]


def spread(node: np.ndarray, first_of: np.ndarray, edges: np.ndarray, weights: np.ndarray,
           unique: np.ndarray, inverse: np.ndarray) -> Linked:
    """The ``Linked`` groups of positions whose nodes are ``node`` (position -> node; a
    node's positions are copies, joined to its first, ``first_of``: node -> first position, at
    distance 0) and the (e, 2) node ``edges`` with their ``via_weight``s."""
    n = len(node)
    touched = np.unique(edges) if len(edges) else np.empty(0, np.int64)  # ascending node numbers
    by_first = np.argsort(first_of[touched], kind="stable")
    local = np.empty(len(touched), np.int64)
    local[by_first] = np.arange(len(touched))  # place in touched -> its rank by first position
    ranked = local[np.searchsorted(touched, edges)] if len(edges) else np.empty((0, 2), np.int64)
    component = roots(len(touched), ranked)
    parent, weight = tree_parents(len(touched), ranked, weights, component == np.arange(len(touched)))
    # each array of ranks padded with -1 at its end: index -1 (not touched) reads it
    start_of = np.r_[first_of[touched][by_first], -1]  # rank -> its first position
    component, parent, weight = np.r_[component, -1], np.r_[parent, -1], np.r_[weight, -1]
    copies = _copies(node, first_of)
    nodes = np.union1d(touched, node[copies])  # the nodes of a group of two or more
    members = np.union1d(copies, first_of[nodes]).astype(np.int64)
    of = node[members]
    own = first_of[of].astype(np.int64)
    at = np.searchsorted(touched, of)
    rank = np.where(np.r_[touched, -1][at] == of, np.r_[local, -1][at], -1)
    copy = own != members
    group = np.where(rank >= 0, start_of[component[rank]], own)
    tree = parent[rank]
    via = np.where(copy, own, np.where(tree >= 0, start_of[tree], -1))
    distance, place = via_parts(np.where(copy, 0, weight[rank]))
    dropped = via >= 0
    _, where, counts = np.unique(group, return_inverse=True, return_counts=True)
    return Linked(n, members, group, via, np.where(dropped, distance, -1), np.where(dropped, place, -1),
                  counts[where.ravel()].astype(np.int64), unique, inverse)


def _copies(node: np.ndarray, first_of: np.ndarray) -> np.ndarray:
    """The positions that are not their node's first, ascending (a scan in steps of _CHUNK)."""
    found = []
    for start in range(0, len(node), _CHUNK):
        stop = min(len(node), start + _CHUNK)
        found.append(start + np.flatnonzero(first_of[node[start:stop]] != np.arange(start, stop)))
    return np.concatenate(found) if found else np.empty(0, np.int64)
