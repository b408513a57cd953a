"""The bulk jobs by engine: the same job on this machine's cores (``local``: loader.py,
groups.py) or as one Apache Spark job (``spark``: the spark package, imported only when asked for).

The engines take the same options (``loader.LoadOptions``) and give the same report; the
Spark engine also takes ``SparkOptions`` (master, settings, staging). Both raise
``interrupts.Interrupted`` when a signal stops them, with what the user may do next.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidInput
from ..index.index import Index
from ..text.fingerprint import Fingerprinter
from .corpus import Record
from .groups import GroupsOptions, GroupsReport, group_files
from .loader import LoadOptions, LoadReport, Progress, load_files

ENGINES = ("local", "spark")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise InvalidInput(f"--engine is {' or '.join(ENGINES)}, not {engine!r}")
    return engine


def load(index: Index, paths: list[str], options: LoadOptions = LoadOptions(), engine: str = "local",
         spark=None, *, progress: Progress | None = None,
         on_reject: Callable[[Record], None] | None = None) -> LoadReport:
    """Load ``paths`` into ``index`` on ``engine``. ``spark``: the Spark engine's
    ``SparkOptions`` (default: local[*]). ``progress`` and ``on_reject`` are the local
    engine's live reports (the Spark engine reports at its end)."""
    if check_engine(engine) == "spark":
        from .spark import SparkOptions, spark_load_files

        return spark_load_files(index, paths, options, spark or SparkOptions())
    return load_files(index, paths, options, on_reject=on_reject, progress=progress)


def groups(paths: list[str], out: str, options: GroupsOptions, fingerprinter: Fingerprinter,
           engine: str = "local", spark=None) -> GroupsReport:
    """The near-duplicate groups of ``paths`` written to the folder ``out`` (groups.py), on
    ``engine``; ``spark`` as in ``load``. Both engines write the same output."""
    if check_engine(engine) == "spark":
        from .spark import SparkOptions, spark_group_files

        return spark_group_files(paths, out, options, spark or SparkOptions(), fingerprinter.spec,
                                 fingerprinter.label)
    return group_files(paths, out, options, fingerprinter)


def check(index: Index, paths: list[str], out: str | None, engine: str = "spark", *, add_new: bool = False,
          spark: tuple[str, list[str] | None, str | None] = ("local[*]", None, None), **options):
    """``check`` of ``paths`` as a Spark job writing its records under ``out`` (spark/check.py:
    ``CheckOptions`` takes ``options``); ``spark``: (master, KEY=VALUE settings, staging).
    The local engine answers on stdout (``loader.check``): it takes neither ``out`` nor
    ``add_new``."""
    if check_engine(engine) == "local":
        raise InvalidInput("--out and --add-new need --engine spark (the local engine writes its records to stdout)")
    if out is None:
        raise InvalidInput("check --engine spark writes its records to a folder: give --out DIR")
    from .spark import CheckOptions, SparkOptions, spark_check_files

    master, conf, staging = spark
    return spark_check_files(index, paths, CheckOptions(out, add_new=add_new, **options),
                             SparkOptions(master, SparkOptions.parse_conf(conf), staging))
