"""The server's start and stop: the listening socket, uvicorn running the HTTP application
(app.py: the ASGI application, and the fast lane of http_lane.py for a plain ``POST`` to the
document endpoints, both answered by one ``Dispatch``), the expiry thread of an index with a
TTL, the thread that counts the index's documents, and the signals that stop it or make it
read its tokens again.

Production settings (``Production``): a tokens file (access.py), read at start (a bad one
stops the start) and again on SIGHUP (a bad one then keeps the tokens in force, and a line
on stderr says why); without one the server refuses to listen on anything but a loopback
address unless ``insecure`` says so on purpose, before it listens. TLS: uvicorn's own, from a
certificate and key file, loaded once before listening so that a bad file stops the start with
its reason; the fast lane runs on uvicorn's TLS transport unchanged. An access log (metrics.py),
reopened on SIGHUP.

uvicorn parses HTTP with httptools and runs uvloop when they are installed (the ``service``
extra installs both), else with its pure-Python parser (h11) and asyncio's loop: the same
answers. An index with a TTL (``init --ttl``) has its expired documents removed by a
background thread (at start, then every TTL/2, at most hourly; retention.py). The server
serves from this one process: requests on the event loop and the handlers' threads, no child
process.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DedupError, InvalidInput
from .access import Access
from .app import Dispatch, asgi
from .documents import Limits
from .handlers import DedupService
from .metrics import AccessLog
from .online import OnlineIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Production:
    """What a server open to a network needs: ``tokens`` (a tokens file), ``insecure`` (serve
    a non-loopback address without tokens, on purpose), ``certfile``/``keyfile`` (TLS; the key
    may be in the certificate's file), ``access_log`` (a file, or ``-``: stderr),
    ``count_every`` (seconds between counts of the index's documents, the first at start;
    None: never, and ``/metrics`` shows no document count)."""

    tokens: str | None = None
    insecure: bool = False
    certfile: str | None = None
    keyfile: str | None = None
    access_log: str | None = None
    count_every: float | None = 3600.0


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in found)


def check_production(host: str, production: Production) -> Access | None:
    """The tokens (None without a file), after the checks a start makes before it listens:
    a non-loopback ``host`` without tokens or ``insecure``, a bad tokens file, a certificate
    and key that do not load: InvalidInput."""
    access = None if production.tokens is None else Access(production.tokens)
    if access is None and not production.insecure and not is_loopback(host):
        raise InvalidInput(f"refusing to serve {host} without tokens=: anyone who can reach it could read, add and "
                           "delete documents; give tokens=FILE, or insecure=True to serve it open on purpose",
                           arguments=("tokens", "insecure"))
    if production.keyfile and not production.certfile:
        raise InvalidInput("keyfile= needs certfile=", arguments=("keyfile", "certfile"))
    if production.certfile:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(production.certfile, production.keyfile)
        except (OSError, ssl.SSLError) as e:
            raise InvalidInput(f"cannot load the certificate {production.certfile}"
                               f"{f' and key {production.keyfile}' if production.keyfile else ''}: {e}") from None
    return access


def reread(access: Access | None, log: AccessLog | None) -> None:
    """On SIGHUP: the tokens file read again (a bad one keeps the tokens in force), the access
    log reopened; one line on stderr (the log's warning) says what happened."""
    if log is not None:
        log.reopen()
    if access is None:
        logger.warning("SIGHUP: access log reopened" if log is not None else "SIGHUP: nothing to read again")
        return
    try:
        count = access.reload()
    except DedupError as e:
        logger.warning("SIGHUP: kept the %d tokens in force: %s", len(access.tokens), e)
        return
    logger.warning("SIGHUP: %d tokens read from %s", count, access.path)


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


def on_loop(fn: Callable, *args: Any) -> None:
    """``fn(*args)`` at the event loop's next turn (from a signal handler, which runs between
    any two steps of the loop's thread), or at once when no loop runs yet."""
    try:
        asyncio.get_running_loop().call_soon_threadsafe(fn, *args)
    except RuntimeError:
        fn(*args)


def serve(online: OnlineIndex, *, host: str = "127.0.0.1", port: int = 8080, limits: Limits = Limits(),
          log_level: str = "warning", ready: Callable[[str], None] | None = None,
          production: Production = Production()) -> str | None:
    """Serve until SIGINT or SIGTERM (uvicorn stops gracefully: requests in flight finish);
    returns the name of the signal that stopped it. ``port`` 0 picks a free port;
    ``ready(url)`` is called once the socket listens. ``production``: tokens, TLS, the access
    log (see the module docstring); InvalidInput before listening when they are refused."""
    try:
        import uvicorn
    except ImportError:
        raise DedupError("the service needs uvicorn: pip install '.[service]' in the dedup-hbase folder") from None

    access = check_production(host, production)
    sock = listen(host, port)
    service = DedupService(online, limits)
    log = None if production.access_log is None else AccessLog(production.access_log)
    dispatch = Dispatch(service, access, log)
    try:  # the document endpoints' fast lane on uvicorn's httptools protocol (http_lane.py)
        from .http_lane import fast_lane

        posted = {path for path, route in dispatch.routes.items() if "POST" in route.methods}
        http: Any = fast_lane(dispatch, posted, limits.max_body_bytes)
    except ImportError:  # no httptools, or a uvicorn without what the lane uses: every request the ASGI way
        http = "auto"
    config = uvicorn.Config(asgi(dispatch, limits.max_body_bytes), http=http, log_level=log_level, access_log=False,
                            lifespan="off", ws="none", timeout_graceful_shutdown=10,
                            ssl_certfile=production.certfile, ssl_keyfile=production.keyfile)
    stop = threading.Event()
    if online.index.ttl:
        threading.Thread(target=service.expire_until, args=(stop,), name="expire", daemon=True).start()
    if production.count_every is not None:
        threading.Thread(target=service.documents.count_until, args=(stop, production.count_every), name="count",
                         daemon=True).start()
    if ready is not None:
        scheme = "https" if production.certfile else "http"
        ready(f"{scheme}://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}")
    stopped: list[str] = []

    def note(signum, frame) -> None:  # uvicorn stops gracefully on these, then hands them on here
        stopped.append(signal.Signals(signum).name)

    handlers: dict[int, Any] = {signal.SIGINT: note, signal.SIGTERM: note}
    if access is not None or log is not None:  # else SIGHUP keeps its default (it stops the process)
        handlers[signal.SIGHUP] = lambda signum, frame: on_loop(reread, access, log)
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        stop.set()
        service.threads.shutdown(wait=False)
        for number, handler in previous.items():
            signal.signal(number, handler)
        if log is not None:
            log.close()
    return stopped[0] if stopped else None
