"""``pack-env``: the Spark executors' Python environment, packed for ``--spark-env`` (a thin
shell over jobs/spark/ship.py; commands.py registers it, command.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from .command import out

Json = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON).")]


def pack_env(ctx: typer.Context, archive: Annotated[str, typer.Argument(help="The archive to write: .tar.gz or .tgz.")] = "dedup-env.tar.gz",
             python: Annotated[str, typer.Option(help="The Python of the environment, at the same path on every node, the minor version of this one.")] = "/usr/bin/python3.11",
             json_: Json = False) -> None:
    """Pack the Spark executors' Python environment: a virtualenv of --python with this
    dedup-hbase, its compiled core and dependencies (as installed here), for --spark-env."""
    from ..jobs.spark.ship import pack_env as pack

    packed = pack(archive, python)
    if json_:
        out({"archive": packed.archive, "python": packed.python, "packages": packed.packages, "bytes": packed.bytes})
    else:
        typer.echo(f"packed {packed.packages} packages for {packed.python} into {packed.archive} "
                   f"({packed.bytes / 2**20:,.0f} MiB): --spark-env {packed.archive}", err=True)
