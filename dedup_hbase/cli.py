"""The ``dedup-hbase`` command line: a thin shell over the library.

Global options, before or after the command: ``--store URL`` (else the DEDUP_HBASE_STORE
environment variable, else the folder ``dedup-index`` in the current directory),
``--verbose``, ``--version``. Each command is a few lines over one library call plus its
output; ``--json`` makes that output JSON (lines). Errors a user can cause (a DedupError:
bad input, no index, a store that cannot be reached; or a file that cannot be read) print
one line and exit with code 1; ``--verbose`` adds the traceback. Anything else is a bug and
shows its traceback.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import sys
import traceback
from contextlib import ExitStack
from typing import Annotated

import typer
from typer.core import TyperGroup

from . import __version__
from . import plan as planning
from .corpus import FORMATS, Fields, read_records
from .errors import DedupError, FeaturizerVersionMismatch, IndexNotFound, InvalidInput
from .fingerprint import make_fingerprinter, parse_hex, to_hex
from .index import Index, fingerprinter_for
from .loader import check as check_records
from .loader import fingerprint_records, load_files
from .schema import hbase_shell_ddl, load_schema
from .stores import DEFAULT_URL, ENV_VAR, Store, open_store, parse_store_url
from .stores.hbase_admin import AdminGatewayUnreachable

# What the CLI adds to a library error: the command that fixes it.
_HINTS = {
    IndexNotFound: ": create one with `dedup-hbase init`",
    FeaturizerVersionMismatch: "; create a new index (dedup-hbase init --store NEW) and load the documents into it again",
    AdminGatewayUnreachable: "; `dedup-hbase schema` prints the DDL for the HBase shell; then run `dedup-hbase init` again",
}
_GLOBAL_VALUE_OPTIONS = ("--store", "-s")
_GLOBAL_FLAGS = ("--verbose", "-v")
_GLOBAL_HELP = ("Global options (before or after the command): --store, -s URL: the index "
                f"(PATH or local:PATH, memory:, hbase://HOST:PORT/?table_prefix=P; else the environment "
                f"variable {ENV_VAR}, else {DEFAULT_URL}); --verbose, -v: debug log and tracebacks.")


def _hoist_global_options(args: list[str]) -> list[str]:
    """Move global options written after the command to before it (``check --store URL
    FILE`` means ``--store URL check FILE``). Stops at ``--``."""
    head, i = [], 0
    while i < len(args) and (args[i] in _GLOBAL_VALUE_OPTIONS + _GLOBAL_FLAGS or args[i].startswith("--store=")
                             or args[i] in ("--version", "--help")):
        step = 2 if args[i] in _GLOBAL_VALUE_OPTIONS else 1
        head += args[i:i + step]
        i += step
    if i >= len(args):
        return args
    moved, kept, rest = [], [], args[i + 1:]
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            kept += rest[j:]
            break
        if arg in _GLOBAL_VALUE_OPTIONS and j + 1 < len(rest):
            moved += rest[j:j + 2]
            j += 2
            continue
        (moved if arg in _GLOBAL_FLAGS or arg.startswith("--store=") else kept).append(arg)
        j += 1
    return head + moved + [args[i]] + kept


class _Root(TyperGroup):
    """The root command: global options may also follow the command, and every command's
    help lists them."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_global_options(args))

    def get_command(self, ctx, name: str):
        command = super().get_command(ctx, name)
        if command is not None and _GLOBAL_HELP not in (command.epilog or ""):
            command.epilog = _GLOBAL_HELP
        return command


class Stopped(BaseException):
    """SIGTERM arrived (a BaseException, like KeyboardInterrupt for SIGINT, so that no
    ``except Exception`` on the way swallows it)."""


def _stop_on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Stopped()


def _signal_name(stop: BaseException) -> tuple[str, int]:
    """The signal behind an interruption and the exit status for it (128 + its number)."""
    number = signal.SIGTERM if isinstance(stop, Stopped) else signal.SIGINT
    return number.name, 128 + number


class Session:
    """What one run of a command owns: the store URL, the stores it opened (closed when the
    command ends, however it ends) and the verbosity."""

    def __init__(self, url: str, verbose: bool) -> None:
        self.url, self.verbose = url, verbose
        self._resources = ExitStack()
        self._store: Store | None = None

    def store(self, create: bool = False) -> Store:
        if self._store is None:
            self._store = self._resources.enter_context(open_store(self.url, create=create))
        return self._store

    def index(self) -> Index:
        return Index.open(self.store())

    def close(self) -> None:
        self._resources.close()


app = typer.Typer(
    name="dedup-hbase", cls=_Root, no_args_is_help=True, add_completion=False,
    help="Find near-duplicate documents in large corpora with 64-bit SimHash fingerprints "
         "and a prefix-scan index (embedded store or Apache HBase).\n\n"
         "Start with: dedup-hbase init; dedup-hbase load corpus.jsonl; dedup-hbase check new.jsonl --json")


def _print_version(value: bool) -> None:
    if value:
        from .native import describe

        typer.echo(f"dedup-hbase {__version__}; fingerprints: {describe()}")
        raise typer.Exit()


@app.callback()
def root(ctx: typer.Context,
         store: Annotated[str, typer.Option("--store", "-s", envvar=ENV_VAR, show_envvar=True,
                                            help="PATH or local:PATH (embedded), memory:, hbase://HOST:PORT/?table_prefix=P")] = DEFAULT_URL,
         verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug log on stderr; tracebacks with errors.")] = False,
         version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                               help="Print the version and exit.")] = False) -> None:
    """Global options; they may also follow the command."""
    if verbose:
        logging.basicConfig(format="%(name)s: %(message)s", stream=sys.stderr)
        logging.getLogger("dedup_hbase").setLevel(logging.DEBUG)
    if sys.platform != "win32":  # SIGTERM (a scheduler, `kill`) stops a command the way Ctrl-C does
        previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
        ctx.call_on_close(lambda: signal.signal(signal.SIGTERM, previous))
    session = Session(store, verbose)
    ctx.obj = session
    ctx.call_on_close(session.close)


def _command(fn):
    """Register ``fn`` (whose first parameter is ``ctx``, holding the Session) as a command
    whose user errors print one line and exit 1."""
    @functools.wraps(fn)
    def wrapper(ctx: typer.Context, *args, **kwargs):
        try:
            return fn(ctx, *args, **kwargs)
        except BrokenPipeError:  # `dedup-hbase check ... | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except (KeyboardInterrupt, Stopped) as stop:
            name, status = _signal_name(stop)
            typer.echo(f"interrupted by {name}", err=True)
            raise typer.Exit(status) from None
        except (DedupError, OSError) as e:
            if ctx.obj.verbose:
                traceback.print_exc()
            hint = next((text for kind, text in _HINTS.items() if isinstance(e, kind)), "")
            typer.echo(f"error: {e}{hint}", err=True)
            raise typer.Exit(1) from None
    return app.command()(wrapper)


def _out(obj) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False))


Json = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON / JSON lines).")]
K = Annotated[int | None, typer.Option("--k", "-k", help="Max differing bits (default: the index's k).")]
IdField = Annotated[str, typer.Option(help="Input field holding the document id.")]
TextField = Annotated[str, typer.Option(help="Input field holding the text.")]
Format = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}.")]
Featurizer = Annotated[str | None, typer.Option(help="jieba (words, TF-IDF; default) or shingles (character n-grams).")]
ShingleSize = Annotated[int | None, typer.Option(help="Characters per shingle (shingles featurizer; default 4).")]
Seed = Annotated[int | None, typer.Option(help="mmh3 seed of the feature hashes (default 0).")]


@_command
def init(ctx: typer.Context, scheme: Annotated[str | None, typer.Option(help="4 (4 blocks, flags 1-4), 5 (5 blocks in pairs, flags 1-10) or B/m. Default: 4, or the cheapest scheme for k > 3.")] = None,
         k: Annotated[int, typer.Option("--k", "-k", help="Default max differing bits of a lookup.")] = 3,
         featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
         regions: Annotated[int | None, typer.Option(help="HBase: regions of the index table (pre-split on the first key byte).")] = None,
         json_: Json = False) -> None:
    """Create an empty index: tables, scheme, k and featurizer."""
    fingerprinter = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed)
    index = Index.create(ctx.obj.store(create=True), scheme, k, fingerprinter, regions)
    if json_:
        _out({"store": index.store.url, **Index.read_config(index.store)})
        return
    chosen = index.scheme
    typer.echo(f"created index at {index.store.url}: scheme {chosen.name} ({chosen.blocks} blocks taken "
               f"{chosen.take} at a time, {len(chosen.flags)} rows per document, finds every match "
               f"within {chosen.max_k} bits), k={k}, featurizer {fingerprinter.featurizer.name}")


@_command
def load(ctx: typer.Context, files: Annotated[list[str], typer.Argument(help="Files or folders; - for stdin. JSONL, CSV, TSV, text; gz/bz2/xz/zst.")],
         id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto",
         fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Index each record's precomputed 'simhash' (16 hex digits), ignoring text.")] = False,
         skip_near_dups: Annotated[bool, typer.Option("--skip-near-dups", help="Do not index a document within k bits of one already indexed or earlier in the load.")] = False,
         groups: Annotated[str | None, typer.Option(help="Write the near-duplicate groups found during the load to this JSONL file.")] = None,
         rejects: Annotated[str | None, typer.Option(help="Write every rejected record (source, line, id, reason) to this JSONL file.")] = None,
         workers: Annotated[int | None, typer.Option(help="Fingerprinting workers: threads with the compiled core, else processes (default: one per core).")] = None,
         batch_size: Annotated[int, typer.Option(help="Documents per batch (fingerprint, write, checkpoint).")] = 2000,
         restart: Annotated[bool, typer.Option("--restart", help="Ignore the checkpoint of an earlier run of the same load.")] = False,
         json_: Json = False,
         quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar, no per-record reports.")] = False,
         engine: Annotated[str, typer.Option(help="local (this machine's cores; HBase: Thrift puts) or spark (a Spark job; HBase: HFiles + bulk load; docs/spark.md).")] = "local",
         spark_master: Annotated[str, typer.Option(help="--engine spark: the Spark master (local[*], yarn, k8s://...).")] = "local[*]",
         spark_conf: Annotated[list[str] | None, typer.Option(help="--engine spark: a Spark setting KEY=VALUE (repeatable).")] = None,
         staging: Annotated[str | None, typer.Option(help="--engine spark: folder or URI for the HFiles before the bulk load (default: the temp folder).")] = None) -> None:
    """Bulk-load documents into the index, on every core.

    Bad records are reported (file, line, reason) and skipped; read = indexed + skipped +
    rejected. Interrupted? Run the same command again: it resumes where it stopped, and
    once finished it does nothing."""
    from .progress import LoadProgress

    index = ctx.obj.index()
    saved = [0]  # records done and checkpointed: the loader reports progress after each checkpoint

    def progress(records: int, text_bytes: int) -> None:
        saved[0] = records
        bar.update(records, text_bytes)

    fields = Fields(id=id_field, text=text_field)
    try:
        if engine == "spark":
            from .spark import parse_conf, spark_load_files

            report = spark_load_files(index, files, fmt=fmt, fields=fields, use_simhash=fingerprints,
                                      rejects=rejects, restart=restart, skip_near_dups=skip_near_dups,
                                      groups=groups, spark_master=spark_master, spark_conf=parse_conf(spark_conf),
                                      staging=staging, batch_size=batch_size)
        elif engine != "local":
            raise InvalidInput(f"--engine is local or spark, not {engine!r}")
        else:
            with LoadProgress(enabled=not quiet and not json_) as bar:
                report = load_files(index, files, fmt=fmt, fields=fields, use_simhash=fingerprints,
                                    skip_near_dups=skip_near_dups, rejects=rejects, restart=restart,
                                    batch_size=batch_size, workers=workers, groups=groups,
                                    on_reject=None if quiet else bar.reject, progress=progress)
    except (KeyboardInterrupt, Stopped) as stop:
        name, status = _signal_name(stop)
        if engine == "spark":
            typer.echo(f"interrupted by {name}: the Spark job stopped; run the same command again to load "
                       "(the job starts over; what it wrote is written again, nothing doubles)", err=True)
        else:
            then = ("run the same command again to resume" if "-" not in files
                    else "a load from stdin cannot resume: run it again (writes are idempotent)")
            typer.echo(f"interrupted by {name}: stopped after {saved[0]:,} records, all written and "
                       f"checkpointed; {then}", err=True)
        raise typer.Exit(status) from None
    if json_:
        _out({"store": index.store.url, **report.to_dict()})
    elif report.already_complete:
        typer.echo(f"already loaded (read {report.read}, indexed {report.indexed}): nothing to do; "
                   "--restart loads again", err=True)
    else:
        reasons = ", ".join(f"{n} {r}" for r, n in report.rejected_by_reason.most_common())
        resumed = f"resumed after {report.resumed_after}; " if report.resumed_after else ""
        skipped = f", skipped {report.near_duplicates_skipped} near-duplicates" if skip_near_dups else ""
        typer.echo(f"{resumed}read {report.read}, indexed {report.indexed} ({report.new} new){skipped}, "
                   f"rejected {report.rejected}{f' ({reasons})' if reasons else ''} in {report.elapsed_s:.1f} s: "
                   f"{report.docs_per_s:,.0f} docs/s, {report.mb_per_s:.2f} MB/s", err=True)


def _read_text(text: str | None, file: str | None, what: str) -> str:
    """The text given as an argument, in a file, or on stdin."""
    if file is not None:
        with open(file, encoding="utf-8") as f:
            return f.read()
    if text is not None:
        return text
    if sys.stdin.isatty():
        raise InvalidInput(f"no {what}: give TEXT, --file{', --simhash' if what == 'document' else ''} "
                           "or pipe text to stdin")
    return sys.stdin.read()


@_command
def query(ctx: typer.Context, text: Annotated[str | None, typer.Argument(help="The document text (else --file, --simhash or stdin).")] = None,
          file: Annotated[str | None, typer.Option("--file", "-f", help="Read the document text from this file.")] = None,
          simhash: Annotated[str | None, typer.Option(help="Look up this fingerprint (16 hex digits).")] = None,
          k: K = None, json_: Json = False) -> None:
    """Near-duplicates of one document: {"id", "simhash", "matches"}."""
    if sum(x is not None for x in (text, file, simhash)) > 1:
        raise InvalidInput("give one of TEXT, --file and --simhash")
    index = ctx.obj.index()
    value = parse_hex(simhash) if simhash is not None else index.fingerprint(_read_text(text, file, "document"))
    matches = index.query(value, k)
    if json_:
        _out({"id": None, "simhash": to_hex(value), "matches": [m.to_dict() for m in matches]})
        return
    typer.echo(f"simhash {to_hex(value)}: {len(matches)} match{'es' if len(matches) != 1 else ''} "
               f"within {index.k if k is None else k} bits")
    for m in matches:
        typer.echo(f"  {m.distance}  {to_hex(m.simhash)}  {m.id}")


@_command
def check(ctx: typer.Context, files: Annotated[list[str], typer.Argument(help="Files or folders of documents to look up; - for stdin.")],
          id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto", k: K = None,
          fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Use each record's 'simhash' field, ignoring text.")] = False,
          json_: Json = False) -> None:
    """Near-duplicates of every document of a file, in input order. Writes nothing."""
    index = ctx.obj.index()
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
def fingerprint(ctx: typer.Context, text: Annotated[str | None, typer.Argument(help="Text to fingerprint (else --file or stdin).")] = None,
                file: Annotated[str | None, typer.Option("--file", "-f", help="Fingerprint every document of this file (JSONL, CSV, TSV, text).")] = None,
                id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto",
                featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
                json_: Json = False) -> None:
    """Print fingerprints as 16 hex digits.

    Uses the featurizer of the index in --store when there is one (so the output can be
    loaded with load --fingerprints), else the options."""
    options = (featurizer, shingle_size, seed)
    wanted = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed) if any(
        x is not None for x in options) else None
    fp = fingerprinter_for(ctx.obj.store(), wanted)
    if file is None:
        value = to_hex(fp.fingerprint(_read_text(text, None, "text")))
        typer.echo(json.dumps({"simhash": value}) if json_ else value)
        return
    for record in fingerprint_records(fp, read_records([file], fmt, Fields(id=id_field, text=text_field))):
        if record.error:
            typer.echo(f"{record.where}: rejected: {record.error}", err=True)
            if json_:
                _out({"id": record.id, "source": record.source, "line": record.line, "error": record.error})
        elif json_:
            _out({"id": record.id, "simhash": to_hex(record.simhash)})
        else:
            typer.echo(f"{to_hex(record.simhash)}\t{record.id}")


@_command
def stats(ctx: typer.Context, json_: Json = False) -> None:
    """Counts (documents, index rows per flag), scheme, k and featurizer. Reads every key."""
    result = ctx.obj.index().stats()
    if json_:
        _out(result)
        return
    for key, value in result.items():
        typer.echo(f"{key:>14}: {json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value}")


@_command
def delete(ctx: typer.Context, ids: Annotated[list[str], typer.Argument(help="Document ids to remove.")], json_: Json = False) -> None:
    """Remove documents and their index rows."""
    deleted = ctx.obj.index().delete(ids)
    missing = [i for i in dict.fromkeys(ids) if i not in set(deleted)]
    if json_:
        _out({"deleted": deleted, "missing": missing})
    else:
        typer.echo(f"deleted {len(deleted)}" + (f"; not found: {', '.join(missing)}" if missing else ""))


@_command
def plan(ctx: typer.Context, docs: Annotated[int, typer.Option(help="Number of documents in the corpus.")],
         k: Annotated[int, typer.Option("--k", "-k", help="Max differing bits to guarantee.")] = 3,
         id_bytes: Annotated[int, typer.Option(help="Average bytes of a document id.")] = 16,
         json_: Json = False) -> None:
    """Index rows, bytes and expected candidates per lookup of each scheme for N documents."""
    rows = planning.plans(docs, k, id_bytes)
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
def schema(ctx: typer.Context, table_prefix: Annotated[str | None, typer.Option(help="Table name prefix (default: the hbase:// store's, else 'dedup').")] = None,
           regions: Annotated[int | None, typer.Option(help="Regions of the index table.")] = None) -> None:
    """Print the HBase shell DDL of the tables (from schema/tables.json)."""
    if table_prefix is None:
        table_prefix = parse_store_url(ctx.obj.url).options.get("table_prefix", "dedup")
    typer.echo(hbase_shell_ddl(load_schema(regions), table_prefix), nl=False)


@_command
def serve(ctx: typer.Context,
          host: Annotated[str, typer.Option(help="Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, printed at start).")] = 8080,
          max_docs: Annotated[int, typer.Option(help="Documents one request may hold.")] = 1000,
          max_text_bytes: Annotated[int, typer.Option(help="Bytes one document's text may have.")] = 1 << 20,
          max_body_bytes: Annotated[int, typer.Option(help="Bytes one request body may have.")] = 64 << 20,
          log_level: Annotated[str, typer.Option(help="uvicorn's log level: debug, info, warning, error.")] = "warning") -> None:
    """Run the dedup service: JSON over HTTP, until Ctrl-C or SIGTERM.

    POST /v1/check and POST /v1/add?if_new=true take a JSON list of {"id", "text"} or
    {"id", "simhash"}; GET and DELETE /v1/docs/ID; GET /v1/stats; GET /healthz. With if_new a
    document is added only when nothing within k bits is indexed or earlier in the request."""
    from .online import OnlineIndex
    from .service import Limits
    from .service import serve as run_service

    limits = Limits(max_docs=max_docs, max_text_bytes=max_text_bytes, max_body_bytes=max_body_bytes)
    online = OnlineIndex(ctx.obj.index())
    online.index.fingerprint("warm up")  # load the dictionary now, not in the first request
    stopped: list[str] = []

    def note(signum, frame) -> None:  # uvicorn stops gracefully on these, then hands them on here
        stopped.append(signal.Signals(signum).name)

    def ready(url: str) -> None:
        typer.echo(f"serving {online.index.store.url} on {url} (POST /v1/check, POST /v1/add?if_new=true, "
                   "GET|DELETE /v1/docs/ID, GET /v1/stats, GET /healthz); Ctrl-C stops", err=True)

    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_service(online, host=host, port=port, limits=limits, log_level=log_level, ready=ready)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    typer.echo(f"stopped{f' by {stopped[0]}' if stopped else ''}", err=True)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} EB"


def main() -> None:
    app(prog_name="dedup-hbase")


__all__ = ["app", "main"]
