"""``serve``: the dedup service over the store's index (a thin shell over service/server.py;
commands.py registers it, command.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..index.retention import parse_duration


def serve(ctx: typer.Context,
          host: Annotated[str, typer.Option(rich_help_panel="Listening", help="Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).")] = "127.0.0.1",
          port: Annotated[int, typer.Option(rich_help_panel="Listening", help="Port to listen on (0: a free one, printed at start).")] = 8080,
          max_docs: Annotated[int, typer.Option(rich_help_panel="Limits", help="Documents one request may hold.")] = 1000,
          max_text_bytes: Annotated[int, typer.Option(rich_help_panel="Limits", help="Bytes one document's text may have.")] = 1 << 20,
          max_body_bytes: Annotated[int, typer.Option(rich_help_panel="Limits", help="Bytes one request body may have.")] = 64 << 20,
          max_matches: Annotated[int, typer.Option(rich_help_panel="Limits", help="Matches listed per document, the nearest first; more are counted (match_count).")] = 1000,
          log_level: Annotated[str, typer.Option(rich_help_panel="Logging", help="uvicorn's log level: debug, info, warning, error.")] = "warning",
          tokens: Annotated[str | None, typer.Option(rich_help_panel="Security", help="Tokens file: a line 'TOKEN read,write,delete' per token (Authorization: Bearer TOKEN); read again on SIGHUP.")] = None,
          insecure: Annotated[bool, typer.Option(rich_help_panel="Security", help="Serve an address other than loopback without --tokens, on purpose.")] = False,
          certfile: Annotated[str | None, typer.Option(rich_help_panel="Security", help="TLS certificate (PEM): serve HTTPS.")] = None,
          keyfile: Annotated[str | None, typer.Option(rich_help_panel="Security", help="TLS private key (PEM), if not in the certificate's file.")] = None,
          access_log: Annotated[str | None, typer.Option(rich_help_panel="Logging", help="A JSON line per request into FILE (- : stderr); reopened on SIGHUP.")] = None,
          count_every: Annotated[str, typer.Option(rich_help_panel="Logging", help="Count the index's documents for /metrics at start and then this often (90s, 12h, 7d), or 'never'.")] = "1h") -> None:
    """Run the dedup service: JSON over HTTP, until Ctrl-C or SIGTERM.

    POST /v1/check and POST /v1/add?if_new=true take a JSON list of {"id", "text"} or
    {"id", "simhash"}; GET and DELETE /v1/docs/ID; GET /v1/stats; GET /metrics (Prometheus);
    GET /healthz (the process lives), GET /readyz (the store answers). With if_new a
    document is added only when nothing within k bits is indexed or earlier in the request,
    exact across servers on one HBase (leases in its locks table; the store URL's
    fleet_locks=false turns them off where one server does all the adds, lease=S and
    lock_stripes=N set them).
    With --tokens, check, GET docs, stats and metrics need the scope read, add write, DELETE
    delete; a server on an address other than loopback needs --tokens (or --insecure).
    docs/service.md: running it in production."""
    from ..service.documents import Limits
    from ..service.online import OnlineIndex
    from ..service.server import Production
    from ..service.server import serve as run_service

    limits = Limits(max_docs=max_docs, max_text_bytes=max_text_bytes, max_body_bytes=max_body_bytes,
                    max_matches=max_matches)
    production = Production(tokens=tokens, insecure=insecure, certfile=certfile, keyfile=keyfile,
                            access_log=access_log, count_every=None if count_every == "never" else parse_duration(count_every))
    online = OnlineIndex(ctx.obj.index(read_only=False))
    online.index.fingerprint("warm up")  # load the dictionary now, not in the first request

    def ready(url: str) -> None:
        typer.echo(f"serving {online.index.store.url} on {url} (POST /v1/check, POST /v1/add?if_new=true, "
                   "GET|DELETE /v1/docs/ID, GET /v1/stats, GET /healthz); Ctrl-C stops", err=True)

    stopped = run_service(online, host=host, port=port, limits=limits, log_level=log_level, ready=ready,
                          production=production)
    typer.echo(f"stopped{f' by {stopped}' if stopped else ''}", err=True)
