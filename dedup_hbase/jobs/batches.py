"""Records fingerprinted in batches, with the checks every bulk job shares.

A load, a check, a groups job and the Spark engine's workers all turn input records
(corpus.py) into fingerprints the same way, here: a record with a usable id gets its
``simhash`` (from its text, or the one it carries), any other its ``error``; the texts of
a batch go to the fingerprinter in one call. For an index of several signatures
(text/signatures.py) the same call fingerprints each record's lead texts too, into ``more``.
How a rejected record is counted and reported: reports.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from ..errors import IndexMismatch
from ..index.ids import encode_id, shown
from ..text.fingerprint import Fingerprinter
from ..text.signatures import Signatures, settled
from .corpus import Record
from .workers import FingerprintPool, fingerprint_both


def to_fingerprint(batch: list[Record], use_simhash: bool) -> list[Record]:
    """Check what can be checked without fingerprinting (setting ``error`` where a record
    fails); return the records whose text must be fingerprinted."""
    todo = []
    for record in batch:
        if record.error:
            continue
        try:
            encode_id(record.id)
        except ValueError as e:
            record.error = str(e)
            continue
        if use_simhash or record.text is None:
            if record.simhash is None:
                record.error = "no simhash" if use_simhash else "no text"
        else:
            todo.append(record)
    return todo


def _texts(todo: list[Record], signatures: Signatures) -> list[str]:
    """The texts to fingerprint: every record's, then (several signatures) its leads', in order."""
    texts = [r.text for r in todo]
    if len(signatures) > 1:
        texts += [part for r in todo for part in signatures.extra_texts(r.text)]
    return texts


def _set_results(todo: list[Record], results: list[int | str], signatures: Signatures = Signatures()) -> None:
    n, more = len(todo), len(signatures) - 1
    for i, (record, result) in enumerate(zip(todo, results[:n])):
        if isinstance(result, str):
            record.error = result
        else:
            record.simhash = result
            if more:
                record.more = settled(results[n + i * more:n + (i + 1) * more], result)


def _set_fingerprinted(todo: list[Record], results: list, signatures: Signatures, sketched: bool,
                       short: bool) -> None:
    """``workers.fingerprint_both``'s results onto ``todo``: each record's ``simhash`` or
    ``error`` and ``more``, with ``sketched`` (a sketcher or the rule) its ``sketch`` (None for
    a record without a fingerprint), with ``short`` its ``kept``."""
    n = len(results) - len(todo) * ((1 if sketched else 0) + (1 if short else 0))
    _set_results(todo, results[:n], signatures)
    if sketched:
        for record, sketch in zip(todo, results[n:n + len(todo)]):
            record.sketch = sketch if isinstance(sketch, int) and not record.error else None
    if short:
        for record, kept in zip(todo, results[n + len(todo):]):
            record.kept = kept if record.sketch is not None else ""


def fingerprint_batch(fingerprinter: Fingerprinter | None, batch: list[Record], use_simhash: bool = False,
                      signatures: Signatures = Signatures(), sketcher: Fingerprinter | None = None,
                      short: bool = False) -> None:
    """Set each record's ``simhash`` (from its text, or with ``use_simhash`` the one it
    carries) or its ``error``, in place, with several ``signatures`` its ``more``, with a
    ``sketcher`` (an index with a confirmation) or ``short`` (the short-text rule) its
    ``sketch`` and ``kept``, as ``fingerprinted`` does on a pool; the texts in one batch call.
    ``fingerprinter`` may be None when no record has a text to fingerprint."""
    todo = to_fingerprint(batch, use_simhash)
    if todo:
        sketched = sketcher is not None or short
        results = fingerprint_both(fingerprinter, _texts(todo, signatures), sketcher,
                                   [r.text for r in todo] if sketched else [], short)
        _set_fingerprinted(todo, results, signatures, sketched, short)


def fingerprinted(records: Iterable[Record], use_simhash: bool, batch_size: int,
                  pool: FingerprintPool, signatures: Signatures = Signatures()) -> Iterator[list[Record]]:
    """``fingerprint_batch`` over a stream of records: batches of ``batch_size``, fingerprinted
    on the pool's workers, yielded in input order; with several ``signatures``, each record's
    ``more`` too, with the pool's sketcher (an index with a confirmation) its ``sketch``, and
    with the pool's ``short`` (the short-text rule) its ``sketch`` and ``kept`` as
    ``units.text_sketches`` makes them
    (the job refuses ``use_simhash`` for them first: ``IndexSpec.check_inputs``)."""
    sketcher = pool.sketcher

    def checked() -> Iterator[tuple[list[Record], list[Record]]]:
        it = iter(records)
        while batch := list(islice(it, batch_size)):
            yield batch, to_fingerprint(batch, use_simhash)

    sketches = sketcher is not None or pool.short
    sketched = (lambda item: [r.text for r in item[1]]) if sketches else (lambda item: [])
    for (batch, todo), results in pool.map(checked(), lambda item: _texts(item[1], signatures), sketched):
        _set_fingerprinted(todo, results, signatures, sketches, pool.short)
        yield batch


def fingerprint_records(fingerprinter: Fingerprinter, records: Iterable[Record], *, use_simhash: bool = False,
                        batch_size: int = 1000, workers: int | None = 1) -> Iterator[Record]:
    """Every record, in input order, with ``simhash`` set, or ``error`` saying why not."""
    with FingerprintPool(fingerprinter, workers) as pool:
        for batch in fingerprinted(records, use_simhash, batch_size, pool):
            yield from batch


def check_featurizers(records: list[Record], label: str, whose: str = "this index's") -> int:
    """Refuse precomputed fingerprints that another featurizer than ``label`` made (they would
    silently be compared with incomparable ones); returns how many did not say which
    featurizer made them. ``whose``: whose featurizer ``label`` is, for the message."""
    for record in records:
        if record.featurizer is not None and record.featurizer != label:
            raise IndexMismatch(f"{record.where}: the fingerprint of {shown(record.id)} was made by featurizer "
                                f"{record.featurizer}, {whose} is {label}: fingerprints of different "
                                "featurizers are not comparable; nothing of this batch was written")
    return sum(record.featurizer is None for record in records)
