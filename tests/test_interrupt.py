"""A load stopped by SIGKILL, SIGTERM or SIGINT leaves no process of its own behind, and the
next run finishes it with every document exactly once.

The load is mid-way by construction, on any machine: its input is a regular file followed by
a named pipe, so it loads the file, then waits on the pipe with its fingerprint workers alive.
The test sends the signal once the load has opened the pipe (the test's own opening of it
for writing succeeds only then) and before anything is written to it. The processes the load
started are found by a marker in their environment (every child inherits it) and by the
process tree recorded before the signal.

These loads run on the Python path (DEDUP_HBASE_NATIVE=0), whose workers are processes; with
the compiled core the workers are threads of the load itself (the last test)."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid

import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.index.layout import cell_qualifier

from conftest import require_or_skip

MARKER = "DEDUP_HBASE_TEST_MARKER"
FIRST, LATER = 1500, 500  # documents in the file, then in the pipe


@pytest.fixture(scope="module")
def documents(xwlb_path):
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        lines = [line for _, line in zip(range(FIRST + LATER), f)]
    return lines[:FIRST], lines[FIRST:]


def alive(pid: int, started: str | None = None) -> bool:
    """Running (not a zombie), and the same process (start time) when ``started`` is given."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and (started is None or fields[19] == started)


def start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def marked(marker: str) -> list[int]:
    """Running processes whose environment holds the marker."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environment = f.read().split(b"\0")
            except OSError:
                continue
            if f"{MARKER}={marker}".encode() in environment and alive(int(entry)):
                found.append(int(entry))
    return found


def start_load(store, inputs, marker, native=False, **popen):
    env = {**os.environ, MARKER: marker, "DEDUP_HBASE_NATIVE": "1" if native else "0"}
    return subprocess.Popen(["dedup-hbase", "load", "--store", store, "--workers", "2", "--batch-size", "100",
                             "--json", *map(str, inputs)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def wait_for_workers(proc, count=2, timeout=120):
    """The load's process tree once its workers run (a worker is a Python child of the load)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        tree = descendants(proc.pid)
        workers = [p for p in tree if b"spawn_main" in cmdline(p)]
        if len(workers) >= count:
            return {pid: start_time(pid) for pid in tree}
        time.sleep(0.1)
    raise AssertionError("the load's workers never started")


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def assert_all_gone(tree, marker, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [pid for pid, started in tree.items() if alive(pid, started)] + marked(marker)
        if not left:
            return
        time.sleep(0.1)
    raise AssertionError(f"processes left {within} s after the load ended: "
                         f"{[(pid, cmdline(pid)[:120]) for pid in sorted(set(left))]}")


def opened_by_the_load(pipe, proc, timeout=300):
    """Wait until ``proc`` has opened the pipe for reading (it has read the whole file before
    it, and now waits for the pipe's first line); returns the pipe's write end, unwritten."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            return os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while no reader has it open
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the load never opened the pipe")


def feed(pipe, lines):
    """Write the pipe's documents from a thread (opening a pipe blocks until a reader opens it)."""
    def write():
        with open(pipe, "w", encoding="utf-8") as f:
            f.writelines(lines)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def setup(tmp_path, documents):
    first, later = documents
    path = tmp_path / "first.jsonl"
    path.write_text("".join(first), encoding="utf-8")
    pipe = tmp_path / "later.jsonl"
    os.mkfifo(pipe)
    store = str(tmp_path / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    return store, path, pipe, later


def assert_loaded_exactly_once(store, total):
    with open_store(store) as s:
        index = Index.open(s)
        stats = index.stats()
        docs = list(s.iterate("docs"))
        # a cell's key: the row key, then the id, the short-text rule's sketch and a short text's kept
        # text, the document row's metadata entry "kept" (layout.cell_qualifier)
        keys = {key[:13] + cell_qualifier(raw_id, int.from_bytes(value[8:16], "big"),
                                          json.loads(value[16:] or b"{}").get("kept", "").encode())
                for raw_id, value in docs for key in index.scheme.row_keys(int.from_bytes(value[:8], "big"))}
        assert index.head == 16 and keys == {key for key, _ in s.iterate("index")}
    assert stats["documents"] == total and stats["index_cells"] == 4 * total


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_sigterm_and_ctrl_c_stop_the_workers_and_the_next_run_resumes(setup, how):
    store, path, pipe, later = setup
    marker = uuid.uuid4().hex
    load = start_load(store, [path, pipe], marker, start_new_session=True)
    tree = wait_for_workers(load)
    held = opened_by_the_load(pipe, load)
    if how == "SIGINT":
        os.killpg(load.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
    else:
        load.send_signal(signal.SIGTERM)
    out, err = load.communicate(timeout=60)
    os.close(held)
    assert load.returncode == 128 + getattr(signal, how), err
    assert out == "" and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith(f"interrupted by {how}: stopped after ") and line.endswith(
        "records, all written and checkpointed; run the same command again to resume")
    done = int(line.split("stopped after ")[1].split()[0].replace(",", ""))
    assert 0 <= done <= FIRST
    assert_all_gone(tree, marker)

    writer = feed(pipe, later)
    rerun = start_load(store, [path, pipe], marker)
    out, err = rerun.communicate(timeout=600)
    writer.join()
    assert rerun.returncode == 0, err
    report = json.loads(out)
    assert report["resumed_after"] == done and report["read"] == FIRST + LATER
    assert report["read"] == report["indexed"] + report["rejected"] and report["rejected"] == 0
    assert_loaded_exactly_once(store, FIRST + LATER)
    assert marked(marker) == []


def test_sigkill_takes_the_workers_with_it(setup):
    store, path, pipe, later = setup
    marker = uuid.uuid4().hex
    load = start_load(store, [path, pipe], marker)
    tree = wait_for_workers(load)
    assert len(tree) >= 3  # two workers and multiprocessing's resource tracker
    held = opened_by_the_load(pipe, load)
    load.send_signal(signal.SIGKILL)
    load.wait(timeout=60)
    os.close(held)
    assert_all_gone(tree, marker)  # nobody told them: the kernel (parent-death signal) did

    writer = feed(pipe, later)
    rerun = start_load(store, [path, pipe], marker)
    out, err = rerun.communicate(timeout=600)
    writer.join()
    assert rerun.returncode == 0, err
    assert json.loads(out)["read"] == FIRST + LATER
    assert_loaded_exactly_once(store, FIRST + LATER)


def test_with_the_compiled_core_a_load_starts_no_process(setup):
    from dedup_hbase.text import native
    from dedup_hbase.text.features import JiebaFeaturizer
    from dedup_hbase.text.fingerprint import Fingerprinter

    if not Fingerprinter(JiebaFeaturizer()).uses_core:
        if shutil.which("cargo"):  # scripts/setup builds the core wherever cargo is: here it must be in use
            pytest.fail(f"the compiled core is not in use: {native.describe()}")
        require_or_skip(f"the compiled core is not in use (no cargo here): {native.describe()}")
    store, path, pipe, later = setup
    marker = uuid.uuid4().hex
    load = start_load(store, [path, pipe], marker, native=True)
    writer = feed(pipe, later)
    threads_seen, seen_itself = 0, False
    while load.poll() is None:  # until it ends: never a child process
        # the load itself may have exited since poll(): a zombie shows no environment, so "at most itself"
        found = set(marked(marker))
        assert descendants(load.pid) == [] and found <= {load.pid}
        seen_itself |= found == {load.pid}
        threads_seen = max(threads_seen, len(os.listdir(f"/proc/{load.pid}/task")) if alive(load.pid) else 0)
        time.sleep(0.05)
    writer.join()
    out, err = load.communicate()
    assert load.returncode == 0, err
    assert json.loads(out)["read"] == FIRST + LATER and threads_seen >= 3  # main + two fingerprint threads
    assert seen_itself  # the marker search finds the load: an empty search above proved something


BUSY_CHILD = """
import os, sys, time, multiprocessing
from dedup_hbase.jobs.workers import die_with_parent

def busy(parent):
    die_with_parent(parent)
    print("armed", os.getpid(), flush=True)  # the parent-death signal is asked for
    while True:  # reads no pipe: nothing but the kernel can tell it that its parent is gone
        time.sleep(0.05)

if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=busy, args=(os.getpid(),))
    child.start()
    child.join()
"""


def test_a_busy_worker_dies_with_its_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(BUSY_CHILD)
    parent = subprocess.Popen([os.environ.get("DEDUP_HBASE_PYTHON", "python"), str(script)],
                              stdout=subprocess.PIPE, text=True)
    armed, child = parent.stdout.readline().split()  # printed by the child once it is armed
    child = int(child)
    started = start_time(child)
    assert armed == "armed" and alive(child, started)
    parent.kill()
    parent.wait()
    assert_all_gone({child: started}, uuid.uuid4().hex)


def test_py4j_complaints_about_a_jvm_this_process_ends_are_dropped():
    """What py4j logs through the root logger (a command that met the JVM's end, with its
    traceback) is dropped once a Spark job ends its JVM (``jvm.stop`` or an interrupted
    start), so a stopped job's stderr is its one line; anything else is logged as before
    (``make_session`` makes py4j's errors heard again for its new JVM)."""
    import logging

    from dedup_hbase.jobs.spark import jvm

    def record(path: str) -> logging.LogRecord:
        return logging.LogRecord("root", logging.ERROR, path, 1, "Exception while sending command.", None, None)

    py4j, ours = record("/venv/site-packages/py4j/java_gateway.py"), record("/venv/site-packages/dedup_hbase/x.py")
    quiet = jvm._QuietPy4J()
    assert quiet.filter(py4j) and quiet.filter(ours)
    quiet.quiet = True
    assert not quiet.filter(py4j) and quiet.filter(ours)
