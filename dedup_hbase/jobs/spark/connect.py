"""A job's session through Spark Connect (``--spark-remote sc://HOST:PORT``): a client of a
server that runs the job on its own master, with no JVM in this process (docs/spark.md#spark-connect).
The server's own settings are ``session.connect_server_conf``'s (scripts/connect-local)."""

from __future__ import annotations

from ...errors import DedupError


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
    builder = SparkSession.builder.remote(remote)
    for key, value in conf.items():
        if key != "spark.app.name":  # a Connect session has no app name of its own
            builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
        spark.range(1).collect()  # the server answers
    except Exception as e:  # gRPC's errors
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise DedupError(f"the Spark Connect server at {remote} does not answer: {first[:300]}") from None
    return spark


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM of this process behind it)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
