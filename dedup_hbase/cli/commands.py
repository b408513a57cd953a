"""The ``dedup-hbase`` command line: a thin shell over the library.

Global options, before or after the command: ``--store URL`` (else the DEDUP_HBASE_STORE
environment variable, else the folder ``dedup-index`` in the current directory) and
``--verbose``; ``--version``. Each command is a few lines over one library call plus its
output; ``--json`` makes that output JSON (lines). Errors a user can cause (a DedupError:
bad input, no index, a store that cannot be reached; or a file that cannot be read) print
one line and exit with code 1; ``--verbose`` adds the traceback. SIGINT and SIGTERM stop a
command with one line saying what is safe, and exit with 128 + the signal's number.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from typing import Annotated

import typer

from .. import __version__
from ..errors import InvalidInput
from ..index.confirm import parse_short
from ..index.index import Index, fingerprinter_for
from ..index.plan import best_scheme
from ..index.retention import parse_duration
from ..jobs import engines
from ..jobs.batches import fingerprint_records
from ..jobs.corpus import FORMATS, Fields, read_records
from ..jobs.interrupts import STOPS, Interrupted, exit_status, sigterm_raises
from ..jobs.options import DEFAULT_K, SCHEME_5_FROM, CheckOptions, GroupsOptions, LoadOptions, SparkOptions
from ..jobs.reports import JobReport
from ..stores import DEFAULT_URL, ENV_VAR, parse_store_url
from ..text.encodings import check_encoding, decode, label
from ..text.fingerprint import make_fingerprinter, parse_hex, to_hex
from ..text.signatures import Signatures
from ..text.units import WORDS
from . import environment, layout, service, views
from .command import (
    STORE_HELP,
    EncodingOption,
    Group,
    Json,
    Preset,
    Session,
    VerboseOption,
    command,
    exit_for_damage,
    exit_for_rejects,
    out,
    whole_count,
)
from .command import Command as _Command

app = typer.Typer(
    name="dedup-hbase", cls=Group, no_args_is_help=True, add_completion=True,
    help="Find near-duplicate documents in large corpora with 64-bit SimHash fingerprints "
         "and a prefix-scan index (embedded store or Apache HBase).\n\n"
         "Start with: dedup-hbase init; dedup-hbase load corpus.jsonl; dedup-hbase check new.jsonl --json")


def _print_version(value: bool) -> None:
    if value:
        from ..text.native import describe

        typer.echo(f"dedup-hbase {__version__}; fingerprints: {describe()}")
        raise typer.Exit()


@app.callback()
def root(ctx: typer.Context,
         store: Annotated[str, typer.Option("--store", "-s", envvar=ENV_VAR, show_envvar=True, help=STORE_HELP)] = DEFAULT_URL,
         verbose: VerboseOption = False,
         version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                               help="Print the version and the fingerprint path, and exit.")] = False) -> None:
    """Global options; --store and --verbose may also follow the command."""
    ctx.obj = Session(store, verbose)
    ctx.with_resource(sigterm_raises())  # SIGTERM (a scheduler, `kill`) stops a command as Ctrl-C does
    ctx.call_on_close(ctx.obj.close)


def _command(fn, takes_store: bool = True):
    """Register ``fn(ctx, ...)`` as a command (command.py: global options, one-line errors)."""
    return app.command(cls=_Command)(command(fn, takes_store))


K = Annotated[int | None, typer.Option("--k", "-k", help="Max differing bits (default: the index's k).")]
IdField = Annotated[str, typer.Option(help="Input field holding the document id.", rich_help_panel="Input")]
TextField = Annotated[str, typer.Option(help="Input field holding the text.", rich_help_panel="Input")]
Format = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}. auto: by the file's name, the same in every command: .jsonl/.ndjson/.json, .csv, .tsv, .parquet (gz/bz2/xz/zst after it), and any other file one document, whole (lines: a document per line).", rich_help_panel="Input")]
Delimiter = Annotated[str | None, typer.Option(help="CSV/TSV: the character between fields (default: , for CSV, tab for TSV).", rich_help_panel="Input")]
Featurizer = Annotated[str | None, typer.Option(help="jieba (words, TF-IDF; default) or shingles (character n-grams).", rich_help_panel="Fingerprint")]
ShingleSize = Annotated[int | None, typer.Option(help="Characters per shingle (shingles featurizer; default 4).", rich_help_panel="Fingerprint")]
SparkMaster = Annotated[str | None, typer.Option(help="--engine spark: the Spark master (local[*], yarn, k8s://...). Default: local[*].", rich_help_panel="Spark")]
SparkRemote = Annotated[str | None, typer.Option(envvar="SPARK_REMOTE", help="--engine spark: run the job through the Spark Connect server at sc://HOST:PORT (not with --spark-master; docs/spark.md#spark-connect).", rich_help_panel="Spark")]
SparkConf = Annotated[list[str] | None, typer.Option(help="--engine spark: a Spark setting KEY=VALUE (repeatable).", rich_help_panel="Spark")]
Staging = Annotated[str | None, typer.Option(help="--engine spark: folder or URI for the HFiles before the bulk load (default: the temp folder).", rich_help_panel="Spark")]
SparkEnv = Annotated[str | None, typer.Option(envvar="DEDUP_HBASE_SPARK_ENV", help="--engine spark on a cluster: the executors' Python environment, an archive of pack-env (not used by a local master; through --spark-remote a local file, uploaded with the session).", rich_help_panel="Spark")]
Seed = Annotated[int | None, typer.Option(help="mmh3 seed of the feature hashes (default 0).", rich_help_panel="Fingerprint")]


@_command
def init(ctx: typer.Context, scheme: Annotated[str | None, typer.Option(help="4 (4 blocks, flags 1-4), 5 (5 blocks in pairs, flags 1-10) or B/m. Default: the cheapest at --docs N, else 4 (the cheapest for k > 3).")] = None,
         k: Annotated[int, typer.Option("--k", "-k", help="Default max differing bits of a lookup.")] = 3,
         featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
         regions: Annotated[int | None, typer.Option(help="HBase: regions of the index table (pre-split on the first key byte).")] = None,
         ttl: Annotated[str | None, typer.Option(help="Retention: documents older than this (90s, 12h, 30d) stop matching and are removed.")] = None,
         signatures: Annotated[str | None, typer.Option(help="SimHashes kept per document: body (default), or body,leadN such as body,lead150: also the SimHash of the body's first N characters, finding copies that lost their end (twice the rows; docs/quality.md).")] = None,
         probes: Annotated[str | None, typer.Option(help="Per signature, how many of a query's least sure bits a lookup also flips, one at a time, such as 8,1 (more scans, no more rows; docs/quality.md).")] = None,
         confirm: Annotated[int | None, typer.Option(help="With --k above 3: a match beyond 3 bits also needs a second SimHash of the text (another seed) within this many bits, such as --k 8 --confirm 14 (8 more bytes a document row; docs/quality.md).")] = None,
         short_texts: Annotated[str | None, typer.Option("--short-texts", metavar="on|off", help="on (default): a match of which either document is under 200 characters also needs both to be, with the same numbers and the words of one among the other's (but one misspelled word in a text of 8 words or more), at any distance (the short text in each cell; docs/quality.md); off: short texts match on their 64 bits alone (needed to load --fingerprints).")] = None,
         preset: Preset = None,
         docs: Annotated[int | None, typer.Option(metavar="N", parser=whole_count, help="The documents the index is for (1e8): without --scheme, the scheme whose lookups cost least at N on this store, as measured (plan --docs N shows the costs).")] = None,
         json_: Json = False) -> None:
    """Create an empty index: tables, scheme, k, featurizer and signatures.

    --preset names a measured setting (dedup-hbase plan --preset NAME shows its cost): default,
    or recall (--signatures body,lead150 --probes 8,1 --confirm 14). An option given beside it
    overrides the preset's."""
    if scheme is None and docs is not None:
        scheme = best_scheme(k, docs, "hbase" if parse_store_url(ctx.obj.url).kind == "hbase" else "embedded").name
    fingerprinter = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed)
    index = Index.create(ctx.obj.store(create=True), scheme, k, fingerprinter, regions, ttl and parse_duration(ttl),
                         signatures, probes, confirm, preset, parse_short(short_texts))
    if json_:
        out({"store": index.store.url, **Index.read_config(index.store)})
    else:
        named = f" (preset {index.spec.preset})" if index.spec.preset not in (None, "default") else ""
        typer.echo(f"created index at {index.store.url}: scheme {index.scheme.name} ({index.scheme.description}), "
                   f"k={k}, featurizer {fingerprinter.featurizer.name}{index.spec.describe()}{named}")


@_command
def load(ctx: typer.Context, files: Annotated[list[str], typer.Argument(help="Files or folders; - for stdin. JSONL, CSV, TSV, Parquet, text; gz/bz2/xz/zst.")],
         id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto", delimiter: Delimiter = None, encoding: EncodingOption = "utf-8",
         fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Index each record's precomputed 'simhash' (16 hex digits), ignoring text.")] = False,
         skip_near_dups: Annotated[bool, typer.Option("--skip-near-dups", help="Do not index a document within k bits of one already indexed or earlier in the load (kept or left out). --engine spark: an HBase index.")] = False,
         groups: Annotated[str | None, typer.Option(help="Write the near-duplicate groups found during the load to this JSONL file.")] = None,
         rejects: Annotated[str | None, typer.Option(help="Write every rejected record (source, line, id, reason) to this JSONL file.")] = None,
         workers: Annotated[int | None, typer.Option(help="Fingerprinting workers: threads with the compiled core, else processes (default: one per core).")] = None,
         batch_size: Annotated[int, typer.Option(help="Documents per batch (fingerprint, write, checkpoint).")] = 2000,
         max_rejects: Annotated[str | None, typer.Option(help="Exit with status 3 when more records than this are rejected: a count (10) or a share (0.01, 1%). Default: only when every record is.")] = None,
         restart: Annotated[bool, typer.Option("--restart", help="Ignore the checkpoint of an earlier run of the same load.")] = False,
         json_: Json = False,
         quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar, no per-record reports.")] = False,
         progress_every: Annotated[float, typer.Option(help="Off a terminal: a progress line on stderr at most every this many seconds (0: after every batch).")] = 10.0,
         engine: Annotated[str, typer.Option(help="local (this machine's cores; HBase: Thrift puts) or spark (a Spark job; HBase: HFiles + bulk load; docs/spark.md).")] = "local",
         spark_master: SparkMaster = None, spark_conf: SparkConf = None, staging: Staging = None,
         spark_env: SparkEnv = None, spark_remote: SparkRemote = None) -> None:
    """Bulk-load documents into the index, on every core.

    Bad records are reported (file, line, reason) and skipped; read = indexed + skipped +
    rejected. Interrupted? Run the same command again: it resumes where it stopped, and
    once finished it does nothing."""
    from ..jobs.progress import LoadProgress

    started = time.perf_counter()
    options = LoadOptions(fmt=fmt, fields=Fields(id=id_field, text=text_field, delimiter=delimiter, encoding=encoding), fingerprints=fingerprints,
                          batch_size=batch_size, workers=workers, skip_near_dups=skip_near_dups, groups=groups,
                          rejects=rejects, restart=restart, max_rejects=LoadOptions.parse_max_rejects(max_rejects))
    spark = _spark(engine, spark_master, spark_conf, staging, spark_env, spark_remote)
    index = ctx.obj.index(read_only=False)
    with LoadProgress(enabled=not quiet and not json_, every=progress_every, counts=engine == "local") as bar:
        report = engines.load(index, files, options, engine, spark, progress=bar.update,
                              on_reject=None if quiet else bar.reject)
    try:  # the store's close (the embedded one merges its recent writes) is part of the load's work
        ctx.obj.close()
    except STOPS as stop:
        raise Interrupted(stop, "while the store closed, after the load finished: every record is written and "
                                "checkpointed; the writes not yet merged are merged when the store is next opened "
                                "(that open is slower)") from None
    report.elapsed_s = time.perf_counter() - started  # the summary's rate: over the whole wall time
    if json_:
        out({"store": index.store.url, **report.to_dict()})
    else:
        typer.echo(report.summary(index.fingerprinter.label), err=True)
    exit_for_rejects(report, options.max_rejects, options.rejects)


def _spark(engine: str, master: str | None, conf: list[str] | None, staging: str | None = None,
           env: str | None = None, remote: str | None = None) -> SparkOptions | None:
    """The Spark engine's options of a job's command line (None for the local engine)."""
    if engines.check_engine(engine) == "spark":
        if remote and master:
            raise InvalidInput("give --spark-master or --spark-remote (or SPARK_REMOTE), not both: a Spark Connect "
                               "server runs its jobs on its own master")
        return SparkOptions(master or "local[*]", SparkOptions.parse_conf(conf), staging, env, remote or None)
    return None


@functools.partial(_command, takes_store=False)
def groups(ctx: typer.Context, files: Annotated[list[str], typer.Argument(help="Files or folders; - for stdin (local engine). JSONL, CSV, TSV, text, Parquet; gz/bz2/xz/zst.")],
           out_dir: Annotated[str, typer.Option("--out", "-o", help="Output folder: documents/ (Parquet: id, simhash, group, size, keep) and groups.jsonl. New, empty, or an earlier groups output (replaced).")],
           k: Annotated[int, typer.Option("--k", "-k", help="Max differing bits of a near-duplicate.")] = DEFAULT_K,
           scheme: Annotated[str | None, typer.Option(help=f"Pair search: 4 (4 blocks) or 5 (5 blocks in pairs). Default: 4 below {SCHEME_5_FROM:,} documents, 5 from there (measured crossover); for k > 3 the cheapest scheme that guarantees k (see plan).")] = None,
           id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto", delimiter: Delimiter = None, encoding: EncodingOption = "utf-8",
           fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Use each record's precomputed 'simhash' (16 hex digits), ignoring text.")] = False,
           rejects: Annotated[str | None, typer.Option(help="Write every rejected record (source, line, id, reason) to this JSONL file.")] = None,
           featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
           signatures: Annotated[str | None, typer.Option(help="body (default), or body,leadN such as body,lead150: two documents are near within k bits under either; dropped.jsonl names the signature.")] = None,
           confirm: Annotated[int | None, typer.Option(help="With --k above 3: beyond 3 bits two documents are near only when a second SimHash of each (another seed) is within this many bits, such as --k 8 --confirm 14 (docs/quality.md).")] = None,
           short_texts: Annotated[str | None, typer.Option("--short-texts", metavar="on|off", help="on (default; off with --fingerprints, which carry no text): two documents of which either is under 200 characters are near, at any distance, only when both are, their numbers are the same and the words of one are among the other's, but one misspelled word in a text of 8 words or more (docs/quality.md); off: their 64 bits alone.")] = None,
           workers: Annotated[int | None, typer.Option(help="Local engine: fingerprinting workers (default: one per core).")] = None,
           engine: Annotated[str, typer.Option(help="local (this machine) or spark (a Spark job; docs/spark.md). Same output.")] = "local",
           spark_master: SparkMaster = None, spark_conf: SparkConf = None, spark_env: SparkEnv = None,
           spark_remote: SparkRemote = None, json_: Json = False) -> None:
    """Near-duplicate groups of a corpus, no index needed: every pair within k bits and
    their connected components; each group keeps its first document in input order.

    Needs no index (no --store). Bad records are reported and skipped; read = documents +
    rejected."""
    options = GroupsOptions(fmt=fmt, fields=Fields(id=id_field, text=text_field, delimiter=delimiter, encoding=encoding), fingerprints=fingerprints,
                            workers=workers, k=k, scheme=scheme, rejects=rejects, signatures=Signatures.parse(signatures),
                            confirm=confirm, short=parse_short(short_texts, None if fingerprints else WORDS))
    spark = _spark(engine, spark_master, spark_conf, env=spark_env, remote=spark_remote)
    fp = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed)
    report = engines.groups(files, out_dir, options, fp, engine, spark)
    if json_:
        out({"out": out_dir, **report.to_dict()})
    else:
        typer.echo(report.summary(), err=True)
    exit_for_damage(report)


def _read_text(text: str | None, file: str | None, what: str, encoding: str = "utf-8", fmt: str = "auto") -> str:
    """The text given as an argument, in a file (the one document it holds, by the rule of every
    command: corpus.holds), or on stdin (the bytes in ``encoding``)."""
    encoding = check_encoding(encoding)
    if file is not None:
        records = list(read_records([file], fmt, Fields(encoding=encoding)))
        if len(records) != 1:
            raise InvalidInput(f"{file} holds {len(records)} documents: query looks up one (check FILE looks up each)")
        if records[0].error or records[0].text is None:
            raise InvalidInput(f"{records[0].where}: {records[0].error or 'no text'}")
        return records[0].text
    if text is not None:
        return text
    elif sys.stdin.isatty():
        raise InvalidInput(f"no {what}: give TEXT, --file{', --simhash' if what == 'document' else ''} "
                           "or pipe text to stdin")
    try:
        return decode(sys.stdin.buffer.read(), encoding)
    except UnicodeDecodeError as e:
        raise InvalidInput(f"stdin: not {label(encoding)} at byte {e.start}; --encoding names another") from None


@_command
def query(ctx: typer.Context, text: Annotated[str | None, typer.Argument(help="The document text (else --file, --simhash or stdin).")] = None,
          file: Annotated[str | None, typer.Option("--file", "-f", help="Read the document text from this file.")] = None,
          simhash: Annotated[str | None, typer.Option(help="Look up this fingerprint (16 hex digits; the body's signature alone, no probes).")] = None,
          k: K = None, encoding: EncodingOption = "utf-8", fmt: Format = "auto", json_: Json = False) -> None:
    """Near-duplicates of one document: {"id", "simhash", "matches"}. --file: the one document
    the file holds (a text file is one document, whole; JSON lines, CSV, TSV: a single record)."""
    if sum(x is not None for x in (text, file, simhash)) > 1:
        raise InvalidInput("give one of TEXT, --file and --simhash")
    index = ctx.obj.index(read_only=True)
    if simhash is not None:
        value = parse_hex(simhash)
        matches = index.query(value, k)
    else:
        value = index.fingerprint(document := _read_text(text, file, "document", encoding, fmt))
        matches = index.query_text(document, k, simhash=value)
    if json_:
        out({"id": None, "simhash": to_hex(value), "matches": [m.to_dict() for m in matches]})
        return
    typer.echo(f"simhash {to_hex(value)}: {len(matches)} match{'es' if len(matches) != 1 else ''} "
               f"within {index.k if k is None else k} bits")
    for m in matches:
        typer.echo(f"  {m.distance}  {to_hex(m.simhash)}  {m.id}{f'  ({m.signature})' if m.signature else ''}")


@_command
def check(ctx: typer.Context, files: Annotated[list[str], typer.Argument(help="Files or folders of documents to look up; - for stdin.")],
          id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto", delimiter: Delimiter = None, encoding: EncodingOption = "utf-8", k: K = None,
          fingerprints: Annotated[bool, typer.Option("--fingerprints", help="Use each record's 'simhash' field, ignoring text.")] = False,
          max_matches: Annotated[int, typer.Option(help="Matches listed per document (1 or more), the nearest first; more are counted (match_count).")] = 1000,
          json_: Json = False,
          engine: Annotated[str, typer.Option(help="local (lookups through the store) or spark (the index read in bulk by a Spark job; needs --out; docs/spark.md).")] = "local",
          out_dir: Annotated[str | None, typer.Option("--out", help="--engine spark: folder or URI for the records (json/*.jsonl, parquet/).")] = None,
          add_new: Annotated[bool, typer.Option("--add-new", help="Then index the documents that match nothing in the index nor earlier in the input (the records answer against the index as it was; load --skip-near-dups indexes the same documents). Files, not stdin.")] = False,
          spark_master: SparkMaster = None, spark_conf: SparkConf = None, staging: Staging = None,
          spark_env: SparkEnv = None, spark_remote: SparkRemote = None) -> None:
    """Near-duplicates of every document of a file, in input order. Writes nothing (but --out, --add-new)."""
    options = CheckOptions(fmt=fmt, fields=Fields(id=id_field, text=text_field, delimiter=delimiter, encoding=encoding), fingerprints=fingerprints, k=k,
                           max_matches=max_matches, out=out_dir, add_new=add_new)
    read_only = False if add_new else (True if engine == "local" else None)  # only --add-new writes
    report = engines.check(ctx.obj.index(read_only=read_only), files, options, engine,
                           _spark(engine, spark_master, spark_conf, staging, spark_env, spark_remote), on_answer=out if json_ else _print_answer)
    if engine == "spark":
        if json_:
            out(report.to_dict())
        else:
            typer.echo(report.summary(), err=True)
    elif add_new:  # stdout holds the records
        typer.echo(report.summary(), err=True)
    exit_for_damage(report)


def _print_answer(answer: dict) -> None:
    """A check record for people: a rejected one on stderr, else ``id TAB simhash TAB matches``."""
    if "error" in answer:
        typer.echo(f"{answer['source']}:{answer['line']} {answer['id'] or ''}: rejected: {answer['error']}", err=True)
    else:
        found = ", ".join(f"{m['id']} ({m['distance']})" for m in answer["matches"]) or "-"
        found += f" ... ({answer['match_count']} in all)" if "match_count" in answer else ""
        typer.echo(f"{answer['id']}\t{answer['simhash']}\t{found}")


@_command
def fingerprint(ctx: typer.Context, text: Annotated[str | None, typer.Argument(help="Text to fingerprint (else --file or stdin).")] = None,
                file: Annotated[str | None, typer.Option("--file", "-f", help="Fingerprint every document of this file (JSONL, CSV, TSV, text).")] = None,
                id_field: IdField = "id", text_field: TextField = "text", fmt: Format = "auto", delimiter: Delimiter = None, encoding: EncodingOption = "utf-8",
                featurizer: Featurizer = None, shingle_size: ShingleSize = None, seed: Seed = None,
                json_: Json = False) -> None:
    """Print fingerprints as 16 hex digits.

    Uses the featurizer of the index in --store when there is one (so the output can be
    loaded with load --fingerprints), else the options."""
    fp = fingerprinter_for(ctx.obj.store(read_only=True), featurizer, shingle_size=shingle_size, seed=seed)
    if file is None:
        value = to_hex(fp.fingerprint(_read_text(text, None, "text", encoding)))
        typer.echo(json.dumps({"simhash": value}) if json_ else value)
        return
    report = JobReport()
    for record in fingerprint_records(fp, read_records([file], fmt, Fields(id=id_field, text=text_field, delimiter=delimiter, encoding=encoding))):
        report.count([record])
        if record.error:
            typer.echo(f"{record.where}: rejected: {record.error}", err=True)
            if json_:
                out({"id": record.id, "source": record.source, "line": record.line, "error": record.error})
        elif json_:
            out({"id": record.id, "simhash": to_hex(record.simhash), "featurizer": fp.label})
        else:
            typer.echo(f"{to_hex(record.simhash)}\t{record.id}")
    exit_for_damage(report)


@_command
def stats(ctx: typer.Context, json_: Json = False) -> None:
    """Counts (documents, index rows per flag), scheme, k and featurizer. Reads every key (minutes
    at 10^7 documents on HBase: a progress line on stderr meanwhile)."""
    from ..jobs.progress import CountProgress

    index = ctx.obj.index(read_only=True)
    with CountProgress("keys") as shown:
        result = index.stats(progress=shown.update)
    if json_:
        out(result)
        return
    for key, value in result.items():
        typer.echo(f"{key:>14}: {json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value}")


@_command
def delete(ctx: typer.Context, ids: Annotated[list[str], typer.Argument(help="Document ids to remove.")], json_: Json = False) -> None:
    """Remove documents and their index rows."""
    deleted = ctx.obj.index(read_only=False).delete(ids)
    missing = [i for i in dict.fromkeys(ids) if i not in set(deleted)]
    if json_:
        out({"deleted": deleted, "missing": missing})
    else:
        typer.echo(f"deleted {len(deleted)}" + (f"; not found: {', '.join(missing)}" if missing else ""))


_command(layout.plan)
_command(layout.schema)
_command(service.serve)
_command(environment.pack_env)
_command(views.explain)
_command(views.report)
_command(views.tune)


def main() -> None:
    try:
        app(prog_name="dedup-hbase")
    except KeyboardInterrupt:  # outside a command (its options being read): as inside one
        typer.echo("interrupted by SIGINT", err=True)
        sys.exit(exit_status(2))


__all__ = ["app", "main"]
