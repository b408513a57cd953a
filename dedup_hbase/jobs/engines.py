"""The bulk jobs by engine: each job (``load``, ``check``, ``groups``) on this machine's cores
(``local``: the local package) or as one Apache Spark job (``spark``: the spark package,
imported only when asked for).

A job takes the same options (options.py) and gives the same report (reports.py) on either
engine; the Spark engine also takes ``SparkOptions`` (master, settings, staging; default:
``local[*]``). An option one engine cannot honour is refused by it, with what to use instead.
Both engines raise ``interrupts.Interrupted`` when a signal stops them, with what the user may
do next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput
from ..index.index import Index
from ..text.fingerprint import Fingerprinter
from .corpus import Record
from .local import check_files, group_files, load_files
from .options import CheckOptions, GroupsOptions, LoadOptions, SparkOptions
from .reports import CheckReport, GroupsReport, LoadReport

ENGINES = ("local", "spark")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise InvalidInput(f"engine= is {' or '.join(ENGINES)}, not {engine!r}", arguments=("engine",))
    return engine


def load(index: Index, paths: list[str], options: LoadOptions = LoadOptions(), engine: str = "local",
         spark: SparkOptions | None = None, *, progress: Callable[[int, int], None] | None = None,
         on_reject: Callable[[Record], None] | None = None) -> LoadReport:
    """Load ``paths`` into ``index``. ``progress`` (records and text bytes done) is the local
    engine's live report; ``on_reject`` gets each rejected record, as it comes (local) or
    once the records are fingerprinted (Spark), in input order."""
    if check_engine(engine) == "spark":
        from .spark import spark_load_files

        return spark_load_files(index, paths, options, spark or SparkOptions(), on_reject=on_reject)
    return load_files(index, paths, options, on_reject=on_reject, progress=progress)


def check(index: Index, paths: list[str], options: CheckOptions = CheckOptions(), engine: str = "local",
          spark: SparkOptions | None = None, *,
          on_answer: Callable[[dict[str, Any]], None] | None = None) -> CheckReport:
    """Look every record of ``paths`` up in ``index``, nothing written (but ``options.add_new``).
    The local engine hands each check record (outputs.py) to ``on_answer`` as it comes; the
    Spark engine writes them under ``options.out``."""
    if check_engine(engine) == "spark":
        from .spark import spark_check_files

        return spark_check_files(index, paths, options, spark or SparkOptions())
    return check_files(index, paths, options, on_answer or (lambda answer: None))


def groups(paths: list[str], out: str, options: GroupsOptions, fingerprinter: Fingerprinter,
           engine: str = "local", spark: SparkOptions | None = None) -> GroupsReport:
    """The near-duplicate groups of ``paths`` written to the folder ``out`` (outputs.py).
    Both engines write the same output."""
    if check_engine(engine) == "spark":
        from .spark import spark_group_files

        return spark_group_files(paths, out, options, spark or SparkOptions(), fingerprinter)
    return group_files(paths, out, options, fingerprinter)
