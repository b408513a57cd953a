"""`dedup-hbase serve` started for a test over real sockets (tests/test_service_access.py,
tests/test_service_observe.py)."""

import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def started(store: str, *options: str, log: Path):
    """`dedup-hbase serve --port 0 OPTIONS` running, its stderr into ``log``; yields (its URL,
    the process); SIGTERM at the end, after which it must have stopped by it."""
    with open(log, "w") as err:
        proc = subprocess.Popen(["dedup-hbase", "serve", "--store", store, "--port", "0", *options], stderr=err)
    deadline = time.monotonic() + 120
    while not log.read_text().startswith("serving ") or "\n" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    url = log.read_text().split(" on ", 1)[1].split(" ", 1)[0]
    try:
        yield url, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.returncode == 0 and log.read_text().strip().endswith("stopped by SIGTERM"), log.read_text()
