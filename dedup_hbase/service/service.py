"""The dedup service: JSON over HTTP (Starlette on uvicorn) in front of an ``OnlineIndex``.

======  =======================  ==========================================================
POST    /v1/check                a JSON list of documents ``{"id", "text"}`` or ``{"id",
                                 "simhash"}`` -> ``[{"id", "simhash", "matches"}, ...]``
POST    /v1/add?if_new=true      the same documents -> ``[{"id", "simhash", "added",
                                 "matches"}, ...]``; without ``if_new`` every document is
                                 added (upsert by id); ``&ttl=DURATION`` (``90s``, ``12h``,
                                 ``7d``) on an index with a TTL: these documents expire
                                 after that, at most the index's TTL
GET     /v1/docs/{id}            ``{"id", "simhash", "meta"}``
DELETE  /v1/docs/{id}            ``{"deleted": id}``
GET     /v1/stats                the index's configuration and this server's counters;
                                 ``?full=true`` adds exact counts (reads every key)
GET     /healthz                 ``{"ok": true}`` after a round trip to the store
======  =======================  ==========================================================

Answers come in input order and are the records of the CLI's ``--json`` (a match is
``{"id", "simhash", "distance"}``): at most ``Limits.max_matches`` matches per document, the
nearest first by (distance, id), and ``"match_count"`` when there are more. A text without features is not an error of the request:
its answer is ``{"id", "error"}`` in its place (``"added": false`` for add).

A request is checked whole before anything is written; a bad one gets a JSON error naming
the document (``{"error", "document": position, "id"}``): 400 (not JSON, not a list, a
document that is not an object, no string id, neither or both of text and simhash, a bad
simhash, a bad ``if_new``, a ``ttl`` that is not a duration, longer than the index's TTL or
on an index without one), 404 (an unknown document), 413 (a body, a text or a batch over the
limits). 503: the store failed; an add may then be partly written, and the same request
again is safe: writes are idempotent, and a document added by the failed attempt is then
answered ``added: false`` with itself among its matches. The service never stops on a bad
request.

Fingerprinting and store calls run on worker threads, so the event loop keeps answering;
on an in-process store (the embedded one) a batch of at most ``INLINE_DOCS`` documents runs on
the event loop's thread instead (a hand-off to a thread and back costs more than its lookup).
Concurrent checks are joined into one call of the index (batcher.py): a lookup of 10 documents
costs the embedded store about a third per document of 10 lookups of one, and one hand-off to
a thread serves the batch (a store error in it is a 503 for each of its requests). Adds are
not joined (an add compares a document with the earlier documents of its own request); on the
embedded store, which serves one call at a time, they queue in order for one thread instead of
as threads on its lock. ``POST /v1/check`` and ``/v1/add`` take uvicorn's fast lane
(http_lane.py: a callback per request, no ASGI task, one write) when the request is plain
(HTTP/1.1 keep-alive, a content-length), else they are served straight on ASGI (no routing
table, middleware or request object); the rest goes through Starlette; all three answer with
the same bytes and headers. Their JSON is read and written by orjson when it is installed
(the same values and bytes as the json module; ``load_json``, ``render_documents``). uvicorn
parses HTTP with httptools and runs uvloop when they are installed (the ``service`` extra
installs both): with its pure-Python parser (h11) the service answered about 400 requests/s
however little each one asked. An index with a TTL (``init
--ttl``) has its expired documents removed by a background thread (at start, then every TTL/2,
at most hourly; retention.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

try:  # JSON in C for the hot path; the json module when it is missing (the same bytes and values)
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

from ..errors import DedupError, EmptyDocument, InvalidInput, StoreError
from ..index.ids import document_id
from ..index.index import Document, Matches, document_meta
from ..index.retention import describe, parse_duration
from ..text.fingerprint import parse_hex, to_hex
from .batcher import Batcher
from .online import OnlineIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """What one request may hold."""

    max_docs: int = 1000
    max_text_bytes: int = 1 << 20
    max_body_bytes: int = 64 << 20
    max_matches: int = 1000  # matches listed per document; more are counted ("match_count")

    def __post_init__(self) -> None:
        for name in ("max_docs", "max_text_bytes", "max_body_bytes", "max_matches"):
            if getattr(self, name) < 1:
                raise InvalidInput(f"{name} must be >= 1, not {getattr(self, name)}")


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


class RequestError(Exception):
    """A request the service refuses: the HTTP status and the JSON error body."""

    def __init__(self, status: int, message: str, position: int | None = None, doc_id: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"error": message}
        if position is not None:
            self.body.update(document=position, id=doc_id)


@dataclass(slots=True)
class _Doc:
    """One document of a request: position, id, and either its text or its simhash."""

    position: int
    id: str
    text: str | None
    simhash: int | None
    error: str | None = None


def load_json(body: bytes) -> Any:
    """``json.loads(body)``: the same value, or the same error. orjson when installed and it
    takes the body and gives no float where a document has its id, text or simhash (it reads
    an integer beyond 64 bits as a float, json as an int); otherwise the json module (orjson
    refuses some of what json takes: NaN, lone surrogates, UTF-16 and UTF-32)."""
    if orjson is not None:
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError:
            return json.loads(body)
        if not _floats(items):
            return items
    return json.loads(body)


def _floats(items: Any) -> bool:
    """Whether ``items`` is a float or has one as a document's id, text or simhash."""
    if isinstance(items, list):
        return any(isinstance(item, dict) and float in (type(item.get("id")), type(item.get("text")),
                                                        type(item.get("simhash"))) for item in items)
    return isinstance(items, float)


def parse_documents(body: bytes, limits: Limits) -> list[_Doc]:
    """The documents of a request body, every one checked; RequestError names the first bad one."""
    try:
        items = load_json(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RequestError(400, f"the body is not JSON: {e}") from None
    if not isinstance(items, list):
        raise RequestError(400, f"the body is a JSON array of documents, not a JSON {_json_type(items)}")
    if len(items) > limits.max_docs:
        raise RequestError(413, f"a request holds at most {limits.max_docs} documents, not {len(items)}")
    docs = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise _bad(position, f"a document is a JSON object, not a JSON {_json_type(item)}")
        if "id" not in item:
            raise _bad(position, "no id (a string or a whole number)")
        try:
            doc_id = document_id(item["id"])  # the rule of ids.py, as for files the CLI reads
        except InvalidInput as e:
            raise _bad(position, str(e)) from None
        text, simhash = item.get("text"), item.get("simhash")
        if (text is None) == (simhash is None):
            raise _bad(position, "give its text or its simhash" if text is None
                       else "give its text or its simhash, not both", doc_id=doc_id)
        if text is not None:
            if not isinstance(text, str):
                raise _bad(position, f"the text is a JSON {_json_type(text)}, not a string", doc_id=doc_id)
            if len(text) * 4 > limits.max_text_bytes:  # else within the limit (at most 4 bytes a character)
                size = len(text.encode("utf-8", "surrogatepass"))
                if size > limits.max_text_bytes:
                    raise _bad(position, f"the text is {size:,} bytes, over the limit of {limits.max_text_bytes:,}",
                               413, doc_id=doc_id)
            docs.append(_Doc(position, doc_id, text, None))
        else:
            try:
                docs.append(_Doc(position, doc_id, None, parse_hex(simhash if isinstance(simhash, str) else "")))
            except InvalidInput:
                raise _bad(position, f"the simhash is 16 hex digits, not {simhash!r}", doc_id=doc_id) from None
    return docs


def _bad(position: int, message: str, status: int = 400, doc_id: Any = None) -> RequestError:
    """The error of document ``position`` (named by its id when it has a valid one)."""
    named = f" ({doc_id!r})" if doc_id is not None else ""
    return RequestError(status, f"document {position}{named}: {message}", position, doc_id)


THREADS = 32  # requests in the store or fingerprinting at once
CHECK_BATCHES = 4  # batches of checks at once on a thread-safe store
INLINE_DOCS = 32  # on an in-process store, batches of at most this many documents run on the event loop


class DedupService:
    """The request handlers, over one OnlineIndex, with this server's counters."""

    def __init__(self, online: OnlineIndex, limits: Limits = Limits()) -> None:
        self.online, self.limits = online, limits
        self.started = time.time()
        self.counters: Counter = Counter()
        self._lock = threading.Lock()
        # the handlers' threads (asyncio's executor: a hand-off costs the event loop about a
        # quarter of what anyio's thread pool did); threads start on first use
        self.threads = ThreadPoolExecutor(THREADS, thread_name_prefix="dedup-request")
        # concurrent checks joined into one call (batcher.py): a store used by one call at a
        # time gets one batch at a time, a thread-safe one a few; on the former, adds queue
        # for one thread in order instead of as threads on its lock (None: the thread pool)
        # on an in-process store (no network wait) a small batch runs on the event loop's own
        # thread: a hand-off to a thread and back costs more than its lookup (batcher.py)
        thread_safe, store = online.index.store.thread_safe, online.index.store
        self.inline = store.in_process
        inline = {"inline_max": INLINE_DOCS, "inline_ok": online.store_free} if self.inline else {}
        self.checks = Batcher(self.check, self.threads, limits.max_docs, parallel=CHECK_BATCHES if thread_safe else 1,
                              **inline)
        self.adds = None if thread_safe else Batcher(self.add, self.threads, limits.max_docs, join=False, **inline)

    def count(self, **increments: int) -> None:
        counters = self.counters
        with self._lock:
            for name, n in increments.items():
                counters[name] += n

    def fingerprint(self, docs: list[_Doc]) -> None:
        """Set each text document's simhash, or its error (a text without features): one
        batch call (the compiled core releases the GIL for it); on an in-process store, a
        batch small enough for the event loop one call per text (no arrays to make and read:
        a few µs less per document; the GIL does not matter on the loop's thread)."""
        texts = [d for d in docs if d.text is not None]
        if self.inline and len(texts) <= INLINE_DOCS:
            fingerprint = self.online.index.fingerprinter.fingerprint
            for doc in texts:
                try:
                    doc.simhash = fingerprint(doc.text)
                except EmptyDocument as e:
                    doc.error = f"{EmptyDocument.REASON}: {e}"
            return
        hashes, errors = self.online.index.fingerprinter.fingerprint_many([d.text for d in texts])
        for i, (doc, simhash) in enumerate(zip(texts, hashes.tolist())):
            if i in errors:
                doc.error = f"{EmptyDocument.REASON}: {errors[i]}"
            else:
                doc.simhash = simhash

    def check(self, docs: list[_Doc]) -> list[dict[str, Any]]:
        self.fingerprint(docs)
        good = [d for d in docs if d.error is None]
        found = iter(self.online.query_many([d.simhash for d in good], None, self.limits.max_matches))
        self.count(documents_checked=len(docs), check_calls=1)  # one per batch of joined requests
        return [{"id": d.id, "error": d.error} if d.error else _answer(d, next(found)) for d in docs]

    def request_ttl(self, value: str | None) -> int | None:
        """An add's ``ttl`` (a duration such as ``12h``) in seconds, checked against the
        index's TTL; None when not given. RequestError (400) when it is not a duration, is
        longer than the index's TTL, or the index has none (documents kept forever: a request
        shortens an index's TTL, it does not give one)."""
        if value is None:
            return None
        try:
            seconds = parse_duration(value)
        except InvalidInput as e:
            raise RequestError(400, f"ttl: {e}") from None
        index_ttl = self.online.index.ttl
        if not index_ttl:
            raise RequestError(400, f"ttl={value}: this index keeps documents forever (made without init --ttl); "
                                    "a request's ttl shortens an index's TTL, it cannot give one")
        if seconds > index_ttl:
            raise RequestError(400, f"ttl={value} is longer than the index's TTL ({describe(index_ttl)}): "
                                    "no document outlives it")
        return seconds

    def add(self, docs: list[_Doc], if_new: bool, ttl: int | None = None) -> list[dict[str, Any]]:
        """``ttl``: these documents' own time to live in seconds (``request_ttl``), else the index's."""
        self.fingerprint(docs)
        good = [d for d in docs if d.error is None]
        now = int(time.time())
        decisions = iter(self.online.add([Document(d.id, d.simhash, _meta(d, now, ttl)) for d in good], if_new=if_new,
                                         max_matches=self.limits.max_matches))
        out = [{"id": d.id, "added": False, "error": d.error} if d.error else next(decisions).to_dict() for d in docs]
        self.count(documents_added=sum(1 for a in out if a["added"]), documents_offered=len(docs))
        return out

    def document(self, doc_id: str) -> dict[str, Any]:
        (doc,) = self.online.get([doc_id])
        if doc is None:
            raise RequestError(404, f"no document {doc_id!r}")
        return {"id": doc.id, "simhash": to_hex(doc.simhash), "meta": doc.meta}

    def delete(self, doc_id: str) -> dict[str, Any]:
        if not self.online.delete([doc_id]):
            raise RequestError(404, f"no document {doc_id!r}")
        self.count(documents_deleted=1)
        return {"deleted": doc_id}

    def stats(self, full: bool) -> dict[str, Any]:
        index = self.online.index
        out: dict[str, Any] = {"store": index.store.url, "scheme": index.scheme.name, "k": index.k, "ttl_s": index.ttl,
                               "featurizer": index.fingerprinter.spec, "uptime_s": round(time.time() - self.started, 1),
                               "server": dict(self.counters)}
        fleet = self.online.fleet
        out["fleet_locks"] = None if fleet is None else {"lease_s": fleet.lease_s, "owner": fleet.owner, **fleet.counters}
        if full:
            out["index"] = self.online.stats()
        return out

    def expire_until(self, stop: threading.Event) -> None:
        """With a TTL: remove expired documents now, then every TTL/2 (1 s to 1 h), until ``stop``."""
        interval = min(max(self.online.index.ttl / 2, 1), 3600)
        while True:
            try:
                self.count(documents_expired=self.online.remove_expired())
            except DedupError as e:
                logger.warning("removing expired documents failed (tried again in %.0f s): %s", interval, e)
            if stop.wait(interval):
                return

    def health(self) -> dict[str, Any]:
        self.online.config()  # a round trip to the store
        return {"ok": True}


def _answer(doc: _Doc, matches: Matches) -> dict[str, Any]:
    """A checked document's answer: as ``check --json``, ``match_count`` when not all are listed."""
    answer = {"id": doc.id, "simhash": to_hex(doc.simhash), "matches": [m.to_dict() for m in matches]}
    if matches.total > len(matches):
        answer["match_count"] = matches.total
    return answer


def _meta(doc: _Doc, now: int, ttl: int | None) -> dict[str, Any]:
    return document_meta(now, length=None if doc.text is None else len(doc.text), ttl=ttl)


_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode


def render(body: Any) -> bytes:
    """A JSON answer's bytes: compact UTF-8, as Starlette's JSONResponse renders it (one
    encoder made once: ``json.dumps`` with options makes one per call)."""
    return _ENCODE(body).encode("utf-8")


def render_documents(body: Any) -> bytes:
    """``render`` of an answer of ``/v1/check`` or ``/v1/add`` (no floats: orjson writes them
    differently), by orjson when installed: the same bytes (strings, ints, booleans and null
    are written alike); what orjson refuses (an int beyond 64 bits, a lone surrogate) goes to
    ``render``."""
    if orjson is not None:
        try:
            return orjson.dumps(body)
        except TypeError:
            pass
    return render(body)


class ClientGone(Exception):
    """The client closed the connection before its request body arrived whole."""


def create_app(service: DedupService):
    """The ASGI application of ``service``: ``POST /v1/check`` and ``POST /v1/add`` straight
    on ASGI (the hot path: no routing table, middleware or request object; about a tenth of a
    one-document check's CPU), everything else on Starlette. Both answer through ``answer``,
    the same bytes and headers as Starlette's JSONResponse."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    limits = service.limits

    def run_in_threadpool(fn, *args):
        return asyncio.get_running_loop().run_in_executor(service.threads, fn, *args)

    async def answer(scope, handler, *args) -> tuple[int, Any]:
        """``handler(*args)`` as (HTTP status, JSON body): every error mapped to its status
        (ClientGone raised: there is nobody to answer)."""
        service.counters["requests"] += 1  # counted on the event loop's thread only: no lock
        try:
            return 200, await handler(*args)
        except ClientGone:
            raise
        except Exception as e:
            return failure(service, e, scope["method"], scope["path"])

    def reply(status: int, body: Any) -> Response:
        return Response(render(body), status_code=status, media_type="application/json")

    async def read_body(declared: bytes | str | None, receive) -> bytes:
        if declared and declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise RequestError(413, f"the body is {int(declared):,} bytes, over the limit of {limits.max_body_bytes:,}")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limits.max_body_bytes:
                raise RequestError(413, f"the body is over the limit of {limits.max_body_bytes:,} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def check(declared, receive, query: bytes):
        return await service.checks(parse_documents(await read_body(declared, receive), limits))

    async def add(declared, receive, query: bytes):
        params = query_values(query)
        if_new, ttl = flag(params.get("if_new"), "if_new", False), service.request_ttl(params.get("ttl"))
        docs = parse_documents(await read_body(declared, receive), limits)
        if service.adds is None:
            return await run_in_threadpool(service.add, docs, if_new, ttl)
        return await service.adds(docs, if_new, ttl)

    documents = {"/v1/check": check, "/v1/add": add}

    async def get_doc(doc_id: str):
        return await run_in_threadpool(service.document, doc_id)

    async def delete_doc(doc_id: str):
        return await run_in_threadpool(service.delete, doc_id)

    async def stats(full: str | None):
        return await run_in_threadpool(service.stats, flag(full, "full", False))

    async def health():
        return await run_in_threadpool(service.health)

    async def not_found(request: Request, exc) -> Response:
        status = getattr(exc, "status_code", 404)
        return reply(status, {"error": f"{request.method} {request.url.path}: {getattr(exc, 'detail', 'not found')}"})

    def route(path: str, method: str, handler, *args):
        """A Starlette route: ``handler`` with ``args(request)``."""
        async def endpoint(request: Request) -> Response:
            try:
                return reply(*await answer(request.scope, handler, *(arg(request) for arg in args)))
            except ClientGone:
                return Response(status_code=400)  # nobody reads it
        return Route(path, endpoint, methods=[method])

    def length(r: Request):
        return r.headers.get("content-length")

    def receive(r: Request):
        return r.receive

    def query(r: Request):
        return r.scope["query_string"]

    routes = [route("/v1/check", "POST", check, length, receive, query),  # with a root path
              route("/v1/add", "POST", add, length, receive, query),
              route("/v1/docs/{doc_id:path}", "GET", get_doc, lambda r: r.path_params["doc_id"]),
              route("/v1/docs/{doc_id:path}", "DELETE", delete_doc, lambda r: r.path_params["doc_id"]),
              route("/v1/stats", "GET", stats, lambda r: r.query_params.get("full")),
              route("/healthz", "GET", health)]
    starlette = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})

    async def app(scope, receive, send) -> None:
        handler = documents.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if handler is None or scope.get("root_path"):
            await starlette(scope, receive, send)
            return
        declared = next((value for name, value in scope["headers"] if name == b"content-length"), None)
        try:
            status, body = await answer(scope, handler, declared, receive, scope["query_string"])
        except ClientGone:  # nobody to answer
            return
        content = render_documents(body)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-length", b"%d" % len(content)), (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": content})

    return app


def failure(service: DedupService, e: Exception, method: str, path: str) -> tuple[int, Any]:
    """A request's error as (HTTP status, JSON body), counted; a bug is logged."""
    if isinstance(e, RequestError):
        service.count(refused=1)
        return e.status, e.body
    if isinstance(e, StoreError):
        service.count(store_errors=1)
        logger.warning("store error: %s", e)
        return 503, {"error": f"the store failed: {e}; the same request again is safe"}
    if isinstance(e, DedupError):
        service.count(refused=1)
        return 400, {"error": str(e)}
    # a bug: logged with its traceback; the service keeps answering
    service.count(internal_errors=1)
    logger.error("internal error on %s %s", method, path, exc_info=e)
    return 500, {"error": "internal error (logged by the service)"}


def flag(value: str | None, name: str, default: bool) -> bool:
    if value is None:
        return default
    if value.lower() not in ("true", "false", "1", "0"):
        raise RequestError(400, f"{name} is true or false, not {value!r}")
    return value.lower() in ("true", "1")


def lane_handlers(service: DedupService) -> dict:
    """``POST /v1/check`` and ``/v1/add`` for the HTTP fast lane (http_lane.py): the same
    answers as the ASGI application's, by callbacks instead of a task per request (and,
    from a batcher, instead of a future)."""
    limits = service.limits

    def start_check(body: bytes, query: bytes, then) -> None:
        service.checks.submit_then(then, parse_documents(body, limits))

    def start_add(body: bytes, query: bytes, then) -> None:
        params = query_values(query)
        if_new, ttl = flag(params.get("if_new"), "if_new", False), service.request_ttl(params.get("ttl"))
        docs = parse_documents(body, limits)
        if service.adds is not None:
            service.adds.submit_then(then, docs, if_new, ttl)
            return
        future = asyncio.get_running_loop().run_in_executor(service.threads, service.add, docs, if_new, ttl)

        def settled(future: asyncio.Future) -> None:
            if future.cancelled():  # the service stops: nobody to answer
                return
            error = future.exception()
            then(None if error is not None else future.result(), error)
        future.add_done_callback(settled)

    counters = service.counters

    def handler(start, path: str):
        def handle(body: bytes, query: bytes, respond) -> None:
            counters["requests"] += 1  # counted on the event loop's thread only: no lock

            def then(answer: Any, error: BaseException | None) -> None:
                outcome = (200, answer) if error is None else failure(service, error, "POST", path)
                try:
                    rendered = _rendered(outcome)
                except Exception as e:  # a bug (the ASGI way: uvicorn's 500); the service keeps answering
                    rendered = _rendered(failure(service, e, "POST", path))
                respond(*rendered)

            try:
                start(body, query, then)
            except Exception as e:
                respond(*_rendered(failure(service, e, "POST", path)))
        return handle

    return {b"/v1/check": handler(start_check, "/v1/check"), b"/v1/add": handler(start_add, "/v1/add")}


def _rendered(outcome: tuple[int, Any]) -> tuple[int, bytes]:
    return outcome[0], render_documents(outcome[1])


def query_values(query: bytes) -> dict[str, str]:
    """A URL's query string as a dict, each name's last value, as Starlette's ``query_params``."""
    if not query:
        return {}
    return dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True))


def serve(online: OnlineIndex, *, host: str = "127.0.0.1", port: int = 8080, limits: Limits = Limits(),
          log_level: str = "warning", ready=None) -> str | None:
    """Serve until SIGINT or SIGTERM (uvicorn stops gracefully: requests in flight finish);
    returns the name of the signal that stopped it. ``port`` 0 picks a free port;
    ``ready(url)`` is called once the socket listens."""
    try:
        import uvicorn
    except ImportError:
        raise DedupError("the service needs uvicorn and starlette: pip install '.[service]' in the dedup-hbase folder") from None

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(2048)
    service = DedupService(online, limits)
    app = create_app(service)
    stop = threading.Event()
    if online.index.ttl:
        threading.Thread(target=service.expire_until, args=(stop,), name="expire", daemon=True).start()
    try:  # the document endpoints' fast lane on uvicorn's httptools protocol (http_lane.py)
        from .http_lane import fast_lane

        http: Any = fast_lane(lane_handlers(service), limits.max_body_bytes)
    except ImportError:  # no httptools, or a uvicorn without what the lane uses: everything through ASGI
        http = "auto"
    config = uvicorn.Config(app, log_level=log_level, access_log=False, timeout_graceful_shutdown=10, http=http)
    if ready is not None:
        ready(f"http://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}")
    stopped: list[str] = []

    def note(signum, frame) -> None:  # uvicorn stops gracefully on these, then hands them on here
        stopped.append(signal.Signals(signum).name)

    previous = {number: signal.signal(number, note) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        stop.set()
        service.threads.shutdown(wait=False)
        for number, handler in previous.items():
            signal.signal(number, handler)
    return stopped[0] if stopped else None
