"""The document endpoints' HTTP fast lane: uvicorn's httptools protocol, with a plain POST
to a few paths answered by a callback instead of an ASGI task.

uvicorn serves every request as an asyncio task running the ASGI application, with a
request-response object, an event, message dicts in both directions, and two writes to the
socket (the status line and headers, then the body: two send calls, two TCP segments). For a
one-document ``POST /v1/check`` that was about a quarter of the service's CPU. ``fast_lane``
returns a subclass of uvicorn's ``HttpToolsProtocol`` (passed as ``uvicorn.Config(http=...)``)
that takes a request off that path when it is the plainest case:

- ``POST`` to one of ``handlers``' paths exactly (no root path, no percent-escapes), HTTP/1.1
  with keep-alive, a ``content-length`` of at most ``max_body`` bytes, no ``expect:
  100-continue``, no upgrade, no request of the connection still being answered (pipelining),
  no access log, no concurrency limit;

and calls ``handler(body, query, respond)`` once the body is whole. ``respond(status,
content)`` writes the answer in one write: uvicorn's status line and default headers
(``date``, ``server``), then ``content-length`` and ``content-type: application/json``, the
bytes and headers uvicorn writes for the ASGI application's answer. Every other request
(and every other method or path) goes the ASGI way unchanged, so the lane changes nothing
but the cost: the service answers the same bytes either way (tests/test_service.py).
Keep-alive, the keep-alive timeout, pipelined requests after a lane request, a client that
goes away, and a graceful shutdown (a request in flight is answered, then the connection
closes) are uvicorn's own code: the lane's request stands where uvicorn's request-response
object would (``self.cycle``) with the attributes uvicorn reads of it.
"""

from __future__ import annotations

from collections.abc import Callable

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

Respond = Callable[[int, bytes], None]
Handler = Callable[[bytes, bytes, Respond], None]


class _Event:
    """What uvicorn calls on a request's event (``set``): nothing waits on a lane request."""

    __slots__ = ()

    def set(self) -> None:
        pass


_EVENT = _Event()


class _LaneRequest:
    """A request on the lane, where uvicorn keeps its request-response object."""

    __slots__ = ("handler", "query", "chunks", "size", "response_complete", "disconnected", "keep_alive",
                 "message_event")

    def __init__(self, handler: Handler, query: bytes) -> None:
        self.handler, self.query = handler, query
        self.chunks: list[bytes] = []
        self.size = 0
        self.response_complete = False
        self.disconnected = False  # set by uvicorn when the connection is lost
        self.keep_alive = True  # cleared by uvicorn's graceful shutdown: close after answering
        self.message_event = _EVENT


# what the lane uses of uvicorn's protocol (pyproject.toml pins the uvicorn minor it is tested with)
_USED = ("on_headers_complete", "on_body", "on_message_complete", "on_response_complete")


def fast_lane(handlers: dict[bytes, Handler], max_body: int) -> type[HttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)``: ``POST`` to a path of ``handlers``
    answered by the handler (see the module docstring for which requests). Raises ImportError
    when uvicorn's protocol lacks a method the lane builds on (another uvicorn than the one
    pinned): the caller then serves everything the ASGI way."""
    missing = [name for name in _USED if not callable(getattr(HttpToolsProtocol, name, None))]
    if missing:
        raise ImportError(f"uvicorn's HttpToolsProtocol has no {', '.join(missing)}")

    class FastLane(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            lane = self._lane()
            if lane is None:
                super().on_headers_complete()
            else:
                self.scope["method"] = "POST"
                self.cycle = lane  # type: ignore[assignment]

        def _lane(self) -> _LaneRequest | None:
            parser = self.parser
            if (parser.get_method() != b"POST" or self.root_path or self.expect_100_continue or self.access_log
                    or self.limit_concurrency is not None or parser.get_http_version() != "1.1"
                    or not parser.should_keep_alive() or parser.should_upgrade()
                    or (self.cycle is not None and not self.cycle.response_complete)):
                return None
            path, _, query = self.url.partition(b"?")
            handler = handlers.get(path)
            if handler is None or b"#" in query:
                return None
            length = None
            for name, value in self.headers:
                if name == b"content-length":
                    if length is not None:
                        return None
                    length = value
                elif name == b"transfer-encoding":
                    return None
            if length is None or not length.isdigit() or int(length) > max_body:
                return None
            return _LaneRequest(handler, query)

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
            lane.handler(body, lane.query, lambda status, content: self._respond(lane, status, content))

        def _respond(self, lane: _LaneRequest, status: int, content: bytes) -> None:
            if lane.disconnected or lane.response_complete:
                return
            lane.response_complete = True
            head = [STATUS_LINE[status]]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head.append(b"content-length: %d\r\ncontent-type: application/json\r\n" % len(content))
            if not lane.keep_alive:
                head.append(b"connection: close\r\n")
            head += [b"\r\n", content]
            self.transport.write(b"".join(head))
            if not lane.keep_alive:
                self.transport.close()
            self.on_response_complete()

    return FastLane
