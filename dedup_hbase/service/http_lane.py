"""The document endpoints' HTTP fast lane: uvicorn's httptools protocol, with a plain POST
to a few paths handed to ``Dispatch`` (app.py) by a callback instead of an ASGI task.

uvicorn serves every request as an asyncio task running the ASGI application, with a
request-response object, an event, message dicts in both directions, and two writes to the
socket (the status line and headers, then the body). ``fast_lane`` returns a subclass of
uvicorn's ``HttpToolsProtocol`` (passed as ``uvicorn.Config(http=...)``) that takes a request
off that path when it is the plainest case:

- ``POST`` to one of ``paths`` exactly (no root path, no percent-escapes), HTTP/1.1 with
  keep-alive, a ``content-length`` of at most ``max_body`` bytes, no ``expect`` header, no
  upgrade, no request of the connection still being answered (pipelining), no access log, no
  concurrency limit;

and, once the body is whole, hands ``dispatch`` an ``Exchange`` whose ``reply(status,
content, content_type, headers)`` writes the answer in one write: uvicorn's status line and
default headers (``date``, ``server``), then ``content-length``, ``content-type`` and the
headers given (a 401's ``www-authenticate``), the bytes and headers uvicorn writes for the ASGI
application's answer. Every other request (and every other
method or path) goes the ASGI way unchanged; both reach the same ``Dispatch``, so the lane
changes nothing but the cost (tests/test_service.py compares the bytes). Keep-alive, pipelined
requests after a lane request, a client that goes away, TLS (uvicorn's transport) and a graceful
shutdown (a request in flight is answered, then the connection closes) are uvicorn's own code:
the lane's request stands where uvicorn's request-response object would (``self.cycle``) with
the attributes uvicorn reads of it.

This subclasses a class uvicorn does not publish as an interface (it has no public way to
answer a request without an ASGI task): it is the one place the service reaches into uvicorn,
checked against the methods it uses (``fast_lane`` raises ImportError, and the server then
serves everything the ASGI way, when they are missing), with uvicorn pinned to the minor it is
tested with (pyproject.toml).

Two things differ from uvicorn's protocol on every request, the ASGI way's included, for less
Python per request: the request's ASGI scope is built once its headers are whole (when it does
not take the lane), not when it begins, its headers checked there instead of one by one; and
the keep-alive timeout is kept by one timer per connection, armed when the connection goes
idle and moved on when it fires early, instead of a timer armed after every answer and
cancelled on every read (the same timeout: an idle connection is closed after it).
"""

from __future__ import annotations

from time import perf_counter

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from .app import Dispatch, Exchange, Headers


class _Event:
    """What uvicorn calls on a request's event (``set``): nothing waits on a lane request."""

    __slots__ = ()

    def set(self) -> None:
        pass


_EVENT = _Event()


class _LaneRequest:
    """A request on the lane, where uvicorn keeps its request-response object."""

    __slots__ = ("path", "query", "headers", "chunks", "size", "response_complete", "disconnected", "keep_alive",
                 "message_event", "started")

    def __init__(self, path: str, query: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.path, self.query, self.headers = path, query, headers
        self.started = perf_counter()  # its headers whole
        self.chunks: list[bytes] = []
        self.size = 0
        self.response_complete = False
        self.disconnected = False  # set by uvicorn when the connection is lost
        self.keep_alive = True  # cleared by uvicorn's graceful shutdown: close after answering
        self.message_event = _EVENT


# what the lane uses of uvicorn's protocol (pyproject.toml pins the uvicorn minor it is tested with)
_USED = ("on_message_begin", "on_header", "on_headers_complete", "on_body", "on_message_complete",
         "on_response_complete", "_unset_keepalive_if_required", "timeout_keep_alive_handler", "_start_asgi_task",
         "connection_lost")


class FastLane(HttpToolsProtocol):
    """uvicorn's httptools protocol with the lane (see the module docstring); ``fast_lane``
    makes the subclass that knows its ``dispatch``, ``lane_paths`` and ``max_body``."""

    dispatch: Dispatch
    lane_paths: dict[bytes, str]  # the path's bytes -> the path
    max_body: int
    head: list  # the server's default headers (a list) and their bytes, for this class's protocols

    # the scope and the header checks wait for the end of the headers, where the request
    # takes the lane (no scope) or gets uvicorn's scope and goes on the ASGI way (_to_asgi)
    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = []
        self.scope = None  # type: ignore[assignment]

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        lane = self._lane()
        if lane is None:
            self._to_asgi()
            super().on_headers_complete()
        else:
            self.cycle = lane  # type: ignore[assignment]

    def _to_asgi(self) -> None:
        """The state uvicorn's own ``on_message_begin`` and ``on_header`` would have made."""
        url, headers = self.url, self.headers
        super().on_message_begin()
        self.url, self.headers = url, headers
        self.scope["headers"] = headers
        self.expect_100_continue = any(name == b"expect" and value.lower() == b"100-continue"
                                       for name, value in headers)

    def _lane(self) -> _LaneRequest | None:
        """The lane's request, or None for the ASGI way. HTTP/1.1 without asking the parser
        for its version string (the costliest check) where it cannot be another: httptools'
        parser (llhttp) takes versions 0.9, 1.0, 1.1 and 2.0 only, and keeps an HTTP/1.0
        (or 0.9, 2.0) connection alive only when a ``connection`` (or ``proxy-connection``)
        header asks for it."""
        if self.cycle is not None and not self.cycle.response_complete:  # pipelined
            return None
        parser = self.parser
        if (parser.get_method() != b"POST" or self.root_path or self.access_log
                or self.limit_concurrency is not None):
            return None
        path, _, query = self.url.partition(b"?")
        lane_path = self.lane_paths.get(path)
        if lane_path is None or b"#" in query or not parser.should_keep_alive() or parser.should_upgrade():
            return None
        length = None
        for name, value in self.headers:
            if name == b"content-length":
                if length is not None:
                    return None
                length = value
            elif name == b"transfer-encoding" or name == b"expect":
                return None
            elif (name == b"connection" or name == b"proxy-connection") and parser.get_http_version() != "1.1":
                return None  # an HTTP/1.0 keep-alive (see _lane's docstring)
        if length is None or not length.isdigit() or int(length) > self.max_body:
            return None
        return _LaneRequest(lane_path, query, self.headers)

    def on_body(self, body: bytes) -> None:
        lane = self.cycle
        if type(lane) is not _LaneRequest:
            super().on_body(body)
            return
        lane.chunks.append(body)
        lane.size += len(body)

    def on_message_complete(self) -> None:
        lane = self.cycle
        if type(lane) is not _LaneRequest:
            super().on_message_complete()
            return
        body = lane.chunks[0] if len(lane.chunks) == 1 else b"".join(lane.chunks)
        lane.chunks = []
        self.dispatch(Exchange("POST", lane.path, lane.query, lane.headers, body,
                               lambda status, content, content_type, headers:
                               self._respond(lane, status, content, content_type, headers),
                               lane.started, self.client))

    def _respond(self, lane: _LaneRequest, status: int, content: bytes, content_type: bytes, headers: Headers) -> None:
        if lane.disconnected or lane.response_complete:
            return
        lane.response_complete = True
        defaults, head = self.server_state.default_headers, self.head  # a new list when the date changes
        if defaults is not head[0]:
            head[:] = [defaults, b"".join(b"%s: %s\r\n" % pair for pair in defaults)]
        more = b"".join(b"%s: %s\r\n" % pair for pair in headers) if headers else b""
        if lane.keep_alive:
            self.transport.write(b"".join((STATUS_LINE[status], head[1], b"content-length: %d\r\ncontent-type: %s\r\n"
                                           % (len(content), content_type), more, b"\r\n", content)))
        else:
            self.transport.write(b"".join((STATUS_LINE[status], head[1], b"content-length: %d\r\ncontent-type: %s\r\n"
                                           % (len(content), content_type), more, b"connection: close\r\n\r\n",
                                           content)))
            self.transport.close()
        self.on_response_complete()

    # uvicorn arms a keep-alive timer (``call_later``) after every answer and cancels it on
    # every read; here a connection keeps one timer, armed when it goes idle and moved on
    # when it fires before the connection has been idle for the timeout: the same timeout
    idle_since: float | None = None

    def _unset_keepalive_if_required(self) -> None:  # on every read (and answer, and close)
        self.idle_since = None

    def on_response_complete(self) -> None:  # uvicorn's, but for the timer
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.idle_since = None
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self.idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)

    def timeout_keep_alive_handler(self) -> None:
        self.timeout_keep_alive_task = None
        if self.idle_since is None:  # busy: its answer arms the timer again
            return
        left = self.idle_since + self.timeout_keep_alive - self.loop.time()
        if left > 0:
            self.timeout_keep_alive_task = self.loop.call_later(left, self.timeout_keep_alive_handler)
        else:
            super().timeout_keep_alive_handler()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None


def fast_lane(dispatch: Dispatch, paths: set[str], max_body: int) -> type[HttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)``: ``POST`` to one of ``paths`` handed
    to ``dispatch`` (see the module docstring for which requests). Raises ImportError when
    uvicorn's protocol lacks a method the lane builds on (another uvicorn than the one pinned):
    the caller then serves everything the ASGI way."""
    missing = [name for name in _USED if not callable(getattr(HttpToolsProtocol, name, None))]
    if missing:
        raise ImportError(f"uvicorn's HttpToolsProtocol has no {', '.join(missing)}")
    return type("FastLane", (FastLane,), {"dispatch": dispatch, "lane_paths": {p.encode(): p for p in paths},
                                          "max_body": max_body, "head": [None, b""]})
