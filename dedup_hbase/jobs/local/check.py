"""``check`` on this machine: every input record looked up in the index through its store, in
input order, one record each (outputs.check_record); nothing is written, but the new documents
with ``add_new`` (then loaded as ``load --skip-near-dups`` loads them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...errors import InvalidInput
from ...index.index import Index, Matches
from ..batches import fingerprinted
from ..corpus import Record, read_records
from ..interrupts import Interrupted
from ..options import CheckOptions, LoadOptions
from ..outputs import check_record
from ..reports import CheckReport
from ..workers import FingerprintPool


def check(index: Index, records: Iterable[Record], options: CheckOptions = CheckOptions(),
          report: CheckReport | None = None) -> Iterator[dict[str, Any]]:
    """The check record of every record, in input order (``options``: ``k``, ``max_matches``,
    ``fingerprints``, ``batch_size``, ``workers``; ``fmt`` and ``fields`` are the reader's),
    counted into ``report`` if given. Lookups are batched (``Index.query_many``: once per
    distinct fingerprint); a row of many cells (a fingerprint's thousands of copies) is read once
    in the pass, where the store keeps such rows (``Store.large_rows_kept``)."""
    report = CheckReport() if report is None else report
    index.spec.check_inputs(options.fingerprints, lookups=True)
    with (FingerprintPool(index.fingerprinter, options.workers, index.sketcher, index.spec.short is not None) as pool,
          index.store.large_rows_kept()):
        for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool, index.signatures):
            good = report.count(batch)
            answers = iter(look_up(index, good, options.k, options.max_matches))
            for record in batch:
                if record.error:
                    yield check_record(record, [], 0)
                    continue
                matches = next(answers)
                report.with_matches += bool(matches.total)
                yield check_record(record, [m.to_dict() for m in matches], matches.total)


def look_up(index: Index, good: list[Record], k: int | None, max_matches: int | None) -> list[Matches]:
    """Each fingerprinted record's matches (``Index.query_many``, with what this index's lookups
    take: ``Index.lookup_args``; with probes, each record's ``text``), in order: the one lookup of
    ``check``, and of the Arrow batch API's (pipelines/arrow.py)."""
    return index.query_many([r.simhash for r in good], k, max_matches, *index.lookup_args(good))


def check_files(index: Index, paths: list[str], options: CheckOptions,
                on_answer: Callable[[dict[str, Any]], None]) -> CheckReport:
    """``check`` of the records of files, folders or ``-`` (stdin): each record handed to
    ``on_answer`` as it comes; the counts. With ``options.add_new``, once every record is
    answered (against the index as it was), the inputs are read again and loaded with
    ``skip_near_dups``: a document within k bits of one indexed or earlier in the input is not
    indexed (the Spark engine's ``add_new``, the same documents). The local engine writes no
    folder (``out``: the Spark engine's)."""
    if options.out is not None:
        raise InvalidInput("out= needs engine=spark (the local engine writes its records to stdout)",
                           arguments=("out", "engine"))
    if options.add_new:
        if "-" in paths:
            raise InvalidInput("add_new=True reads its input twice (the records against the index as it was, then "
                               "the new documents indexed): give files, not stdin", arguments=("add_new",))
        if options.k is not None and index.scheme.check_k(options.k) != index.k:
            raise InvalidInput(f"add_new=True finds near-duplicates within the index's k ({index.k}), not "
                               f"k={options.k}", arguments=("add_new", "k"))
    options.check_inputs(paths)
    report = CheckReport()
    for answer in check(index, read_records(paths, options.fmt, options.fields), options, report):
        on_answer(answer)
    if options.add_new:
        report.added, report.skipped = _add_new(index, paths, options)
    return report


def _add_new(index: Index, paths: list[str], options: CheckOptions) -> tuple[int, int]:
    """``load`` of ``paths`` skipping near-duplicates, without a checkpoint (a check run again
    answers against the index it changed); (documents indexed, near-duplicates skipped)."""
    from .load import load

    loading = LoadOptions(fmt=options.fmt, fields=options.fields, fingerprints=options.fingerprints,
                          batch_size=options.batch_size, workers=options.workers, skip_near_dups=True)
    try:
        loaded = load(index, read_records(paths, options.fmt, options.fields), loading)
    except Interrupted as stop:
        again = Interrupted(stop, "stopped while indexing the new documents, every record checked; run the same "
                                  "command again (what it indexed stays, a document already indexed is not added "
                                  "twice)")
        again.signal = stop.signal
        raise again from None
    return loaded.indexed, loaded.near_duplicates_skipped
