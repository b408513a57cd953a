"""``groups`` on this machine: every pair of input documents within k bits (neardup.py's
pigeonhole search), their connected components (components.py), and which document of each
group to keep; the output as outputs.py defines it.

The usable records are numbered 0, 1, ... in input order; copies of one fingerprint are one
node of the pair search (n copies: n - 1 edges), and a group's first member in input order is
its id and the document kept.

Each dropped document's ``via`` (outputs.py defines it): a later copy of a fingerprint, its
first copy (distance 0); the first copy of a fingerprint, its parent in the breadth-first tree
of the group's distinct fingerprints grown from the kept one (components.tree_parents, ties
broken by (distance, first position)).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from ...index.arrays import unique_rows
from ...index.confirm import CONFIRMED_BEYOND, sketch_spec, sketches_agree
from ...index.layout import Scheme
from ...index.neardup import NearPairs, near_pairs, near_pairs_of_batches
from ...index.parts import give_back
from ...index.probed import first_per_sketch
from ...text.fingerprint import Fingerprinter, fingerprinter_from_spec
from ...text.shorts import SHORT_FLAG
from ..batches import check_featurizers, fingerprinted
from ..corpus import read_records
from ..fingerprint_blocks import fingerprint_parts
from ..options import GroupsOptions
from ..outputs import prepare_out, via_weight, write_summary
from ..reports import GroupsReport, rejects_file
from ..workers import FingerprintPool
from .group_output import IdSpill, write
from .kept_texts import KeptTexts
from .linked import Linked, spread


def assign(simhashes: np.ndarray, scheme: Scheme, k: int, more: np.ndarray | None = None,
           confirm: tuple[np.ndarray, int | None, dict] | None = None,
           short: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``link``'s groups of ``simhashes`` as four arrays over every position (``Linked.dense``)."""
    return link([np.asarray(simhashes, np.uint64)], scheme, k, more, confirm, short).dense()


def link(batches: list[np.ndarray], scheme: Scheme, k: int, more: np.ndarray | None = None,
         confirm: tuple[np.ndarray, int | None, dict] | None = None, short: str | None = None) -> Linked:
    """The groups (``Linked``: per document of a group of two or more, the position of its
    group's first member, of its ``via``, their distance and the place of the signature that
    found them, 0 for the body) of the body simhashes ``batches`` (uint64 arrays, in input
    order, taken as one; the list is emptied as it is read). ``more``: (n, s) the simhashes of
    the signatures after the body (``Record.more``), None for the body alone; ``confirm``: (each
    position's sketch, the bits allowed, a short sketch -> its kept text): beyond 3 bits two
    documents are near only when their sketches are within the bits allowed (index/confirm.py);
    ``short`` (the short-text rule, text/units.py; ``confirm`` then holds the sketches, with None
    allowed without a confirmation): a pair of which either is short is near only as
    ``confirm.sketches_agree`` says, at any distance, copies of one fingerprint too.

    The nodes are the distinct fingerprints (with several signatures or a confirmation, the
    distinct tuples of them and the sketch: every document of a node has its first document's
    simhashes, so an edge's distance between two nodes' first documents is exact); each
    signature's near pairs join the nodes of their first copies (beyond 3 bits with a
    confirmation, the first node of each sketch of one to that of each sketch of the other
    within the bits allowed), and its copies join each node to the node of its fingerprint's
    first. The body alone, the input is never held twice: its batches are let go once the
    distinct fingerprints are known (``near_pairs_of_batches``), and every array over all
    positions is of ``position_type``."""
    if more is None and confirm is None:
        found = near_pairs_of_batches(batches, scheme, k)
        edges, weights = _edges(found, found.inverse, 0)
        give_back()  # the pair search's
        return spread(found.inverse, found.first, edges, weights, found.unique, found.inverse)
    simhashes = np.concatenate(batches) if batches else np.empty(0, np.uint64)
    batches.clear()
    columns = [simhashes, *(() if more is None else np.asarray(more, np.uint64).T)]
    found = [near_pairs(np.ascontiguousarray(column), scheme, k) for column in columns]
    keys = columns + ([np.asarray(confirm[0], np.uint64)] if confirm is not None else [])
    first, inverse = unique_rows(keys)
    # nodes ranked by their first position: the sketches' first nodes (first_per_sketch) are
    # then the earliest documents
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    node = rank[inverse.ravel()]  # position -> its node
    first_of = first[order]  # node -> its first position
    sketched = None if confirm is None else (keys[-1][first_of], confirm[1], short, confirm[2])  # node -> its sketch
    parts = [_edges(f, node, place, first_of, sketched) for place, f in enumerate(found)]
    edges, weights = parts[0] if len(parts) == 1 else _nearest(np.concatenate([e for e, _ in parts]),
                                                               np.concatenate([w for _, w in parts]))
    return spread(node, first_of, edges, weights, found[0].unique, found[0].inverse)


def _edges(found: NearPairs, node: np.ndarray, place: int, first_of: np.ndarray | None = None,
           confirm: tuple[np.ndarray, int | None, str | None, dict] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One signature's edges between nodes (``node``: position -> node) and their
    ``via_weight``: its near pairs, between the nodes of their first copies (with ``confirm``,
    node -> its sketch and the bits allowed, those beyond 3 bits between the first nodes of
    their sketches within the bits allowed: ``_confirmed_pairs``); with ``first_of`` (node ->
    its first position; several signatures or a confirmation) each node to the node of its
    fingerprint's first copy, at distance 0. Self-loops left out."""
    pairs = node[found.first[found.pairs]] if len(found.pairs) else np.empty((0, 2), np.int64)
    distance = np.bitwise_count(found.unique[found.pairs[:, 0]] ^ found.unique[found.pairs[:, 1]]) \
        if len(found.pairs) else np.empty(0, np.int64)
    flagged = None
    if confirm is not None:
        far = distance > CONFIRMED_BEYOND
        if confirm[2] is not None:  # the short-text rule: every pair of a fingerprint with a short node
            fingerprint = found.inverse[first_of]
            flagged = np.zeros(len(found.unique), bool)
            flagged[fingerprint[(confirm[0] & np.uint64(SHORT_FLAG)) != 0]] = True
            if len(found.pairs):
                far = far | flagged[found.pairs[:, 0]] | flagged[found.pairs[:, 1]]
        confirmed, confirmed_distance = _confirmed_pairs(found, node, first_of, confirm, far)
        pairs = np.concatenate([pairs[~far], confirmed])
        distance = np.concatenate([distance[~far], confirmed_distance])
    if first_of is not None:
        copies = np.stack([np.arange(len(first_of)), node[found.first[found.inverse[first_of]]]], axis=1)
        if flagged is not None:
            copies = np.concatenate([copies[~flagged[found.inverse[first_of]]], _short_copies(found, first_of, confirm, flagged)])
        pairs, distance = np.concatenate([pairs, copies]), np.concatenate([distance, np.zeros(len(copies), np.int64)])
    keep = pairs[:, 0] != pairs[:, 1]
    return pairs[keep].astype(np.int64), via_weight(distance[keep].astype(np.int64), place)


def _confirmed_pairs(found: NearPairs, node: np.ndarray, first_of: np.ndarray, confirm: tuple,
                     far: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The near pairs of distinct fingerprints marked ``far`` (beyond 3 bits) as edges between
    nodes: per pair, the first node of each sketch among the nodes of one fingerprint to the
    first node of each sketch of the other's within the bits allowed (every node of a
    fingerprint is joined to its first copy's, so one node per sketch stands for them); and
    their distances."""
    sketches, allowed, short, texts = confirm
    fingerprint = found.inverse[first_of]  # node -> its fingerprint under this signature
    near = found.pairs[far]
    which, a = first_per_sketch(fingerprint, sketches, near[:, 0])
    again, b = first_per_sketch(fingerprint, sketches, near[which, 1])
    a, which = a[again], which[again]
    distance = np.bitwise_count(found.unique[near[which, 0]] ^ found.unique[near[which, 1]])
    keep = sketches_agree(distance, sketches[a], sketches[b], allowed, short, texts)
    return np.stack([a[keep], b[keep]], axis=1).astype(np.int64), distance[keep]


def _short_copies(found: NearPairs, first_of: np.ndarray, confirm: tuple, flagged: np.ndarray) -> np.ndarray:
    """The short-text rule's edges inside the fingerprints ``flagged`` (some node short), between
    nodes: ``short_copy_edges`` of those fingerprints' nodes."""
    sketches, allowed, short, texts = confirm
    fingerprint = found.inverse[first_of]
    mine = np.flatnonzero(flagged[fingerprint])
    return mine[short_copy_edges(fingerprint[mine], sketches[mine], allowed, short, texts)]


def short_copy_edges(fingerprint: np.ndarray, sketches: np.ndarray, allowed: int | None, short: str,
                     texts: Mapping[int, str]) -> np.ndarray:
    """The short-text rule's edges inside fingerprints with a short member (``fingerprint``, its
    number, and ``sketches``: per member, the members in order, the earliest first), as pairs of
    member indices: each member to the first member of its fingerprint and sketch, and the first
    members of each pair of sketches of one fingerprint that agree at distance 0
    (``confirm.sketches_agree``; ``texts``: a short sketch -> its kept text). Quadratic in a
    fingerprint's distinct sketches: 165 unrelated poems of one fingerprint are 13,530
    comparisons. The one rule of both engines: the Spark engine runs it on each such
    fingerprint's nodes."""
    members = len(fingerprint)
    if not members:
        return np.empty((0, 2), np.int64)
    inverse = unique_rows([fingerprint, sketches])[1]
    head = np.full(inverse.max() + 1, members, np.int64)
    np.minimum.at(head, inverse, np.arange(members))
    own = np.stack([np.arange(members), head[inverse]], axis=1)
    wanted = np.unique(fingerprint)
    which, a = first_per_sketch(fingerprint, sketches, wanted)
    again, b = first_per_sketch(fingerprint, sketches, wanted[which])
    a = a[again]
    keep = (a < b) & sketches_agree(np.zeros(len(a), np.int64), sketches[a], sketches[b], allowed, short, texts)
    return np.concatenate([own, np.stack([a[keep], b[keep]], axis=1)]).astype(np.int64)


def _nearest(edges: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One edge per pair of nodes (a < b): the least weight of the signatures joining them."""
    if not len(edges):
        return edges.reshape(0, 2), weights
    edges = np.sort(edges, axis=1)
    order = np.lexsort((weights, edges[:, 1], edges[:, 0]))
    edges, weights = edges[order], weights[order]
    first = np.r_[True, (edges[1:] != edges[:-1]).any(axis=1)]
    return edges[first], weights[first]


def group_files(paths: list[str], out: str, options: GroupsOptions, fingerprinter: Fingerprinter) -> GroupsReport:
    """Read and fingerprint ``paths`` (as ``load``: every core), find the groups and write
    them to the folder ``out`` (outputs.py). What is held while the groups are found: each
    document's simhashes (and sketch), not its id (``IdSpill``)."""
    options.check_inputs(paths)
    folder = prepare_out(out)
    started = time.perf_counter()
    report = GroupsReport(k=options.k, signatures=options.signatures.label, confirm=options.confirm, short=options.short)
    spill, texts = IdSpill(folder), KeptTexts(folder)
    try:
        chunks, leads, sketches = _read(paths, options, fingerprinter, report, spill, texts)
        give_back()  # the records' and batches' memory
        scheme, linked = grouped(options, chunks, leads, sketches, texts.seal())
        report.documents, report.scheme = linked.n, scheme.name
        write(folder, spill, linked, report, options.signatures.names if len(options.signatures) > 1 else None)
    finally:
        spill.close()
        texts.close()
    report.elapsed_s = time.perf_counter() - started
    write_summary(folder, report.to_dict())
    return report


def _read(paths: list[str], options: GroupsOptions, fingerprinter: Fingerprinter, report: GroupsReport,
          spill: IdSpill, texts: KeptTexts) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Each batch's simhashes (uint64), with several signatures the (n, s - 1) simhashes after
    the body (``Record.more``), with a confirmation or the short-text rule the sketches; the ids
    into ``spill``, with the rule the short documents' kept texts into ``texts``; the rejected
    counted in ``report`` and written to ``--rejects``."""
    import pyarrow as pa

    chunks: list[np.ndarray] = []
    leads: list[np.ndarray] = []
    sketches: list[np.ndarray] = []
    signatures = options.signatures
    sketcher = None if options.confirm is None else fingerprinter_from_spec(sketch_spec(fingerprinter.spec))
    if options.fingerprints:
        return _read_fingerprints(paths, options, fingerprinter.label, report, spill), leads, sketches
    with rejects_file(options.rejects) as rejects, FingerprintPool(fingerprinter, options.pool_workers,
                                                                   sketcher, options.short is not None) as pool:
        records = read_records(paths, options.fmt, options.fields)
        for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool, signatures):
            good = report.count(batch, rejects)
            spill.append(pa.array([r.id for r in good], pa.string()))
            _gather(chunks, np.fromiter((r.simhash for r in good), dtype=np.uint64, count=len(good)))
            if len(signatures) > 1:
                _gather(leads, np.array([r.more for r in good], np.uint64).reshape(len(good), len(signatures) - 1))
            if sketcher is not None or options.short is not None:
                _gather(sketches, np.fromiter((r.sketch for r in good), dtype=np.uint64, count=len(good)))
                texts.add([r.sketch for r in good], [r.kept for r in good])
    return chunks, leads, sketches


def _read_fingerprints(paths: list[str], options: GroupsOptions, label: str, report: GroupsReport,
                       spill: IdSpill) -> list[np.ndarray]:
    """``_read`` of ``--fingerprints`` (fingerprint_blocks.py: a block of lines at a time)."""
    chunks: list[np.ndarray] = []
    with rejects_file(options.rejects) as rejects:
        for part in fingerprint_parts(paths, options.fmt, options.fields, label, options.batch_size):
            report.count(part.rejected, rejects)
            report.count_rows(None, len(part.ids), part.text_bytes)
            check_featurizers(part.featurized, label, "the one asked for (--featurizer)")
            spill.append(part.ids)
            _gather(chunks, part.simhashes)
    return chunks


def _gather(arrays: list[np.ndarray], batch: np.ndarray, size: int = 1 << 20) -> None:
    """Append a batch's array to ``arrays``, joining the trailing small ones once they hold
    ``size`` rows: a few large arrays rather than one per batch, whose memory the allocator
    could not give back to the system once they are let go."""
    arrays.append(batch)
    tail = 0
    while tail < len(arrays) and len(arrays[-1 - tail]) < size:
        tail += 1
    if tail > 1 and sum(len(a) for a in arrays[-tail:]) >= size:
        arrays[-tail:] = [np.concatenate(arrays[-tail:])]


def grouped(options: GroupsOptions, chunks: list[np.ndarray], leads: list[np.ndarray],
            sketches: list[np.ndarray], texts: Mapping[int, str] | None = None) -> tuple[Scheme, Linked]:
    """The scheme of the pair search (``options.scheme_for``) and the ``Linked`` groups of the
    batches (``chunks``, uint64, in input order, emptied as they are read; ``leads``: with
    several signatures, each batch's (n, s - 1) simhashes after the body; ``sketches``: with a
    confirmation or the short-text rule, each batch's; ``texts``: with the rule, a short sketch ->
    its kept text): the one groups of ``group_files`` and of the Arrow batch API."""
    signatures = options.signatures
    n = sum(len(chunk) for chunk in chunks)
    more = (np.concatenate(leads) if leads else np.empty((0, len(signatures) - 1), np.uint64)) if len(signatures) > 1 else None
    scheme = options.scheme_for(n)
    sketched = options.confirm is not None or options.short is not None
    confirm = None if not sketched else (np.concatenate(sketches) if sketches else np.empty(0, np.uint64),
                                         options.confirm, texts or {})
    return scheme, link(chunks, scheme, options.k, more, confirm, options.short)
