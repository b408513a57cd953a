"""What a bulk job is asked to do, on either engine: one options object per job (``LoadOptions``,
``CheckOptions``, ``GroupsOptions``) over the options every job reads its inputs with
(``InputOptions``), and where the Spark engine runs (``SparkOptions``).

The options are checked when they are made (a bad value is refused before anything is read);
``InputOptions.check_inputs`` refuses, before a job starts, an input whose header lacks the
columns the job needs. Both engines take the same objects (engines.py): an option one engine
cannot honour is refused by that engine, with what to use instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput
from ..index.confirm import check_confirm, check_short
from ..index.layout import Scheme
from ..index.plan import best_scheme
from ..index.spec import IndexSpec
from ..text.signatures import Signatures
from .corpus import FORMATS, Fields, columns_of, format_of

DEFAULT_K = 3
# documents from which the 5-split's pair search beats the 4-split's (docs/benchmarks.md)
SCHEME_5_FROM = 400_000


def is_uri(path: str) -> bool:
    """Whether an input or output is a URI of another file system than this machine's
    (``hdfs://``, ``s3a://`` ...; ``file:`` and a Windows drive letter are this machine's)."""
    scheme = urlsplit(path).scheme
    return len(scheme) > 1 and scheme != "file"


def uri_of(path: str) -> str:
    """A folder or file as a URI for Spark and Hadoop: a URI as it is, a local path made absolute."""
    return path if is_uri(path) or path.startswith("file:") else "file://" + os.path.abspath(path)


@dataclass(frozen=True)
class InputOptions:
    """How a job reads its inputs: ``fmt`` (corpus.FORMATS), the ``fields`` of a record,
    ``fingerprints`` (records carry a precomputed ``simhash``; their text is not read),
    ``batch_size`` (records per batch: fingerprint, write, checkpoint) and ``workers``
    (fingerprinting workers of the local engine; None: one per core)."""

    fmt: str = "auto"
    fields: Fields = Fields()
    fingerprints: bool = False
    batch_size: int = 2000
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise InvalidInput(f"unknown format {self.fmt!r}: choose one of {', '.join(FORMATS)}")
        if self.batch_size < 1:
            raise InvalidInput(f"batch_size must be >= 1, not {self.batch_size}")
        if self.workers is not None and self.workers < 1:
            raise InvalidInput(f"workers must be >= 1, not {self.workers}")

    def check_inputs(self, paths: list[str]) -> None:
        """Refuse a CSV, TSV or Parquet input on this machine without the columns the job
        needs (corpus.check_columns); inputs on other file systems are checked as they are read."""
        check_columns([p for p in paths if not is_uri(p)], self.fmt, self.fields, self.fingerprints)

    @property
    def pool_workers(self) -> int | None:
        """The local engine's fingerprinting workers: one when nothing is fingerprinted."""
        return 1 if self.fingerprints else self.workers


@dataclass(frozen=True)
class LoadOptions(InputOptions):
    """What a load does with its inputs (the options of ``dedup-hbase load``).

    ``skip_near_dups``: a document within k bits of one indexed or earlier in the load is
    left out. ``groups``: write the near-duplicate groups found to this JSONL file.
    ``rejects``: write every rejected record to this JSONL file. ``restart``: ignore the
    checkpoint of an earlier run. ``max_rejects``: how many rejected records make the load
    count as failed (a count, or a fraction of the records read when below 1; None: only a
    load that rejected every record); see ``JobReport.failure``.
    """

    skip_near_dups: bool = False
    groups: str | None = None
    rejects: str | None = None
    restart: bool = False
    max_rejects: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_rejects is not None and (self.max_rejects < 0 or (1 <= self.max_rejects != int(self.max_rejects))):
            raise InvalidInput(f"max_rejects is a whole number or a fraction below 1, not {self.max_rejects}")

    @staticmethod
    def parse_max_rejects(text: str | None) -> float | None:
        """``--max-rejects``: ``10`` (records), ``0.01`` or ``1%`` (of the records read)."""
        if text is None:
            return None
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            value = -1.0
        if value < 0 or (value >= 1 and value != int(value)) or (text.endswith("%") and value >= 1):
            raise InvalidInput(f"max_rejects= is a number of records (10), or a share of them (0.01 or 1%), "
                               f"not {text!r}", arguments=("max_rejects",))
        return int(value) if value >= 1 else value

    def checkpoint_key(self, paths: list[str]) -> str | None:
        """The name of this load's checkpoint: the inputs as they are now and the options that
        shape the records; None for stdin (it cannot be read twice)."""
        return input_identity(paths, self.fmt, self.fields.id, self.fields.text, self.fingerprints,
                              self.skip_near_dups, *([self.fields.delimiter] if self.fields.delimiter else []),
                              *([self.fields.encoding] if self.fields.encoding != "utf-8" else []))


@dataclass(frozen=True)
class CheckOptions(InputOptions):
    """What a check looks up and where its records go (the options of ``dedup-hbase check``):
    ``k`` (None: the index's), ``max_matches`` per document (None: all; more are counted).
    The local engine hands each record to its caller (the command line prints it); the Spark
    engine writes them under ``out`` (a folder or URI) and, with ``add_new``, then indexes the
    documents that match nothing in the index nor earlier in the input."""

    batch_size: int = 1000
    workers: int | None = 1
    k: int | None = None
    max_matches: int | None = 1000
    out: str | None = None
    add_new: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_matches is not None and (isinstance(self.max_matches, bool) or self.max_matches < 1):
            raise InvalidInput(f"max_matches is a whole number >= 1, not {self.max_matches!r}")


@dataclass(frozen=True)
class GroupsOptions(InputOptions):
    """The options of ``dedup-hbase groups``: ``k``, the ``scheme`` of the pair search (None: by
    corpus size, ``scheme_for``), ``rejects`` (a JSONL file of every rejected record),
    ``signatures`` (two documents are near under any one of them: outputs.py), ``confirm`` (T:
    beyond 3 bits two documents are near only when their sketches are within T bits, as in an
    index with a confirmation: index/confirm.py; None: no confirmation), ``short`` (the
    short-text rule, text/shorts.py: two documents of which either is short are near, at any
    distance, only when both are and their character sketches are within this many bits;
    None: off)."""

    k: int = DEFAULT_K
    scheme: str | None = None
    rejects: str | None = None
    signatures: Signatures = Signatures()
    confirm: int | None = None
    short: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_confirm(self.confirm, self.k)
        check_short(self.short)
        self.spec.check_inputs(self.fingerprints, who="groups")
        if self.scheme is not None:
            Scheme.parse(self.scheme).check_k(self.k)

    @property
    def spec(self) -> IndexSpec:
        """What an index of these options is, for what the pair search shares with one (no scheme:
        ``scheme_for`` picks it by corpus size)."""
        return IndexSpec(None, self.k, self.signatures, confirm=self.confirm, short=self.short)

    def scheme_for(self, documents: int) -> Scheme:
        """The given scheme, else the 4-split below ``SCHEME_5_FROM`` documents and the
        5-split from there on; a scheme that cannot guarantee k is refused, and a k above 3
        gets ``plan.best_scheme`` (the 4- and 5-split find every match within 3 bits only).
        With the 4-split a flag's bucket holds about N / 2^16 fingerprints, compared pairwise;
        with the 5-split (10 flags) about N / 2^26, at 2.5 times the sorting."""
        if self.scheme is not None:
            scheme = Scheme.parse(self.scheme)
        elif self.k > 3:
            scheme = best_scheme(self.k, max(documents, 1))
        else:
            scheme = Scheme(5, 2) if documents >= SCHEME_5_FROM else Scheme(4, 1)
        scheme.check_k(self.k)
        return scheme


@dataclass(frozen=True)
class SparkOptions:
    """Where and how a Spark job runs: the master (``local[*]``, ``yarn``, ``k8s://...``), Spark
    settings (``--spark-conf KEY=VALUE``), the staging folder or URI of the HFiles, and the
    executors' packed Python environment (``env``: an archive of ``dedup-hbase pack-env``,
    shipped when the master is not a local one); or, in place of a master, a Spark Connect
    server (``remote``: ``sc://HOST:PORT``) that runs the job on its own (``env`` then a local
    archive, uploaded as the session's artifact)."""

    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    staging: str | None = None
    env: str | None = None
    remote: str | None = None

    def __post_init__(self) -> None:
        if self.remote is not None and not self.remote.startswith("sc://"):
            raise InvalidInput(f"a Spark Connect server is sc://HOST:PORT, not {self.remote!r}")

    @staticmethod
    def parse_conf(items: list[str] | None) -> dict[str, str]:
        """Spark settings given as KEY=VALUE."""
        conf = {}
        for item in items or []:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise InvalidInput(f"a Spark setting is KEY=VALUE, not {item!r}")
            conf[name.strip()] = value
        return conf


_FLAG_OF = {"id": "--id-field", "text": "--text-field"}


def check_columns(paths: Iterable[str], fmt: str, fields: Fields, fingerprints: bool = False) -> None:
    """Refuse, before a job reads any record, a CSV, TSV or Parquet input whose header has no
    column for the id, or for the text (the simhash with ``fingerprints``): every record would
    be rejected. JSON lines and text have no header: their records are checked one by one."""
    wanted = [("id", fields.id), ("simhash", fields.simhash) if fingerprints else ("text", fields.text)]
    for path in _structured_files(paths, fmt):
        columns = columns_of(path, fmt, fields)
        for role, name in wanted:
            if columns is not None and name not in columns:
                how = f"; name the {role} column with {_FLAG_OF[role]}" if role in _FLAG_OF else ""
                raise InvalidInput(f"{path} has no {name!r} column (its columns: "
                                   f"{', '.join(columns) or 'none'}){how}")


def _structured_files(paths: Iterable[str], fmt: str) -> Iterator[Path]:
    for path in paths:
        p = Path(path)
        files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")) if p.is_dir() else [p]
        for f in files:
            if path != "-" and f.exists() and (fmt if fmt != "auto" else format_of(f)) in ("csv", "tsv", "parquet"):
                yield f


def input_identity(paths: Iterable[str], *settings: Any) -> str | None:
    """A key naming these inputs as they are now (paths, sizes, modification times) and
    the settings that shape the records; None when an input is stdin (it cannot be
    read again, so a load from it cannot resume)."""
    import hashlib

    parts: list[Any] = [list(map(repr, settings))]
    for path in paths:
        if path == "-":
            return None
        p = Path(path).resolve()
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        parts.extend((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists())
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]
