"""``load`` on this machine: every record of the inputs indexed or rejected, accounted for,
resumable.

``load_files`` reads records (corpus.py) in batches, fingerprints them on every core
(batches.py, workers.py), writes them (``Index.write``) and accounts for every record
(reports.py): ``read == indexed + skipped + rejected``. A rejected record (no text, bad JSON,
invalid UTF-8, featureless text, ...) is counted by reason, reported, and skipped; the load
goes on.

Resuming: writes are idempotent (the same document always makes the same keys), and after
every written batch the load saves its report with the index (``reports.Checkpoint``) under a
name derived from the inputs' identity and the options that shape the records
(``LoadOptions.checkpoint_key``). Run the same load again after a kill and it skips what was
done and finishes the rest; run it once more and it does nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from itertools import islice, repeat
from pathlib import Path
from typing import IO

import numpy as np

from ...index.confirm import CONFIRMED_BEYOND, kept_of
from ...index.index import Document, Index, document_meta
from ...index.neardup import near_pairs
from ...index.probed import earliest_other, found_edges
from ..batches import check_featurizers, fingerprinted
from ..corpus import Record, read_records
from ..interrupts import STOPS, Interrupted
from ..options import LoadOptions
from ..outputs import write_group_lines
from ..reports import Checkpoint, LoadReport, reject_line, rejects_file
from ..workers import FingerprintPool
from .components import id_groups
from .left_out import LeftOut

Progress = Callable[[int, int], None]  # (records done, text bytes done)


def load(index: Index, records: Iterable[Record], options: LoadOptions = LoadOptions(), *,
         checkpoint: str | None = None, rejects: IO[str] | None = None,
         on_reject: Callable[[Record], None] | None = None, progress: Progress | None = None) -> LoadReport:
    """Index every usable record and return the accounting (``options``: see LoadOptions;
    ``fmt``, ``fields`` and ``rejects`` are the reader's and the caller's business, unused here).

    ``checkpoint``: a key naming this load's inputs; with it an interrupted load resumes
    and a finished one is not repeated. Without it, loading the same records again
    rewrites the same keys and changes nothing. ``rejects``: an open file for the
    rejected records. Raises ``Interrupted`` on SIGINT (and SIGTERM inside
    ``interrupts.sigterm_raises``), saying how far the load got.
    """
    index.spec.check_inputs(options.fingerprints, lookups=options.skip_near_dups or bool(options.groups))
    marker = Checkpoint(index, checkpoint)
    state = None if options.restart else marker.read()
    report = LoadReport.from_dict(state["report"]) if state else LoadReport()
    if state and state["complete"]:
        report.already_complete = True
        return report
    report.resumed_after = done = report.read
    edges_path = Path(f"{options.groups}.edges") if options.groups else None
    edges = open(edges_path, "a" if state else "w", encoding="utf-8") if edges_path else None
    started = time.perf_counter() - report.elapsed_s
    chained: dict = {}  # indexed fingerprints whose copies are in the edges ((signature, simhash) with several): _chain
    stand_ins = {} if stands_in(index, options) else None  # the copies of a hot fingerprint: _stand_in
    left_out = (LeftOut(index, checkpoint, fresh=state is None, resumed=report.near_duplicates_skipped > 0)
                if options.skip_near_dups else None)
    try:
        with FingerprintPool(index.fingerprinter, options.pool_workers, index.sketcher,
                             index.spec.short is not None) as pool:
            remaining = islice(records, report.read, None)
            for batch in fingerprinted(remaining, options.fingerprints, options.batch_size, pool, index.signatures):
                start = report.read  # the input position of the batch's first record
                good = report.count(batch, rejects, on_reject)
                if options.fingerprints:
                    report.unlabeled += check_featurizers(good, index.fingerprinter.label)
                duplicate_of = (near_duplicates(index, good, edges, chained, left_out, start, stand_ins)
                                if (options.skip_near_dups or edges) else {})
                _write(index, good, duplicate_of if options.skip_near_dups else {}, report)
                if left_out is not None:  # before the checkpoint: a resume then finds them
                    left_out.add([good[p] for p in sorted(duplicate_of)], start)
                report.elapsed_s = time.perf_counter() - started
                marker.save(report, complete=False)
                done = report.read
                if progress is not None:
                    progress(report.read, report.text_bytes)
    except STOPS as stop:
        then = ("run the same command again to resume" if checkpoint
                else "a load from stdin cannot resume: run it again (writes are idempotent)")
        raise Interrupted(stop, f"stopped after {done:,} records, all written and checkpointed; {then}") from None
    finally:
        if edges is not None:
            edges.close()
        if left_out is not None:
            left_out.close()
    report.elapsed_s = time.perf_counter() - started
    marker.save(report, complete=True)
    if left_out is not None:
        left_out.remove()
    if edges_path is not None:
        with open(edges_path, encoding="utf-8") as f:
            write_group_lines(id_groups(tuple(json.loads(line)) for line in f), Path(options.groups))
        edges_path.unlink()
    return report


def _write(index: Index, good: list[Record], skipped: dict[int, str], report: LoadReport) -> None:
    """Index the good records of a batch but the ``skipped`` positions; counts into ``report``."""
    docs, now = [], int(time.time())
    for position, record in enumerate(good):
        if position in skipped:
            report.near_duplicates_skipped += 1
            continue
        length = None if record.text is None else len(record.text)
        docs.append(Document(record.id, record.simhash, document_meta(now, record.source, record.line, record.title,
                                                                      length), record.more, record.sketch,
                             record.kept))
    report.repeated += len(docs) - len({doc.id for doc in docs})  # later batches: counted as replaced
    if docs:
        written = index.write(docs)
        report.new += written.new
        report.replaced += written.replaced
        report.indexed += len(docs)


def load_files(index: Index, paths: list[str], options: LoadOptions = LoadOptions(), *,
               on_reject: Callable[[Record], None] | None = None, progress: Progress | None = None) -> LoadReport:
    """``load`` the records of files, folders or ``-`` (stdin), resumable: rerunning the
    same command resumes it (``LoadOptions.checkpoint_key``; stdin cannot be read twice:
    no checkpoint). ``options.rejects``: a JSONL file of every rejected record, appended to
    when a load resumes, written anew when a finished load is run again. A CSV, TSV or
    Parquet input without the columns the load needs is refused before anything is read."""
    options.check_inputs(paths)
    key = options.checkpoint_key(paths)
    records = read_records(paths, options.fmt, options.fields)
    with rejects_file(options.rejects, append=bool(key) and not options.restart) as rejects:
        report = load(index, records, options, checkpoint=key, rejects=rejects, on_reject=on_reject,
                      progress=progress)
    if report.already_complete and options.rejects and report.rejected:
        _write_rejects_again(index, paths, options)
        report.rejects_written = True
    return report


def _write_rejects_again(index: Index, paths: list[str], options: LoadOptions) -> None:
    """The rejects file of a finished load, from the inputs read (and fingerprinted) again;
    nothing is written to the index."""
    with open(options.rejects, "w", encoding="utf-8") as out, \
            FingerprintPool(index.fingerprinter, options.pool_workers) as pool:
        records = read_records(paths, options.fmt, options.fields)
        for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool, index.signatures):
            out.writelines(reject_line(r.source, r.line, r.id, r.error) for r in batch if r.error)


def near_duplicates(index: Index, batch: list[Record], edges: IO[str] | None, chained: dict,
                    left_out: LeftOut | None = None, start: int = 0,
                    stand_ins: dict | None = None) -> dict[int, str]:
    """Position in ``batch`` -> the id of an earlier near-duplicate (indexed before this
    batch, or earlier in it), the first by (distance, id) (a record joined to its stand-in,
    ``signed_near_duplicates``: that one); else, with ``left_out``, one that an
    earlier batch of the load left out (``start``: the batch's input position, as left_out.py
    tags them). To ``edges``, pairs spanning the same groups as every pair found: each document to one document of every indexed
    fingerprint it matches, each indexed fingerprint's copies once per load (``_chain``), each
    copy to its first copy in the batch and the first copies of near fingerprints. Linear in the
    copies of a fingerprint, never quadratic."""
    found: dict[int, str] = {}
    pairs: list[tuple[str, str]] = []
    if index.lookup_options:  # several signatures, probes or a confirmation
        return signed_near_duplicates(index, batch, edges, chained, left_out, start, stand_ins)
    for position, (record, matches) in enumerate(zip(batch, index.query_many([r.simhash for r in batch], None, 1))):
        runs = matches.runs
        others = [(run.distance, other) for run in runs
                  if (other := next((i for i in run.ids[:2] if i != record.id), None)) is not None]
        if others:
            found[position] = min(others)[1]
        for run in runs if edges is not None else ():
            other = next((i for i in run.ids[:2] if i != record.id), None)
            if other is not None:
                pairs.append((other, record.id))
            pairs.extend(_chain(chained, run.simhash, run.ids, False))
    simhashes = np.array([r.simhash for r in batch], dtype=np.uint64)
    near = near_pairs(simhashes, index.scheme, index.k)
    earliest = near.earliest_earlier()
    for j in np.flatnonzero(earliest >= 0).tolist():
        i = int(earliest[j])
        if batch[i].id == batch[j].id:  # the same id twice: its earliest other id, if any
            i = next((x for x in near.earlier_of(j) if batch[x].id != batch[j].id), -1)
        if i >= 0:
            found.setdefault(j, batch[i].id)
    if edges is not None:
        pairs.extend((batch[i].id, batch[j].id) for i, j in near.edges().tolist() if batch[i].id != batch[j].id)
        edges.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    _left_out_earlier(left_out, batch, found, start, (None, None, None, None), edges)
    return found


def signed_near_duplicates(index: Index, batch: list[Record], edges: IO[str] | None, chained: dict,
                           left_out: LeftOut | None = None, start: int = 0,
                           stand_ins: dict | None = None) -> dict[int, str]:
    """``near_duplicates`` of an index of several signatures or with probes: what a lookup of
    each record finds (``Index.query_many`` over every signature and probe), indexed (the first
    by (distance, id)) or else earlier in the batch (``earliest_other``: the earliest with
    another id). To ``edges``, as ``near_duplicates`` writes them, each run's copies chained
    once per signature and fingerprint (``chained``), and inside the batch the pairs of
    ``probed.found_edges``: linear in the copies. ``stand_ins`` (``stands_in``): a record
    identical to a looked-up record of a hot fingerprint is joined to it, not looked up."""
    more, masks, sketches, kepts = index.lookup_args(batch)
    found: dict[int, str] = {}
    pairs: list[tuple[str, str]] = []
    walked: set[int] = set()  # the id lists chained in this batch: its queries share them (alive till its end)
    keys = [] if stand_ins is None else [_copy_key(batch, p, more, sketches, kepts) for p in range(len(batch))]
    asked = [p for p, key in enumerate(keys) if key not in stand_ins] if keys else list(range(len(batch)))
    for p, key in enumerate(keys):  # a record with a stand-in: joined to it
        if key in stand_ins and stand_ins[key] != batch[p].id:
            found[p] = stand_ins[key]
            pairs.append((stand_ins[key], batch[p].id))
    answers = index.query_many([batch[p].simhash for p in asked], None, 1, *(
        None if a is None else [a[p] for p in asked] for a in (more, masks, sketches, kepts)))
    for position, matches in zip(asked, answers):
        record = batch[position]
        if keys:
            _stand_in(stand_ins, keys[position], record.id, matches)
        others = [(run.distance, other) for run in matches.runs
                  if (other := next((i for i in run.ids[:2] if i != record.id), None)) is not None]
        if others:
            found[position] = min(others)[1]
        for run, signature in zip(matches.runs, matches.run_signatures or repeat(None)) if edges is not None else ():
            other = next((i for i in run.ids[:2] if i != record.id), None)
            if other is not None:
                pairs.append((other, record.id))
            if id(run.ids) in walked:  # chained for an earlier query of the batch: nothing new
                continue
            walked.add(id(run.ids))
            pairs.extend(_chain(chained, (signature, run.simhash), run.ids,
                                (run.distance > CONFIRMED_BEYOND or index.spec.short is not None) and sketches is not None))
    columns = [[r.simhash for r in batch], *map(list, zip(*(r.more for r in batch)))][:len(index.signatures)]
    confirm = None if sketches is None else (sketches, index.confirm, index.spec.short, kept_of(sketches, kepts))
    for j, i in earliest_other(columns, masks, index.k, confirm, [r.id for r in batch]).items():
        found.setdefault(j, batch[i].id)
    if edges is not None:
        pairs.extend((batch[i].id, batch[j].id) for i, j in found_edges(columns, masks, index.schemes, index.k,
                                                                         confirm).tolist()
                     if batch[i].id != batch[j].id)
        edges.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    _left_out_earlier(left_out, batch, found, start, (more, masks, sketches, kepts), edges)
    return found


HOT = 256  # documents of one fingerprint (indexed, agreeing with a record) that make it hot: _stand_in


def stands_in(index: Index, options: LoadOptions) -> bool:
    """Whether ``load --groups`` joins a record to an identical record of a hot fingerprint
    without a lookup (``_stand_in``): an index of several signatures, a confirmation or the
    short-text rule (whose lookups read every copy's cell), without probes (a probe's match is
    not symmetric) or a TTL (a stand-in may expire), and a load that does not skip near-duplicates
    (whose copies are never indexed, and which names the first near-duplicate by (distance, id))."""
    return (bool(options.groups) and not options.skip_near_dups and bool(index.lookup_options)
            and not any(index.probes) and not index.ttl)


def _copy_key(batch: list[Record], p: int, more, sketches, kepts) -> tuple:
    """What a lookup of ``batch[p]`` reads of it: its simhashes, sketch and kept text."""
    return (batch[p].simhash, None if more is None else tuple(more[p]),
            None if sketches is None else sketches[p], None if kepts is None else kepts[p])


def _stand_in(stand_ins: dict, key: tuple, doc_id: str, matches) -> None:
    """Make the record ``doc_id`` (its ``key``, its lookup's ``matches``) the stand-in of every
    later record with its key, when one of its own fingerprints (a run at distance 0) held at
    least ``HOT`` documents that agree with it (a trigger only: any record may stand in for its
    copies).

    Exact: the rule is symmetric and reads only the key, so an identical record finds every
    document the stand-in found (joined to it) and every document indexed since that is near it
    (whose own lookups found the stand-in). A stand-in written again with another text stays
    joined to what its lookup found (a load's edges are never withdrawn), so its copies are too,
    as their own lookups would join them. Without it each copy of a text copied 100,000 times
    read every earlier copy's cell: a load's time grew with the square of the copies. Memory:
    one entry per hot fingerprint and key."""
    if key not in stand_ins and any(run.distance == 0 and len(run.ids) >= HOT for run in matches.runs):
        stand_ins[key] = doc_id


def _left_out_earlier(left_out: LeftOut | None, batch: list[Record], found: dict[int, str], start: int,
                      args: tuple, edges: IO[str] | None) -> None:
    """Into ``found``, the positions not in it yet that an earlier batch's left-out document
    with another id is near (``args``: the lookups' more, probes, sketches and kept texts per
    record, or Nones); to ``edges``, every document of the batch to one left-out document of every
    fingerprint it matches, as a batch of the whole input would join them."""
    if left_out is None:
        return
    rest = list(range(len(batch))) if edges is not None else [p for p in range(len(batch)) if p not in found]
    chosen = tuple(None if a is None else [a[p] for p in rest] for a in args)
    near = left_out.earlier([batch[p] for p in rest], start, chosen) if rest else {}
    for q, keys in near.items():
        found.setdefault(rest[q], keys[0])
    if edges is not None and near:
        keys = sorted({key for found_keys in near.values() for key in found_keys})
        original = dict(zip(keys, left_out.ids(keys)))
        edges.writelines(json.dumps((original[key], batch[rest[q]].id), ensure_ascii=False) + "\n"
                         for q, found_keys in near.items() for key in found_keys)


def _chain(chained: dict, key: tuple, ids: list[str], part: bool) -> list[tuple[str, str]]:
    """The edges chaining the documents of an indexed fingerprint (``key``: its signature and
    simhash; ``ids``: its documents a lookup found) once: all of them the first time, or with
    ``part`` (a run a confirmation or the short-text rule cut to the documents that agree with
    the query) those of this part not chained before to its first id (``chained``: key -> None
    once every document is; (key, first id of a part) -> the ids chained to it).

    A part is chained to its own first id, not to another part's: two parts of one fingerprint
    (a short text and an unrelated one with its hash, each agreeing with its own copies) are
    joined only where a query agrees with both."""
    if chained.get(key, ()) is None:
        return []
    if not part:
        chained[key] = None
        return [(ids[0], i) for i in ids[1:]]
    first = ids[0]
    seen = chained.setdefault((key, first), set())
    fresh = [i for i in ids if i not in seen and i != first]
    seen.update(fresh)
    return [(first, i) for i in fresh]
