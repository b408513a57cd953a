"""``plan`` and ``schema``: an index's layout before it exists (rows, bytes and candidates per
lookup of each scheme for N documents; the HBase shell DDL of its tables). Thin shells over
index/plan.py and index/schema.py; commands.py registers them (command.py).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..index import plan as planning
from ..index.confirm import check_confirm
from ..index.lookup import check_probes, parse_probes
from ..index.schema import hbase_shell_ddl, load_schema
from ..index.spec import preset_options
from ..stores import parse_store_url
from ..text.signatures import Signatures
from .command import Docs, Json, Preset, out


def plan(ctx: typer.Context, docs: Docs,
         k: Annotated[int, typer.Option("--k", "-k", help="Max differing bits to guarantee.")] = 3,
         id_bytes: Annotated[int, typer.Option(help="Average bytes of a document id.")] = 16,
         signatures: Annotated[str | None, typer.Option(help="The signatures of init --signatures (body,lead150: each row, byte and scan twice).")] = None,
         probes: Annotated[str | None, typer.Option(help="The probes of init --probes (8,1: nine more lookups in all).")] = None,
         confirm: Annotated[int | None, typer.Option(help="The confirmation of init --confirm (14: a sketch of 10 more bytes in each index cell).")] = None,
         preset: Preset = None, json_: Json = False) -> None:
    """Index rows, bytes and expected candidates per lookup of each scheme for N documents."""
    options = preset_options(preset, signatures=signatures, probes=probes, confirm=confirm)
    signatures, probes, confirm = options.get("signatures"), options.get("probes"), options.get("confirm")
    chosen = Signatures.parse(signatures)
    probed = sum(check_probes(parse_probes(probes), len(chosen)))
    sketch = check_confirm(confirm, k, bool(probed)) is not None
    rows = planning.plans(docs, k, id_bytes, chosen, probed, sketch)
    if json_:
        for row in rows:
            out(row.to_dict())
    else:
        typer.echo(planning.table(docs, k, id_bytes, rows, chosen, probed, sketch))


def schema(ctx: typer.Context, table_prefix: Annotated[str | None, typer.Option(help="Table name prefix (default: the hbase:// store's, else 'dedup').")] = None,
           regions: Annotated[int | None, typer.Option(help="Regions of the index table.")] = None) -> None:
    """Print the HBase shell DDL of the tables (from schema/tables.json)."""
    if table_prefix is None:
        table_prefix = parse_store_url(ctx.obj.url).options.get("table_prefix", "dedup")
    typer.echo(hbase_shell_ddl(load_schema(regions), table_prefix), nl=False)
