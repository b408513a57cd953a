"""The JVM of a classic SparkSession (not Spark Connect's: a server runs on its own): started with
its stderr passed on without Java's start-up noise, watched so that it never outlives this
process, stopped and forgotten so that the next session starts its own, and its log level.

The one module that reaches PySpark's private side (its gateway, ``SparkContext``): a classic
session's JVM is a child of this process, and only the gateway knows it.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from ...errors import DedupError
from . import cds
from .connect import is_connect

ARCHIVE_WAIT = 180  # s: the longest a job's end waits for its JVM to write its class archive (cds.py)


class _QuietPy4J(logging.Filter):
    """Drops what py4j logs through the root logger (``logging.exception("Exception while
    sending command.")``, with its traceback) while this process ends the JVM it started: a
    command of PySpark's that meets the JVM's end is expected then, and a stopped job says
    what happened in its own one line. Installed on the root logger by ``start``; quiet
    from ``stop`` or ``_end_started_jvm`` until the next session starts."""

    quiet = False

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.quiet and f"{os.sep}py4j{os.sep}" in record.pathname)


_PY4J = _QuietPy4J()
# the sessions ``start`` started, by id: (their JVM's watchdog, the class archive their JVM
# writes as it exits, or None), until ``stop``
_STARTED: dict[int, tuple] = {}


def start(builder, master: str, settings: dict[str, str], archive) -> object:
    """The session of ``builder`` (``settings`` applied), its JVM started by this process (unless
    it has one already) and watched; ``archive``: the class archive (cds.py) the JVM writes as
    it exits, or None. Interrupted or failed while the JVM starts, the JVM is ended (it must
    not outlive this) and the error raised."""
    _PY4J.quiet = False
    if _PY4J not in logging.getLogger().filters:
        logging.getLogger().addFilter(_PY4J)
    output = _Output()
    try:
        with _signals_deferred():  # PySpark holds the new JVM's only handle while it starts
            _launch_gateway(master, settings, output)
            spark = builder.getOrCreate()
            spark.conf.get("spark.master")  # Spark checks the SQL settings here: a bad one refused while the JVM runs
            _STARTED[id(spark)] = (_watch(spark), archive)
        _set_log_level(spark, "WARN")
    except BaseException as e:
        said = _java_said(e)  # before the JVM ends: py4j asks the JVM for the message
        _end_started_jvm()
        if archive is not None:
            cds.finish(archive, written=False)
        if output.ended:  # Spark ended the application itself: its reason, not the stopped context it left
            raise DedupError(f"the Spark session did not start: Spark ended it: {output.ended} (master {master})") \
                from None
        if said:
            raise DedupError(f"the Spark session did not start: {said}") from None
        raise
    return spark


def _java_said(error: BaseException) -> str | None:
    """The first line of what the JVM said of ``error`` (``java.io.FileNotFoundException: File
    file:/x does not exist`` for a missing ``spark.eventLog.dir``, Spark's refusal of a bad
    setting), or None where the error is not the JVM's."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        if isinstance(error, CapturedException):
            text = str(error)
        elif isinstance(error, Py4JJavaError):
            text = str(error.java_exception.toString())
        else:
            return None
    except Exception:  # the JVM gone already
        return None
    return next((line.strip() for line in text.splitlines() if line.strip()), None)


def _set_log_level(spark, level: str) -> None:
    spark.sparkContext.setLogLevel(level)


@contextmanager
def jvm_log_level(spark, level: str) -> Iterator[None]:
    """A classic session's JVM logs at ``level`` meanwhile, and at WARN again once the block
    has run without an error (after one, the session is about to stop: what Spark logs of it
    then is not the user's concern). A Spark Connect server logs to its own log: nothing
    changes."""
    if is_connect(spark):
        yield
        return
    _set_log_level(spark, level)
    yield
    _set_log_level(spark, "WARN")


# What a JVM that PySpark starts writes on its stderr and that tells a user nothing: Spark's
# launcher adds --add-modules=jdk.incubator.vector to every JVM, and Java warns of it at start.
JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector\n",)
# what Java says before the reason it could not start
JAVA_HEADERS = ("Error occurred during initialization of VM",)
LOG_LINE = re.compile(r"(\d\d/\d\d/\d\d )?\d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR) ")
# what Spark's scheduler backend logs when it gives up on the application (a standalone master
# that accepts the connection and never answers: "All masters are unresponsive! Giving up.")
ENDED = re.compile(r"Application has been killed\. Reason: (.+)$")


class _Output:
    """What the JVM a session starts wrote that says why it failed: its first lines (``first``),
    and the reason Spark gave when it ended the application itself (``ended``), else None."""

    def __init__(self) -> None:
        self.first: list[bytes] = []
        self.ended: str | None = None

    def add(self, line: bytes) -> None:
        if len(self.first) < 10:
            self.first.append(line)
        if self.ended is None and b"Application has been killed" in line:
            found = ENDED.search(line.decode(errors="replace").strip())
            if found:
                self.ended = found[1]


def _launch_gateway(master: str, settings: dict[str, str], output: _Output) -> None:
    """PySpark's JVM (the gateway the session's ``getOrCreate`` then finds), with its stdout and
    stderr through this process: a thread passes on every line to this process's stderr but
    ``JVM_NOISE`` (and tells ``output``), until the JVM and the Python workers it starts have
    closed it. A JVM that exits before it answers (a bad ``spark.driver.memory`` ...) is a
    DedupError with the reason it wrote (``_reason``). Does nothing where this process has a
    JVM already."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf().setMaster(master).setAll(list(settings.items()))
    read, write = os.pipe()
    passing = threading.Thread(target=_pass_on, args=(os.fdopen(read, "rb"), output), name="jvm-stderr", daemon=True)
    passing.start()
    try:
        # its stdout too (where Java says why it could not start): this process's stdout is its results'
        gateway = launch_gateway(conf, popen_kwargs={"stdout": write, "stderr": write})
    except Exception as e:
        os.close(write)
        passing.join(timeout=5)  # the JVM exited: its last lines, then the end of the pipe
        reason = _reason([line.decode(errors="replace") for line in output.first]) or str(e)  # else PySpark's
        raise DedupError(f"the Spark session did not start: Java exited: {reason}") from e
    os.close(write)
    SparkContext._ensure_initialized(gateway=gateway)


def _reason(lines: list[str]) -> str | None:
    """Why a JVM exited, in what it wrote: its main thread's exception, else its first line
    that is neither a log line (our log4j2.properties' or Spark's default pattern) nor
    Java's header before the reason; None where it wrote nothing else."""
    lines = [line.strip() for line in lines if line.strip()]
    thrown = next((line.split('" ', 1)[1] for line in lines if line.startswith('Exception in thread "main" ')), None)
    said = (line for line in lines if not LOG_LINE.match(line) and line not in JAVA_HEADERS)
    return thrown or next(said, None)


def _pass_on(stream, output: _Output) -> None:
    """The lines of ``stream`` to file descriptor 2 (where the JVM would have written them), but
    ``JVM_NOISE``; each told to ``output``."""
    with stream:
        for line in iter(stream.readline, b""):
            if line not in JVM_NOISE:
                output.add(line)
                try:
                    while line:
                        line = line[os.write(2, line):]
                except OSError:  # stderr closed: the lines have nowhere to go, the JVM goes on
                    pass


@contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM recorded, not acted on, meanwhile; a recorded one is delivered to
    the handler it would have reached as soon as the block ends. Main thread only (elsewhere
    signals do not interrupt this thread anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {number: signal.signal(number, lambda n, frame: arrived.append(n))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)


def _end_started_jvm() -> None:
    """End the JVM that PySpark launched in this process, if any (no session to stop yet)."""
    from pyspark import SparkContext

    _PY4J.quiet = True
    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
    _forget_gateway()


# The watchdog: reads its stdin, a pipe from this process. A byte: this process stopped the
# session itself, nothing to do. End of file without one: this process is gone (SIGKILL, the
# OOM killer ...), so the JVM it started is killed, at once, not after Spark's shutdown hooks.
_WATCHDOG = "import os, signal, sys\nif not os.read(0, 1):\n    os.kill(int(sys.argv[1]), signal.SIGKILL)\n"


def _watch(spark) -> subprocess.Popen | None:
    """Make the JVM of a session this process started end when this process ends, however
    it ends; returns the watchdog process. PySpark's gateway JVM exits by itself when its
    stdin closes, but through System.exit and Spark's shutdown hooks, which nothing bounds in
    time; and PySpark gives the JVM no parent-death signal (it replaces any preexec_fn it is
    given)."""
    process = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    if process is None or not hasattr(os, "fork"):
        return None
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(process.pid)], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop(spark, done: bool = False) -> None:
    """Stop a classic session that ``start`` made, and end its JVM: a load's session is done
    when it stops (even when an interruption broke off a call to the JVM half way and left
    the gateway unusable). ``done``: the job ran to its end, so a JVM writing its class
    archive as it exits (cds.py) is given the time to (up to ``ARCHIVE_WAIT`` s; Ctrl-C or
    SIGTERM meanwhile end it at once, without the archive). Never raises (but a signal that
    arrives while the JVM exits, when no archive is written)."""
    _PY4J.quiet = True
    watchdog, archive = _STARTED.pop(id(spark), (None, None))
    process = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    accumulators = getattr(spark.sparkContext, "_accumulatorServer", None) if process is not None else None
    if accumulators is not None:  # shut down below, once the JVM is gone: PySpark's own stop waits
        spark.sparkContext._accumulatorServer = None  # up to 1 s for its handler to see that
        accumulators.handle_error = lambda request, address: None  # the JVM's end of its socket: no news
    # what Spark logs while it stops is not the user's concern (on a cluster, an executor's
    # connection closed under a request: an ERROR and a stack trace after a job that succeeded);
    # py4j's connection may be in an unknown state: the JVM ends below anyway
    with suppress(Exception):
        _set_log_level(spark, "OFF")
    with suppress(Exception):
        spark.stop()
    writing = archive is not None and done
    written = False
    try:
        if process is not None and process.poll() is None:
            try:
                process.stdin.close()  # PySpark's gateway exits when its stdin closes ...
                process.wait(timeout=ARCHIVE_WAIT if writing else 5)
                written = process.returncode == 0
            except Exception:
                process.kill()  # ... or not soon enough (Spark's shutdown hooks)
                process.wait()
            except BaseException:  # Ctrl-C or SIGTERM while it exits
                process.kill()
                process.wait()
                if not writing:  # else the job is done: the signal only cut its archive short
                    raise
            finally:
                _forget_gateway()
    finally:
        if accumulators is not None:  # its handler sees the JVM's end of the socket; the server's
            threading.Thread(target=accumulators.shutdown, daemon=True).start()  # loop, within 0.5 s
        if archive is not None:
            cds.finish(archive, written and done)
        if watchdog is not None:
            try:
                watchdog.stdin.write(b"x")  # stopped here: the watchdog leaves the JVM alone
                watchdog.stdin.close()
            except OSError:
                pass
            watchdog.wait()


def _forget_gateway() -> None:
    """PySpark keeps its JVM gateway in class attributes for the next session of the process:
    the JVM is gone, so the next session must start its own."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
