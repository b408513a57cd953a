"""The HTTP application: one ASGI application for every request of the service.

======  =======================  ==========================================================
POST    /v1/check                a JSON array of documents ``{"id", "text"}`` or ``{"id",
                                 "simhash"}`` -> ``[{"id", "simhash", "matches"}, ...]``
POST    /v1/add?if_new=true      the same documents -> ``[{"id", "simhash", "added",
                                 "matches"}, ...]``; without ``if_new`` every document is
                                 added (upsert by id); ``&ttl=DURATION`` (``90s``, ``12h``,
                                 ``7d``) on an index with a TTL: these documents expire
                                 after that, at most the index's TTL
GET     /v1/docs/{id}            ``{"id", "simhash", "meta"}`` (the id: the rest of the path)
DELETE  /v1/docs/{id}            ``{"deleted": id}``
GET     /v1/stats                the index's configuration and this server's counters;
                                 ``?full=true`` adds exact counts (reads every key)
GET     /healthz                 ``{"ok": true}`` after a round trip to the store
======  =======================  ==========================================================

Every request, whatever its route, passes through ``app``: the route looked up in ``ROUTES``
(an exact path, or the ``/v1/docs/`` prefix), its endpoint awaited, any exception turned into
its status and JSON body (``DedupService.failure``: 400, 404, 413, 503, 500), the answer
rendered and sent, always as ``content-length`` and ``content-type: application/json`` after
uvicorn's ``date`` and ``server``. A method a route lacks is a 405, a path no route has a 404
(``{"error": "METHOD PATH: Method Not Allowed"}``, ``... Not Found``); a ``GET`` route takes
``HEAD`` too (uvicorn sends no body for it). Paths are matched as given (no redirect of a
trailing slash). A request is checked whole before anything is written (documents.py); a body
over ``Limits.max_body_bytes`` is a 413 before or while it is read; a client that leaves
before its body arrived whole gets no answer. The application knows HTTP, not the index: the
endpoints call the handlers (handlers.py), the document endpoints through their batchers, the
others on the handlers' threads. It speaks HTTP only (no websocket, no lifespan: server.py
turns them off).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from .documents import RequestError, parse_documents, render, render_documents
from .handlers import DedupService

# an endpoint: (the ASGI scope, receive, the rest of the path after a prefix route's) -> the answer's JSON value
Endpoint = Callable[[dict, Callable, str], Awaitable[Any]]
DOCS_PREFIX = "/v1/docs/"


@dataclass(frozen=True, slots=True)
class Route:
    """A path's endpoints by method, and how its answers are written."""

    name: str  # the endpoint's name: check, add, docs, stats, healthz
    methods: dict[str, Endpoint]
    render: Callable[[Any], bytes] = render


class ClientGone(Exception):
    """The client closed the connection before its request body arrived whole."""


def create_app(service: DedupService):
    """The ASGI application of ``service``."""
    routes, prefixed = endpoints(service)
    failure, counters = service.failure, service.counters

    async def app(scope: dict, receive, send) -> None:
        path, method = scope["path"], scope["method"]
        route, rest = routes.get(path), ""
        if route is None and path.startswith(DOCS_PREFIX):
            route, rest = prefixed, path[len(DOCS_PREFIX):]
        endpoint = None if route is None else route.methods.get(method)
        if endpoint is None:
            status, body = (404, "Not Found") if route is None else (405, "Method Not Allowed")
            await respond(send, status, render({"error": f"{method} {path}: {body}"}))
            return
        counters["requests"] += 1  # on the event loop's thread only: no lock
        try:
            status, body = 200, await endpoint(scope, receive, rest)
        except ClientGone:  # nobody to answer
            return
        except Exception as e:
            status, body = failure(e, method, path)
        try:
            content = route.render(body)
        except Exception as e:  # a bug (an answer that is not JSON): the service keeps answering
            status, body = failure(e, method, path)
            content = render(body)
        await respond(send, status, content)

    return app


async def respond(send, status: int, content: bytes) -> None:
    """Send an answer: ``status``, ``content-length``, ``content-type: application/json``, ``content``."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"%d" % len(content)), (b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": content})


def endpoints(service: DedupService) -> tuple[dict[str, Route], Route]:
    """The routes of the exact paths, and the route of the paths under ``DOCS_PREFIX``."""
    limits = service.limits

    def in_thread(fn, *args) -> asyncio.Future:
        return asyncio.get_running_loop().run_in_executor(service.threads, fn, *args)

    async def check(scope: dict, receive, rest: str):
        return await service.checks(parse_documents(await read_body(scope, receive, limits.max_body_bytes), limits))

    async def add(scope: dict, receive, rest: str):
        params = query_values(scope["query_string"])
        if_new, ttl = flag(params.get("if_new"), "if_new", False), service.request_ttl(params.get("ttl"))
        docs = parse_documents(await read_body(scope, receive, limits.max_body_bytes), limits)
        if service.adds is None:
            return await in_thread(service.add, docs, if_new, ttl)
        return await service.adds(docs, if_new, ttl)

    async def document(scope: dict, receive, doc_id: str):
        return await in_thread(service.document, doc_id)

    async def delete(scope: dict, receive, doc_id: str):
        return await in_thread(service.delete, doc_id)

    async def stats(scope: dict, receive, rest: str):
        return await in_thread(service.stats, flag(query_values(scope["query_string"]).get("full"), "full", False))

    async def health(scope: dict, receive, rest: str):
        return await in_thread(service.health)

    routes = {"/v1/check": Route("check", {"POST": check}, render_documents),
              "/v1/add": Route("add", {"POST": add}, render_documents),
              "/v1/stats": Route("stats", {"GET": stats, "HEAD": stats}),
              "/healthz": Route("healthz", {"GET": health, "HEAD": health})}
    return routes, Route("docs", {"GET": document, "HEAD": document, "DELETE": delete})


async def read_body(scope: dict, receive, max_bytes: int) -> bytes:
    """The request's body, whole; RequestError (413) over ``max_bytes`` (refused on its
    declared length before any of it is read), ClientGone when the client leaves first."""
    declared = next((value for name, value in scope["headers"] if name == b"content-length"), None)
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, f"the body is {int(declared):,} bytes, over the limit of {max_bytes:,}")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise RequestError(413, f"the body is over the limit of {max_bytes:,} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def flag(value: str | None, name: str, default: bool) -> bool:
    """A query parameter that is true or false (or 1, 0; any case); RequestError (400) otherwise."""
    if value is None:
        return default
    if value.lower() not in ("true", "false", "1", "0"):
        raise RequestError(400, f"{name} is true or false, not {value!r}")
    return value.lower() in ("true", "1")


def query_values(query: bytes) -> dict[str, str]:
    """A URL's query string as a dict, each name's last value (blank values kept)."""
    if not query:
        return {}
    return dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True))
