"""How one ``dedup-hbase`` command runs, whatever it does: the cli module's commands are
written as ``fn(ctx, ...)`` and wrapped by :func:`command`.

A wrapped command

* takes the global options ``--store`` and ``--verbose`` after its own (they may also come
  before the command name, where the root callback reads them);
* owns a :class:`Session`: the store it opens is opened once and closed when the command
  ends, however it ends;
* turns what a user can cause into one line on stderr: a DedupError or an OSError (exit 1,
  with the command that fixes it when there is one), a missing optional package (exit 1,
  naming the extra to install), SIGINT or SIGTERM (128 + the signal's number), a closed
  stdout (``| head``: exit 0, quietly). ``--verbose`` adds the traceback.

A job that finished with more rejected records than allowed, or with an input cut off or
corrupt, ends with status 3 (``exit_for_rejects``, ``exit_for_damage``).

It does not catch anything else: a bug prints its traceback.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
import sys
import traceback
import typing
from contextlib import ExitStack
from typing import Annotated

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from ..errors import DedupError, FeaturizerVersionMismatch, IndexNotFound, IndexOutdated, missing_package
from ..index.index import Index
from ..index.spec import PRESETS
from ..jobs import corpus
from ..jobs.interrupts import STOPS, Interrupted, exit_status, signal_of
from ..jobs.reports import JobReport
from ..stores import DEFAULT_URL, ENV_VAR, AdminGatewayUnreachable, Store, open_store

# What the CLI adds to a library error: the command that fixes it.
HINTS = {
    IndexNotFound: ": create one with `dedup-hbase init`",
    IndexOutdated: ": delete it (its folder, or its HBase tables) and run `dedup-hbase init` again with the same options",
    FeaturizerVersionMismatch: "; create a new index (dedup-hbase init --store NEW) and load the documents into it again",
    AdminGatewayUnreachable: "; `dedup-hbase schema` prints the DDL for the HBase shell; then run `dedup-hbase init` again",
}
# The flag of each library argument an error names (DedupError.arguments): the one place
# where the library's names become the command line's.
FLAGS = {"confirm": "--confirm", "short": "--short-texts", "k": "--k", "probes": "--probes", "signatures": "--signatures",
         "fingerprints": "--fingerprints", "max_rejects": "--max-rejects", "engine": "--engine", "out": "--out",
         "add_new": "--add-new", "tokens": "--tokens", "insecure": "--insecure", "certfile": "--certfile",
         "keyfile": "--keyfile", "groups_dir": "--groups-dir", "spark_env": "--spark-env",
         "spark_remote": "--spark-remote", "skip_near_dups": "--skip-near-dups", "groups": "--groups"}
STORE_HELP = "PATH or local:PATH (embedded), memory:, hbase://HOST:PORT/?table_prefix=P"
StoreOption = Annotated[str | None, typer.Option(
    "--store", "-s", rich_help_panel="Store and log", help=f"{STORE_HELP} (default: ${ENV_VAR}, else ./{DEFAULT_URL}). Also before the command.")]
_UnlistedStore = Annotated[str | None, typer.Option("--store", "-s", hidden=True)]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", rich_help_panel="Store and log", help="Debug log on stderr; tracebacks with errors.")]
EncodingOption = Annotated[str, typer.Option(
    "--encoding", help="The inputs' encoding: utf-8 (default), gb18030 (also GBK and GB2312), big5, another Python codec, "
                       "or auto (detected per file, each file's said on stderr).", rich_help_panel="Input")]


def whole_count(text: str) -> int:
    """A count as people write large ones: ``100000000``, ``100_000_000``, ``100,000,000`` or ``1e8``."""
    plain = text.strip().replace("_", "").replace(",", "")
    try:
        value = int(plain)
    except ValueError:
        try:
            exact = float(plain)
        except ValueError:
            exact = None
        if exact is None or exact != int(exact) or abs(exact) > 1e18:
            raise typer.BadParameter(f"{text!r} is not a whole number (such as 100000000, 100_000_000 or 1e8)") from None
        value = int(exact)
    if value < 1:
        raise typer.BadParameter(f"{text!r}: at least 1")
    return value


Docs = Annotated[int, typer.Option(metavar="N", parser=whole_count,
                                   help="Number of documents in the corpus (1e8, 100_000_000 or 100000000).")]


Json = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON / JSON lines).", rich_help_panel="Output")]
Preset = Annotated[str | None, typer.Option(help=f"A measured setting of --signatures, --probes and --confirm: {', '.join(f'{name} ({basis})' for name, (_, basis) in PRESETS.items())} (docs/quality.md).")]


class _ReadableArgument(TyperArgument):
    """A positional argument shown by its name alone (``FILES...``, ``[TEXT]``), not with a
    Python type beside it (``<list[str]>``). Typer takes no class for an argument (it does
    for a command), so ``_Readable.get_params`` gives its arguments this class, once."""

    def display_type_rich(self, ctx) -> None:
        return None

    def get_usage_pieces(self, ctx) -> list[str]:
        name = self.name.upper()
        return [f"{name}..." if self.required else f"[{name}]..."] if self.nargs != 1 else \
            [name if self.required else f"[{name}]"]


class _Readable:
    """Help lists a flag (--json, --help) without a type (it takes no value), names what
    an option or argument takes in words (``--k N``, ``--format FORMAT``, ``FILES...``)
    rather than as a Python type (``<int range> [x>=1]``, ``<list[str]>``), which also leaves
    the descriptions more of an 80-column terminal, and reflows each paragraph of a
    command's description (a docstring's line breaks are not the terminal's)."""

    def __init__(self, *args, help: str | None = None, **kwargs) -> None:
        super().__init__(*args, help=help and _reflow(help), **kwargs)

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in (p for p in params if p.metavar is None):
            if isinstance(param, TyperArgument):
                param.__class__ = _ReadableArgument  # (see _ReadableArgument)
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
            elif getattr(param, "is_flag", False):
                param.metavar = ""
            elif {int, float} & set(typing.get_args(param.type_descriptor.annotation)
                                     or [param.type_descriptor.annotation]):
                param.metavar = "N"
            else:
                param.metavar = param.opts[-1].lstrip("-").rsplit("-", 1)[-1].upper()
        return params


def _reflow(text: str) -> str:
    """Each paragraph of ``text`` (blank-line separated) on one line."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(text).split("\n\n"))


Command, Group = type("Command", (_Readable, TyperCommand), {}), type("Group", (_Readable, TyperGroup), {})


class Session:
    """What one run of a command owns: the store URL, the store it opened (closed when the
    command ends, however it ends) and the verbosity."""

    def __init__(self, url: str, verbose: bool) -> None:
        self.url, self.verbose = url, verbose
        self._resources = ExitStack()
        self._store: Store | None = None
        self.failed = False  # the command ended with an error (its line printed)

    def store(self, create: bool = False, read_only: bool | None = None) -> Store:
        """The command's store, opened on first use (``read_only``: True when the command only
        reads, False when it writes: see ``open_store``)."""
        if self._store is None:
            self._store = self._resources.enter_context(open_store(self.url, create=create, read_only=read_only))
        return self._store

    def index(self, read_only: bool | None = None) -> Index:
        """The command's index; one made before the short-text rule was the default says so on stderr."""
        index = Index.open(self.store(read_only=read_only))
        if index.before_short_default:
            typer.echo(f"note: {index.store.url} was made before the short-text rule was the default: its short texts "
                       "(under 200 characters) match on their 64 bits alone, so unrelated ones sharing a term can match; "
                       "for the rule, make it again (dedup-hbase init) and load its documents again", err=True)
        return index

    def close(self) -> None:
        """Close the store. An error closing it (a full disk) is one line and status 1, or,
        after a command that failed already (its line is printed), only its traceback with
        --verbose."""
        try:
            self._resources.close()
        except (DedupError, OSError) as e:
            if self.verbose:
                traceback.print_exc()
            if not self.failed:
                typer.echo(f"error: {e}", err=True)
                raise typer.Exit(1) from None


def out(obj) -> None:
    """One JSON line on stdout."""
    typer.echo(json.dumps(obj, ensure_ascii=False))


EXIT_REJECTS = 3  # a job finished, but rejected more records than --max-rejects allows


def exit_for_rejects(report: JobReport, max_rejects: float | None, kept: str | None) -> None:
    """End a finished job with status ``EXIT_REJECTS`` and one line when its rejects make it
    count as failed (``JobReport.failure``: an input cut off or corrupt, or too many rejects);
    ``kept``: the --rejects file, if any."""
    failure = report.failure(max_rejects)
    if failure:
        typer.echo(f"error: {failure}{'' if kept or report.damaged else '; --rejects FILE keeps them'}", err=True)
        raise typer.Exit(EXIT_REJECTS)


def exit_for_damage(report: JobReport) -> None:
    """End a finished job with status ``EXIT_REJECTS`` and one line when an input was cut off
    or corrupt (its records before the damage were used)."""
    damage = report.damage()
    if damage:
        typer.echo(f"error: {damage}", err=True)
        raise typer.Exit(EXIT_REJECTS)


def as_flags(e: BaseException) -> str:
    """An error's message with the library arguments it names (``confirm=14``, ``add_new=True``,
    ``k=``) written as the command line's flags (``--confirm 14``, ``--add-new``, ``--k``)."""
    text = str(e)
    for name in getattr(e, "arguments", ()):
        flag = FLAGS[name]
        text = re.sub(rf"(?<![\w-]){name}=True\b", flag, text)
        text = re.sub(rf"(?<![\w-]){name}=(?=[^\s,;:)])", flag + " ", text)
        text = re.sub(rf"(?<![\w-]){name}=", flag, text)
    return text


def _fail(ctx: typer.Context, message: str, status: int) -> None:
    ctx.obj.failed = True
    if ctx.obj.verbose:
        traceback.print_exc()
    typer.echo(message, err=True)
    raise typer.Exit(status)


def _say_encodings() -> None:
    """The encoding ``--encoding auto`` chose for each file, one line on stderr (corpus.py logs it)."""
    chosen = logging.getLogger(corpus.__name__)
    if not chosen.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        chosen.addHandler(handler)
        chosen.setLevel(logging.INFO)
        chosen.propagate = False


def command(fn, takes_store: bool = True):
    """``fn(ctx, ...)`` as a command that also takes the global options (``--store`` unlisted
    in its help when ``takes_store`` is false: a command that opens no store accepts it, as
    every command does, and ignores it) and whose user errors and interruptions print one line
    (exit 1, or 128 + the signal)."""
    @functools.wraps(fn)
    def wrapper(ctx: typer.Context, *args, store: str | None = None, verbose: bool = False, **kwargs):
        ctx.obj.url = store or ctx.obj.url
        ctx.obj.verbose = verbose or ctx.obj.verbose
        if ctx.obj.verbose:
            logging.basicConfig(format="%(name)s: %(message)s", stream=sys.stderr)
            logging.getLogger("dedup_hbase").setLevel(logging.DEBUG)
        _say_encodings()
        try:
            return fn(ctx, *args, **kwargs)
        except BrokenPipeError:  # `dedup-hbase check ... | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except Interrupted as stop:
            _fail(ctx, f"interrupted by {stop.signal.name}: {stop}", stop.status)
        except STOPS as stop:
            _fail(ctx, f"interrupted by {signal_of(stop).name}", exit_status(signal_of(stop)))
        except ModuleNotFoundError as e:
            _fail(ctx, f"error: {missing_package(e)}", 1)
        except (DedupError, OSError) as e:
            hint = next((text for kind, text in HINTS.items() if isinstance(e, kind)), "")
            _fail(ctx, f"error: {as_flags(e)}{hint}", 1)

    signature = inspect.signature(fn, eval_str=True)
    store = inspect.Parameter("store", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=StoreOption if takes_store else _UnlistedStore)
    wrapper.__signature__ = signature.replace(parameters=[
        *signature.parameters.values(), store,
        inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=VerboseOption)])
    return wrapper
