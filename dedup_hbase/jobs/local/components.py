"""Connected components on this machine: the local engine's one implementation, for
``groups`` (positions of documents) and ``load --groups`` (edges between document ids).

``roots`` works on whole numpy arrays: memory in proportion to the nodes and edges, so n copies
of one page (n - 1 edges, neardup.py) cost n, never n²."""

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
