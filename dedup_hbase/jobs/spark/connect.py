"""A job's session through Spark Connect (``--spark-remote sc://HOST:PORT``): a client of a
server that runs the job on its own master, with no JVM in this process (docs/spark.md#spark-connect).
The server's own settings are ``session.connect_server_conf``'s (scripts/connect-local)."""

from __future__ import annotations

import socket
import warnings
from contextlib import suppress
from urllib.parse import urlsplit

from ...errors import DedupError

DEFAULT_PORT = 15002  # Spark Connect's, where sc://HOST names none
CONNECT_TIMEOUT = 10  # s


def connect_session(remote: str, conf: dict[str, str]):
    """A session of the Spark Connect server at ``remote`` (sc://HOST:PORT), with ``conf`` (the
    server refuses a static setting). Needs PySpark's Connect client (grpcio and friends); a
    server that does not answer is one line."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as e:
        raise DedupError(f"--spark-remote needs PySpark's Spark Connect client ({e}): pip install "
                         "'pyspark[connect]' (or the dedup-hbase 'spark' extra)") from None
    _reachable(remote)
    settings = {key: value for key, value in conf.items() if key != "spark.app.name"}  # no app name of its own
    try:
        with warnings.catch_warnings():  # the client's retries warn before they raise
            warnings.simplefilter("ignore")
            spark = SparkSession.builder.remote(remote).getOrCreate()  # no call yet: no settings given
            # the first calls tried for about a second, not the client's ten minutes: something that
            # accepts connections and is no Connect server (another service's port) is said at once
            policies = _retry_briefly(spark)
            builder = SparkSession.builder.remote(remote)
            for key, value in settings.items():
                builder = builder.config(key, value)
            builder.getOrCreate()  # the settings, applied to that session (the first call)
            spark.range(1).collect()  # the server answers
            spark.client.set_retry_policies(policies)  # a job rides out a server's restart
    except BaseException as e:  # gRPC's errors, or Ctrl-C / SIGTERM while the client retries
        _close_client()
        if not isinstance(e, Exception):
            raise
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        said = next((line.partition("=")[2].strip() for line in lines if line.startswith("details =")), lines[0])
        raise DedupError(f"the Spark Connect server at {remote} does not answer: {said[:300]}") from None
    return spark


def stop_connect(spark) -> None:
    """Release a Connect session on its server and close the client's channel. The release is
    tried for about a second, not for the client's ten minutes: a job whose server died meanwhile
    ends at once (a session not released expires on a server that lives on)."""
    with suppress(Exception):
        _retry_briefly(spark)
    try:
        spark.stop()  # a release that fails is logged by PySpark's Connect logger, off by default
    except Exception:  # a server gone meanwhile
        pass
    finally:
        with suppress(Exception):
            spark.client.close()


def _retry_briefly(spark) -> list:
    """Make the client of ``spark`` retry a failed call for about a second (3 tries, 50, 200 and
    800 ms apart), not for its default ten minutes; returns the policies it had."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    policies = spark.client.get_retry_policies()
    spark.client.set_retry_policies([DefaultPolicy(max_retries=3)])
    return policies


def _close_client() -> None:
    """Close the channel of this process's Connect session, if there is one, without a call to the
    server: else the client's exit hook calls the server that failed once more as this process
    exits, and retries for ten minutes."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        with suppress(Exception):
            session.client.close()


def _reachable(remote: str) -> None:
    """Refuse in one line, at once, a server address where nothing accepts a connection (the
    Connect client would retry for a minute before it says so)."""
    where = urlsplit(remote)
    try:
        host, port = where.hostname or "localhost", where.port or DEFAULT_PORT
    except ValueError:  # a port that is not a number: the client says what is wrong with it
        return
    refused = cannot_connect(host, port)
    if refused:
        raise DedupError(f"the Spark Connect server at {remote} does not answer: {refused}")


def cannot_connect(host: str, port: int) -> str | None:
    """Why nothing at ``host:port`` accepts a TCP connection (``cannot connect to HOST:PORT
    (Connection refused)``), or None where something does (which says nothing of what it is)."""
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as e:
        return f"cannot connect to {host}:{port} ({e.strerror or e})"
    return None


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM of this process behind it)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
