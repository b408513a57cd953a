"""What a ``load --skip-near-dups`` has left out so far, kept on disk so that its rule does not
depend on ``--batch-size``.

The rule (local/load.py, the Spark engine's jobs/spark/adding.py): a document is left out when
the index holds a document with another id within k bits of it, or when an *earlier document of
the input* with another id is. An earlier document that was kept is in the index by then; one
that was left out is not. So a load keeps the fingerprints it leaves out in an index of its own,
an embedded store with the main index's spec (the same signatures, probes, sketch rule), looked
up with the same lookups. A document near only a left-out one of an earlier batch is then left
out as it would be in one batch of the whole input.

That index lives in a folder under ``cache_dir()`` named after the main index and the load's
checkpoint key. A killed load resumed by the same command finds it there. Its entries carry the
input position of their batch, and those of the batch being redone (or later) are ignored, so a
batch half written before the kill decides as it did. A load without a checkpoint (stdin) keeps
it in a temporary folder. The folder is removed when the load completes. Copies are bounded: of
the documents a batch leaves out with one fingerprint (and sketch), two with distinct ids are
kept, which is all the rule asks ("another id").

Not covered: a load resumed on another machine, or after the folder was deleted, is refused
(``LeftOutLost``) rather than silently deciding by batch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ...errors import DedupError
from ...index.index import Document, Index
from ...index.schema import load_schema
from ...stores import open_store


class LeftOutLost(DedupError):
    """A resumed load whose left-out fingerprints are gone."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dedup-hbase/left-out`` (``~/.cache/...`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dedup-hbase" / "left-out"


def _store_name(store) -> str:
    """The main store's name for the folder: an embedded store's folder resolved (the same store
    named by another relative path, or through a link, is the same), else its URL."""
    path = getattr(store, "path", None)
    return os.path.realpath(path) if isinstance(path, Path) else store.url


def _hashed(doc_id: str) -> str:
    return hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


class LeftOut:
    """The left-out documents of one load (``close`` at its end: the folder is kept for a
    resume unless the load is complete). ``checkpoint``: the load's key (None: a temporary
    folder); ``fresh``: the load starts from its first record (any earlier folder of it is
    wiped); ``resumed``: it resumes after documents were left out already, so the folder must
    be there."""

    def __init__(self, index: Index, checkpoint: str | None, fresh: bool, resumed: bool) -> None:
        self.main = index
        if checkpoint is None:
            self.folder, self._temporary = Path(tempfile.mkdtemp(prefix="dedup-hbase-left-out-")), True
        else:
            name = hashlib.sha256(f"{_store_name(index.store)}\n{checkpoint}".encode()).hexdigest()[:24]
            self.folder, self._temporary = cache_dir() / name, False
        if fresh:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif resumed and not (self.folder / "store").exists():
            raise LeftOutLost(f"this load has left out documents already, and the fingerprints it keeps of them "
                              f"({self.folder}) are gone: run it with --restart (writes are idempotent)")
        self._index: Index | None = None

    def _opened(self, create: bool) -> Index | None:
        if self._index is None:
            store = open_store(f"local:{self.folder / 'store'}", create=create, read_only=False)
            if not store.exists():
                if not create:
                    return None
                self.folder.mkdir(parents=True, exist_ok=True)
                store.create(load_schema())
            self._index = Index(store, self.main.spec, self.main.fingerprinter)
        return self._index

    def earlier(self, batch: Sequence, start: int, args: tuple) -> dict[int, list[str]]:
        """Position in ``batch`` (records with ``.id`` and ``.simhash``) -> the left-out documents
        with another id that a lookup of it finds, left out before input position ``start`` (the
        batch's first record): one per fingerprint found, by their keys here (``ids`` gives the
        documents' own). ``args``: ``query_many``'s more, probes, sketches and kept texts, or Nones."""
        index = self._opened(create=False)
        if index is None or not batch:
            return {}
        found: dict[int, list[str]] = {}
        matches = index.query_many([r.simhash for r in batch], None, None, *args)
        for position, (record, found_here) in enumerate(zip(batch, matches)):
            mine = _hashed(record.id)
            for run in found_here.runs:
                tagged = next((t for t in run.ids if int(t.split(":")[0], 16) < start and t.split(":")[2] != mine),
                              None)
                if tagged is not None:
                    found.setdefault(position, []).append(tagged)
        return found

    def ids(self, keys: Sequence[str]) -> list[str]:
        """The ids of the left-out documents kept under ``keys`` (``earlier``'s)."""
        return [doc.meta["id"] for doc in self._opened(create=False).get(list(keys))]

    def add(self, records: Sequence, start: int) -> None:
        """Keep the fingerprints of ``records``, left out of the batch that starts at input
        position ``start``: of each fingerprint (with its other signatures and sketch), the
        first two with distinct ids."""
        kept: dict[tuple, set[str]] = {}
        docs = []
        for n, r in enumerate(records):  # keyed start:n:hash, so one id left out twice keeps both fingerprints
            ids = kept.setdefault((r.simhash, tuple(r.more or ()), r.sketch), set())
            if len(ids) < 2 and r.id not in ids:
                ids.add(r.id)
                docs.append(Document(f"{start:x}:{n:x}:{_hashed(r.id)}", r.simhash, {"id": r.id},
                                     tuple(r.more or ()), r.sketch, r.kept))
        if docs:
            self._opened(create=True).write(docs)

    def close(self) -> None:
        """Release the store; a temporary folder (a load without a checkpoint) is removed, any
        other kept for a resume."""
        if self._index is not None:
            self._index.store.close()
            self._index = None
        if self._temporary:
            shutil.rmtree(self.folder, ignore_errors=True)

    def remove(self) -> None:
        """Remove the folder: the load is complete (its checkpoint says so)."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)
