"""The ``dedup-hbase`` command line: a thin shell over the library.

Every command takes ``--store URL`` (or the DEDUP_HBASE_STORE environment variable;
default: the folder ``dedup-index`` in the current directory) and ``--json``.
Errors a user can cause print one line and exit with code 1.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from contextlib import ExitStack
from contextvars import ContextVar
from typing import Annotated, Optional

import typer

from . import plan as planning
from .corpus import FORMATS, Fields, input_identity, read_records
from .errors import DedupError
from .features import make_featurizer
from .fingerprint import DEFAULT_SEED, Fingerprinter, parse_hex, to_hex
from .index import Index
from .layout import Scheme
from .loader import check as check_records
from .loader import fingerprint_record, load as load_records
from .schema import hbase_shell_ddl, load_schema
from .stores import DEFAULT_URL, ENV_VAR, open_store

app = typer.Typer(
    name="dedup-hbase", no_args_is_help=True, add_completion=False,
    help="Find near-duplicate documents in large corpora with 64-bit SimHash fingerprints "
         "and a prefix-scan index (embedded store or Apache HBase).\n\n"
         "Start with: dedup-hbase init; dedup-hbase load corpus.jsonl; dedup-hbase check new.jsonl --json")

Store = Annotated[str, typer.Option("--store", "-s", envvar=ENV_VAR, show_envvar=True,
                                    help="PATH or local:PATH (embedded), memory:, hbase://HOST:PORT/?table_prefix=P")]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON / JSON lines).")]
K = Annotated[Optional[int], typer.Option("--k", "-k", help="Max differing bits (default: the index's k).")]
IdField = Annotated[str, typer.Option(help="Input field holding the document id.")]
TextField = Annotated[str, typer.Option(help="Input field holding the text.")]
Format = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}.")]


# The resources (open stores) of the running command, closed when it ends.
_resources: ContextVar[ExitStack] = ContextVar("resources")


def _command(fn):
    """Register ``fn`` as a command whose user errors print one line and exit 1,
    and whose stores are closed when it ends, however it ends."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with ExitStack() as resources:
            token = _resources.set(resources)
            try:
                return fn(*args, **kwargs)
            except BrokenPipeError:  # `dedup-hbase check ... | head`: stop quietly
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise typer.Exit(0) from None
            except (DedupError, ValueError, OSError, KeyError) as e:
                message = e.args[0] if isinstance(e, KeyError) and e.args else e
                typer.echo(f"error: {message}", err=True)
                raise typer.Exit(1) from None
            finally:
                _resources.reset(token)
    return app.command()(wrapper)


def _out(obj) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False))


def _store(url: str, create: bool = False):
    """Open a store that is closed when the command ends, however it ends."""
    return _resources.get().enter_context(open_store(url, create=create))


def _open_index(url: str, fingerprinter: Fingerprinter | None = None) -> Index:
    return Index.open(_store(url), fingerprinter)


def _fingerprinter(featurizer: str | None, shingle_size: int | None, seed: int | None):
    if featurizer is None and shingle_size is None and seed is None:
        return None
    name = featurizer or ("shingles" if shingle_size else "jieba")
    params = {"n": shingle_size} if name == "shingles" and shingle_size else {}
    return Fingerprinter(make_featurizer(name, **params), DEFAULT_SEED if seed is None else seed)


Featurizer = Annotated[Optional[str], typer.Option(help="jieba (words, TF-IDF; default) or shingles (character n-grams).")]
ShingleSize = Annotated[Optional[int], typer.Option(help="Characters per shingle (shingles featurizer; default 4).")]
Seed = Annotated[Optional[int], typer.Option(help="mmh3 seed of the feature hashes (default 0).")]


@_command
def init(store: Store = DEFAULT_URL,
         scheme: Annotated[Optional[str], typer.Option(help="4 (4 blocks, flags 1-4), 5 (5 blocks in pairs, flags 1-10) or B/m. Default: 4, or the cheapest scheme for k > 3.")] = None,
         k: Annotated[int, typer.Option("--k", "-k", help="Default max differing bits of a lookup.")] = 3,
         featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
         regions: Annotated[Optional[int], typer.Option(help="HBase: regions of the index table (pre-split on the first key byte).")] = None,
         json_: Json = False) -> None:
    """Create an empty index: tables, scheme, k and featurizer."""
    chosen = Scheme.parse(scheme) if scheme else (Scheme(4, 1) if k <= 3 else planning.best_scheme(k))
    fingerprinter = _fingerprinter(featurizer, shingle_size, seed) or Fingerprinter(make_featurizer("jieba"))
    index = Index.create(_store(store, create=True), chosen, k, fingerprinter, regions)
    config = Index.read_config(index.store)
    if json_:
        _out({"store": index.store.url, **config})
    else:
        typer.echo(f"created index at {index.store.url}: scheme {chosen.name} ({chosen.blocks} blocks taken "
                   f"{chosen.take} at a time, {len(chosen.flags)} rows per document, finds every match "
                   f"within {chosen.max_k} bits), k={k}, featurizer {fingerprinter.featurizer.name}")


@_command
def load(files: Annotated[list[str], typer.Argument(help="Files or folders; - for stdin. JSONL, CSV, TSV, text; gz/bz2/xz/zst.")],
         store: Store = DEFAULT_URL, id_field: IdField = "id", text_field: TextField = "text",
         fmt: Format = "auto",
         fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Index each record's precomputed 'simhash' (16 hex digits), ignoring text.")] = False,
         skip_near_dups: Annotated[bool, typer.Option("--skip-near-dups", help="Do not index a document within k bits of one already indexed or earlier in the load.")] = False,
         groups: Annotated[Optional[str], typer.Option(help="Write the near-duplicate groups found during the load to this JSONL file.")] = None,
         rejects: Annotated[Optional[str], typer.Option(help="Write every rejected record (source, line, id, reason) to this JSONL file.")] = None,
         workers: Annotated[Optional[int], typer.Option(help="Fingerprinting processes (default: one per core).")] = None,
         batch_size: Annotated[int, typer.Option(help="Documents per batch (fingerprint, write, checkpoint).")] = 2000,
         restart: Annotated[bool, typer.Option("--restart", help="Ignore the checkpoint of an earlier run of the same load.")] = False,
         json_: Json = False,
         quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar, no per-record reports.")] = False,
         engine: Annotated[str, typer.Option(help="local (this machine's cores, Thrift puts) or spark (a Spark job; HBase: HFiles + bulk load).")] = "local",
         spark_master: Annotated[str, typer.Option(help="--engine spark: the Spark master.")] = "local[*]",
         spark_conf: Annotated[Optional[list[str]], typer.Option(help="--engine spark: a Spark setting KEY=VALUE (repeatable).")] = None,
         staging: Annotated[Optional[str], typer.Option(help="--engine spark: folder (or URI) for the HFiles before they are bulk-loaded (default: the temp folder).")] = None) -> None:
    """Bulk-load documents into the index, on every core. Bad records are reported and
    skipped. Interrupted? Run the same command again: it resumes where it stopped, and
    once finished it does nothing."""
    from .progress import LoadProgress

    if engine not in ("local", "spark"):
        raise ValueError(f"--engine is local or spark, not {engine!r}")
    index = _open_index(store)
    key = input_identity(files, fmt, id_field, text_field, fingerprints, skip_near_dups)
    if engine == "spark":
        if skip_near_dups or groups:
            raise ValueError("--skip-near-dups and --groups need --engine local (they look up each batch "
                             "in the index as it grows)")
        conf = {}
        for item in spark_conf or []:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise ValueError(f"--spark-conf takes KEY=VALUE, not {item!r}")
            conf[name.strip()] = value
        from .spark import spark_load

        reject_file = open(rejects, "w", encoding="utf-8") if rejects else None
        try:
            report = spark_load(index, files, fmt=fmt, id_field=id_field, text_field=text_field,
                                fingerprints=fingerprints, rejects=reject_file, spark_master=spark_master,
                                spark_conf=conf, staging=staging, checkpoint=key, restart=restart,
                                batch_size=batch_size)
        finally:
            if reject_file:
                reject_file.close()
        _load_summary(index, report, json_, skip_near_dups)
        return
    records = read_records(files, fmt, Fields(id=id_field, text=text_field))
    reject_file = open(rejects, "a" if key and not restart else "w", encoding="utf-8") if rejects else None
    try:
        with LoadProgress(enabled=not quiet and not json_) as bar:
            report = load_records(index, records, use_simhash=fingerprints, batch_size=batch_size,
                                  workers=workers, skip_near_dups=skip_near_dups, groups=groups,
                                  checkpoint=key, restart=restart, rejects=reject_file,
                                  on_reject=None if quiet else bar.reject, progress=bar.update)
    finally:
        if reject_file:
            reject_file.close()
    _load_summary(index, report, json_, skip_near_dups)


def _load_summary(index: Index, report, json_: bool, skip_near_dups: bool) -> None:
    if json_:
        _out({"store": index.store.url, **report.to_dict()})
        return
    if report.already_complete:
        typer.echo(f"already loaded (read {report.read}, indexed {report.indexed}): nothing to do; "
                   "--restart loads again", err=True)
        return
    reasons = ", ".join(f"{n} {r}" for r, n in report.rejected_by_reason.most_common())
    resumed = f"resumed after {report.resumed_after}; " if report.resumed_after else ""
    skipped = f", skipped {report.near_duplicates_skipped} near-duplicates" if skip_near_dups else ""
    typer.echo(f"{resumed}read {report.read}, indexed {report.indexed} ({report.new} new){skipped}, "
               f"rejected {report.rejected}{f' ({reasons})' if reasons else ''} in {report.elapsed_s:.1f} s: "
               f"{report.docs_per_s:,.0f} docs/s, {report.mb_per_s:.2f} MB/s", err=True)


@_command
def query(text: Annotated[Optional[str], typer.Argument(help="The document text (else --file, --simhash or stdin).")] = None,
          store: Store = DEFAULT_URL,
          file: Annotated[Optional[str], typer.Option("--file", "-f", help="Read the document text from this file.")] = None,
          simhash: Annotated[Optional[str], typer.Option(help="Look up this fingerprint (16 hex digits).")] = None,
          k: K = None, json_: Json = False) -> None:
    """Near-duplicates of one document: {"id", "simhash", "matches"}."""
    given = [x for x in (text, file, simhash) if x is not None]
    if len(given) > 1:
        raise ValueError("give one of TEXT, --file and --simhash")
    index = _open_index(store)
    if simhash is not None:
        value = parse_hex(simhash)
    else:
        if file is not None:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        elif text is None:
            if sys.stdin.isatty():
                raise ValueError("no document: give TEXT, --file, --simhash or pipe text to stdin")
            text = sys.stdin.read()
        value = index.fingerprint(text)
    matches = index.query(value, k)
    if json_:
        _out({"id": None, "simhash": to_hex(value), "matches": [m.to_dict() for m in matches]})
        return
    typer.echo(f"simhash {to_hex(value)}: {len(matches)} match{'es' if len(matches) != 1 else ''} "
               f"within {index.k if k is None else k} bits")
    for m in matches:
        typer.echo(f"  {m.distance}  {to_hex(m.simhash)}  {m.id}")


@_command
def check(files: Annotated[list[str], typer.Argument(help="Files or folders of documents to look up; - for stdin.")],
          store: Store = DEFAULT_URL, id_field: IdField = "id", text_field: TextField = "text",
          fmt: Format = "auto", k: K = None,
          fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Use each record's 'simhash' field, ignoring text.")] = False,
          json_: Json = False) -> None:
    """Near-duplicates of every document of a file, in input order. Writes nothing."""
    index = _open_index(store)
    records = read_records(files, fmt, Fields(id=id_field, text=text_field))
    for answer in check_records(index, records, k=k, use_simhash=fingerprints):
        if json_:
            _out(answer)
        elif "error" in answer:
            typer.echo(f"{answer['source']}:{answer['line']} {answer['id'] or ''}: rejected: {answer['error']}", err=True)
        else:
            found = ", ".join(f"{m['id']} ({m['distance']})" for m in answer["matches"]) or "-"
            typer.echo(f"{answer['id']}\t{answer['simhash']}\t{found}")


@_command
def fingerprint(text: Annotated[Optional[str], typer.Argument(help="Text to fingerprint (else --file or stdin).")] = None,
                store: Store = DEFAULT_URL,
                file: Annotated[Optional[str], typer.Option("--file", "-f", help="Fingerprint every document of this file (JSONL, CSV, TSV, text).")] = None,
                id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto",
                featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
                json_: Json = False) -> None:
    """Print fingerprints as 16 hex digits. Uses the featurizer of the index in --store
    when there is one (so the output can be loaded with load --fingerprints), else the options."""
    wanted = _fingerprinter(featurizer, shingle_size, seed)
    store_obj = _store(store)
    if store_obj.exists():
        fp = Index.open(store_obj, wanted).fingerprinter
    else:
        fp = wanted or Fingerprinter(make_featurizer("jieba"))
    if file is None:
        if text is None:
            if sys.stdin.isatty():
                raise ValueError("no text: give TEXT, --file or pipe text to stdin")
            text = sys.stdin.read()
        value = to_hex(fp.fingerprint(text))
        typer.echo(json.dumps({"simhash": value}) if json_ else value)
        return
    for record in read_records([file], fmt, Fields(id=id_field, text=text_field)):
        fingerprint_record(fp.fingerprint, record)
        if record.error:
            typer.echo(f"{record.where}: rejected: {record.error}", err=True)
            if json_:
                _out({"id": record.id, "source": record.source, "line": record.line, "error": record.error})
        elif json_:
            _out({"id": record.id, "simhash": to_hex(record.simhash)})
        else:
            typer.echo(f"{to_hex(record.simhash)}\t{record.id}")


@_command
def stats(store: Store = DEFAULT_URL, json_: Json = False) -> None:
    """Counts (documents, index rows per flag), scheme, k and featurizer. Reads every key."""
    result = _open_index(store).stats()
    if json_:
        _out(result)
        return
    for key, value in result.items():
        typer.echo(f"{key:>14}: {json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value}")


@_command
def delete(ids: Annotated[list[str], typer.Argument(help="Document ids to remove.")],
           store: Store = DEFAULT_URL, json_: Json = False) -> None:
    """Remove documents and their index rows."""
    deleted = _open_index(store).delete(ids)
    missing = [i for i in dict.fromkeys(ids) if i not in set(deleted)]
    if json_:
        _out({"deleted": deleted, "missing": missing})
    else:
        typer.echo(f"deleted {len(deleted)}" + (f"; not found: {', '.join(missing)}" if missing else ""))


@_command
def plan(docs: Annotated[int, typer.Option(help="Number of documents in the corpus.")],
         k: Annotated[int, typer.Option("--k", "-k", help="Max differing bits to guarantee.")] = 3,
         id_bytes: Annotated[int, typer.Option(help="Average bytes of a document id.")] = 16,
         store: Store = DEFAULT_URL, json_: Json = False) -> None:
    """Index rows, bytes and expected candidates per lookup of each scheme for N documents."""
    if docs < 1:
        raise ValueError("--docs must be at least 1")
    rows = [planning.plan(s, docs, id_bytes) for s in planning.schemes_for(k)]
    if not rows:
        raise ValueError(f"no scheme on the 13-byte row key guarantees k={k}")
    if json_:
        for row in rows:
            _out(row.to_dict())
        return
    typer.echo(f"{docs:,} documents, k={k}, ids of {id_bytes} bytes (uniform fingerprints assumed)")
    typer.echo(f"{'scheme':>7} {'flags':>5} {'max k':>5} {'index rows':>16} {'key bytes':>10} "
               f"{'HBase bytes':>11} {'candidates/lookup':>17}")
    for r in rows:
        typer.echo(f"{r.scheme:>7} {r.flags:>5} {r.max_k:>5} {r.index_rows:>16,} {_size(r.key_bytes):>10} "
                   f"{_size(r.hbase_bytes):>11} {r.candidates:>17,.1f}")


@_command
def schema(store: Store = DEFAULT_URL,
           table_prefix: Annotated[Optional[str], typer.Option(help="Table name prefix (default: the hbase:// store's, else 'dedup').")] = None,
           regions: Annotated[Optional[int], typer.Option(help="Regions of the index table.")] = None) -> None:
    """Print the HBase shell DDL of the tables (from schema/tables.json)."""
    if table_prefix is None:
        table_prefix = "dedup"
        if store.startswith("hbase://"):
            table_prefix = _store(store).table_prefix
    typer.echo(hbase_shell_ddl(load_schema(regions), table_prefix), nl=False)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} EB"


def main() -> None:
    app(prog_name="dedup-hbase")


__all__ = ["app", "main"]
