"""The HTTP application: every request of the service, whichever way it came in, answered in
one place (``Dispatch``).

======  =======================  ==========================================================
POST    /v1/check                a JSON array of documents ``{"id", "text"}`` or ``{"id",
                                 "simhash"}`` -> ``[{"id", "simhash", "matches"}, ...]``;
                                 ``?explain=true`` adds a text's weightiest terms and each
                                 match's differing bits (``DedupService.explain``)
POST    /v1/add?if_new=true      the same documents -> ``[{"id", "simhash", "added",
                                 "matches"}, ...]``; without ``if_new`` every document is
                                 added (upsert by id); ``&ttl=DURATION`` (``90s``, ``12h``,
                                 ``7d``) on an index with a TTL: these documents expire
                                 after that, at most the index's TTL
GET     /v1/docs/{id}            ``{"id", "simhash", "meta"}`` (the id: the rest of the path)
DELETE  /v1/docs/{id}            ``{"deleted": id}``
GET     /v1/stats                the index's configuration and this server's counters;
                                 ``?full=true`` adds exact counts (reads every key)
GET     /metrics                 Prometheus' text format (metrics.py)
GET     /healthz                 ``{"ok": true}``: the process answers (no store call)
GET     /readyz                  ``{"ready": true}`` after a round trip to the store, else a
                                 503 ``{"ready": false, "error"}`` (probes.py)
======  =======================  ==========================================================

A request reaches ``Dispatch`` as an ``Exchange`` (method, path, query, headers, body, and how
to send its answer), from the ASGI application (``asgi``: every request uvicorn hands it) or
from the HTTP fast lane (http_lane.py: a plain ``POST`` to the document endpoints).
``Dispatch`` looks up the route (an exact path, or the ``/v1/docs/`` prefix); with tokens
(access.py) checks that the request's token has the scope its route's method needs (``read``:
check, GET docs, stats, metrics; ``write``: add; ``delete``: DELETE docs; none: healthz,
readyz), else answers 401 (with ``WWW-Authenticate: Bearer``) or 403; starts its endpoint,
turns its outcome or exception into the status and JSON body (``DedupService.failure``: 400,
404, 413, 503, 500), renders it and hands it to the exchange: the same bytes whichever way
the request came. A method a route lacks is a 405, a path no route has a 404 (``{"error":
"METHOD PATH: Method Not Allowed"}``, ``... Not Found``), before any token is looked at; a
``GET`` route takes ``HEAD`` too (uvicorn sends no body for it). Paths are matched as given
(no redirect of a trailing slash). A body over ``Limits.max_body_bytes`` is a 413, refused on
its declared length before it is read; a client that leaves before its body arrived whole
gets no answer. Every answer is ``content-length`` and ``content-type`` (``application/json``;
``/metrics``' text its own) after uvicorn's ``date`` and ``server`` (and a 401's
``www-authenticate`` after them). Every answer is counted (``DedupService.metrics``) and, with
an access log, logged (metrics.py), as it is handed to the exchange.

The endpoints answer by callback: the document endpoints through their batchers, the others
from the handlers' threads. Nothing here knows the index: the handlers do (handlers.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from .access import CHALLENGE, Access
from .batcher import Then
from .documents import (
    RequestDoc,
    RequestError,
    decoded_body,
    needs_texts,
    parse_documents,
    render,
    render_documents,
)
from .handlers import DedupService
from .metrics import CONTENT_TYPE, AccessLog, Exposition

DOCS_PREFIX = "/v1/docs/"
JSON = b"application/json"
Headers = tuple[tuple[bytes, bytes], ...]
# how a way in sends an answer: (status, content, content type, headers after content-type)
Reply = Callable[[int, bytes, bytes, Headers], None]


@dataclass(slots=True)
class Exchange:
    """One request as a way in hands it to ``Dispatch``, and ``reply(status, content,
    content_type, headers)``, the way in's own way to send the answer (called once, on the
    event loop's thread)."""

    method: str
    path: str  # percent-decoded
    query: bytes
    headers: list[tuple[bytes, bytes]]  # names in lower case
    body: bytes
    reply: Reply
    started: float  # time.perf_counter() when the request arrived
    remote: Any = None  # the peer's (host, port), when known
    refused: RequestError | None = None  # the body, refused as it was read (over the limit)
    documents: int = 0  # the documents of its body, once read (check, add)


# an endpoint: (the exchange, the rest of the path after a prefix route's, then) -> None; ``then``
# gets the answer's JSON value or the exception
Endpoint = Callable[[Exchange, str, Then], None]


@dataclass(frozen=True, slots=True)
class Route:
    """A path's endpoints by method, each with the scope a token needs for it (None: open to
    anyone), and how its answers are written."""

    name: str  # the endpoint's name: check, add, docs, stats, metrics, healthz, readyz
    methods: dict[str, tuple[Endpoint, str | None]]
    render: Callable[[Any], bytes] = render
    content_type: bytes = JSON  # of a 200's body (an error's is JSON)


class Dispatch:
    """``dispatch(exchange)``: the one place every request is answered (see the module
    docstring); ``access``: the tokens (None: no token asked), ``log``: the access log (None:
    none). Used on the event loop's thread."""

    def __init__(self, service: DedupService, access: Access | None = None, log: AccessLog | None = None) -> None:
        self.service, self.access, self.log = service, access, log
        self.metrics = service.metrics
        self.routes, self.prefixed = endpoints(service)

    def __call__(self, exchange: Exchange) -> None:
        path, method = exchange.path, exchange.method
        route, rest = self.routes.get(path), ""
        if route is None and path.startswith(DOCS_PREFIX):
            route, rest = self.prefixed, path[len(DOCS_PREFIX):]
        entry = None if route is None else route.methods.get(method)
        if entry is None:
            missed = "Not Found" if route is None else "Method Not Allowed"
            self.answer(exchange, "other" if route is None else route.name, 404 if route is None else 405,
                        render({"error": f"{method} {path}: {missed}"}))
            return
        endpoint, scope = entry
        if scope is not None and self.access is not None:
            refused = self.access.refusal(exchange.headers, scope)
            if refused is not None:
                status, message = refused
                self.answer(exchange, route.name, status, render({"error": f"{method} {path}: {message}"}), JSON,
                            CHALLENGE if status == 401 else ())
                return
        self.service.counters["requests"] += 1  # on the event loop's thread only: no lock
        try:
            endpoint(exchange, rest, lambda answer, error: self.finish(exchange, route, answer, error))
        except Exception as e:
            self.finish(exchange, route, None, e)

    def finish(self, exchange: Exchange, route: Route, answer: Any, error: BaseException | None) -> None:
        """The endpoint's outcome rendered and replied."""
        status, body = (200, answer) if error is None else self.service.failure(error, exchange.method, exchange.path)
        try:
            content = route.render(body) if status == 200 else render(body)
        except Exception as e:  # a bug (an answer that is not JSON): the service keeps answering
            status, body = self.service.failure(e, exchange.method, exchange.path)
            content = render(body)
        self.answer(exchange, route.name, status, content, route.content_type if status == 200 else JSON)

    def answer(self, exchange: Exchange, name: str, status: int, content: bytes, content_type: bytes = JSON,
               headers: Headers = ()) -> None:
        """The reply handed to the exchange, then counted and logged."""
        seconds = time.perf_counter() - exchange.started
        exchange.reply(status, content, content_type, headers)
        self.metrics.request(name, status, exchange.documents, seconds)
        if self.log is not None:
            self.log.write(name, exchange.method, status, exchange.documents, seconds, exchange.remote)


def endpoints(service: DedupService) -> tuple[dict[str, Route], Route]:
    """The routes of the exact paths, and the route of the paths under ``DOCS_PREFIX``."""
    limits, texts_for = service.limits, service.online.index.lookup_options

    def documents(exchange: Exchange) -> list[RequestDoc]:
        if exchange.refused is not None:
            raise exchange.refused
        docs = parse_documents(decoded_body(exchange.headers, exchange.body, limits), limits)
        exchange.documents = len(docs)
        needs_texts(docs, texts_for)
        return docs

    def check(exchange: Exchange, rest: str, then: Then) -> None:
        if exchange.query and flag(query_values(exchange.query).get("explain"), "explain", False):
            docs = documents(exchange)
            service.checks.submit(lambda answer, error: explained(then, docs, answer, error), docs)
            return
        service.checks.submit(then, documents(exchange))

    def explained(then: Then, docs: list[RequestDoc], answer: Any, error: BaseException | None) -> None:
        if error is not None:
            then(None, error)
        else:
            in_thread(service, then, service.explain, docs, answer)

    def add(exchange: Exchange, rest: str, then: Then) -> None:
        params = query_values(exchange.query)
        if_new, ttl = flag(params.get("if_new"), "if_new", False), service.request_ttl(params.get("ttl"))
        docs = documents(exchange)
        if service.adds is None:
            in_thread(service, then, service.add, docs, if_new, ttl)
        else:
            service.adds.submit(then, docs, if_new, ttl)

    def document(exchange: Exchange, doc_id: str, then: Then) -> None:
        in_thread(service, then, service.document, doc_id)

    def delete(exchange: Exchange, doc_id: str, then: Then) -> None:
        in_thread(service, then, service.delete, doc_id)

    def stats(exchange: Exchange, rest: str, then: Then) -> None:
        in_thread(service, then, service.stats, flag(query_values(exchange.query).get("full"), "full", False))

    def health(exchange: Exchange, rest: str, then: Then) -> None:
        then({"ok": True}, None)

    def ready(exchange: Exchange, rest: str, then: Then) -> None:
        service.readiness.ask(then)

    exposition: list[Exposition] = []  # made at the first scrape

    def metrics(exchange: Exchange, rest: str, then: Then) -> None:
        try:
            if not exposition:
                exposition.append(Exposition(service.metrics, service.sources))
            text = exposition[0]()
        except ModuleNotFoundError as e:
            raise RequestError(503, f"GET /metrics needs the Python package {e.name}: pip install '.[service]' "
                                    "in the dedup-hbase folder") from None
        then(text, None)

    def both(endpoint: Endpoint, scope: str | None) -> dict[str, tuple[Endpoint, str | None]]:
        return {"GET": (endpoint, scope), "HEAD": (endpoint, scope)}

    routes = {"/v1/check": Route("check", {"POST": (check, "read")}, render_documents),
              "/v1/add": Route("add", {"POST": (add, "write")}, render_documents),
              "/v1/stats": Route("stats", both(stats, "read")),
              "/metrics": Route("metrics", both(metrics, "read"), bytes, CONTENT_TYPE),
              "/healthz": Route("healthz", both(health, None)),
              "/readyz": Route("readyz", both(ready, None))}
    return routes, Route("docs", {**both(document, "read"), "DELETE": (delete, "delete")})


def in_thread(service: DedupService, then: Then, fn: Callable, *args: Any) -> None:
    """``fn(*args)`` on the handlers' threads; ``then`` gets its outcome on the event loop's
    thread (nothing when the service stops first)."""
    def settled(future: asyncio.Future) -> None:
        if future.cancelled():
            return
        error = future.exception()
        then(None, error) if error is not None else then(future.result(), None)

    asyncio.get_running_loop().run_in_executor(service.threads, fn, *args).add_done_callback(settled)


class ClientGone(Exception):
    """The client closed the connection before its request body arrived whole."""


def asgi(dispatch: Dispatch, max_body: int):
    """The ASGI application: each request's body read (a ``POST``'s), handed to ``dispatch``,
    its answer sent."""
    async def app(scope: dict, receive, send) -> None:
        done = asyncio.get_running_loop().create_future()

        def reply(status: int, content: bytes, content_type: bytes, headers: Headers) -> None:
            if not done.done():  # else cancelled: the server stops
                done.set_result((status, content, content_type, headers))

        exchange = Exchange(scope["method"], scope["path"], scope["query_string"], scope["headers"], b"", reply,
                            time.perf_counter(), scope.get("client"))
        if exchange.method == "POST":
            try:
                exchange.body = await read_body(exchange.headers, receive, max_body)
            except RequestError as e:
                exchange.refused = e
            except ClientGone:  # nobody to answer
                return
        dispatch(exchange)
        status, content, content_type, headers = await done
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-length", b"%d" % len(content)), (b"content-type", content_type), *headers]})
        await send({"type": "http.response.body", "body": content})

    return app


async def read_body(headers: list[tuple[bytes, bytes]], receive, max_bytes: int) -> bytes:
    """The request's body, whole; RequestError (413) over ``max_bytes`` (refused on its
    declared length before any of it is read), ClientGone when the client leaves first."""
    declared = next((value for name, value in headers if name == b"content-length"), None)
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
