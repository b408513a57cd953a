"""The server's start and stop: the listening socket, uvicorn running the HTTP application
(app.py: the ASGI application, and the fast lane of http_lane.py for a plain ``POST`` to the
document endpoints, both answered by one ``Dispatch``), the expiry thread of an index with a
TTL, and the signals that stop it.

uvicorn parses HTTP with httptools and runs uvloop when they are installed (the ``service``
extra installs both), else with its pure-Python parser (h11) and asyncio's loop: the same
answers. An index with a TTL (``init --ttl``) has its expired documents removed by a
background thread (at start, then every TTL/2, at most hourly; retention.py). The server
serves from this one process: requests on the event loop and the handlers' threads, no child
process.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..errors import DedupError
from .app import Dispatch, asgi
from .documents import Limits
from .handlers import DedupService
from .online import OnlineIndex


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port`` (0: a free port); OSError names the address."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(2048)
    return sock


def serve(online: OnlineIndex, *, host: str = "127.0.0.1", port: int = 8080, limits: Limits = Limits(),
          log_level: str = "warning", ready: Callable[[str], None] | None = None) -> str | None:
    """Serve until SIGINT or SIGTERM (uvicorn stops gracefully: requests in flight finish);
    returns the name of the signal that stopped it. ``port`` 0 picks a free port;
    ``ready(url)`` is called once the socket listens."""
    try:
        import uvicorn
    except ImportError:
        raise DedupError("the service needs uvicorn: pip install '.[service]' in the dedup-hbase folder") from None

    sock = listen(host, port)
    service = DedupService(online, limits)
    dispatch = Dispatch(service)
    try:  # the document endpoints' fast lane on uvicorn's httptools protocol (http_lane.py)
        from .http_lane import fast_lane

        posted = {path for path, route in dispatch.routes.items() if "POST" in route.methods}
        http: Any = fast_lane(dispatch, posted, limits.max_body_bytes)
    except ImportError:  # no httptools, or a uvicorn without what the lane uses: every request the ASGI way
        http = "auto"
    config = uvicorn.Config(asgi(dispatch, limits.max_body_bytes), http=http, log_level=log_level, access_log=False,
                            lifespan="off", ws="none", timeout_graceful_shutdown=10)
    stop = threading.Event()
    if online.index.ttl:
        threading.Thread(target=service.expire_until, args=(stop,), name="expire", daemon=True).start()
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
