"""Fixtures: a real HBase, and the shared development corpora with their reference features.

HBase is found, in order: an existing server named by DEDUP_HBASE_TEST_URL
(hbase://HOST:PORT, as scripts/test sets it); the project's launcher scripts/hbase-local
(Java and Maven present).

What a test needs and cannot find (HBase, PySpark, the shared corpora in ../shared/data,
an optional package) makes it fail when DEDUP_HBASE_REQUIRE=1 or CI is set (scripts/test
and CI set them: there every test must run), and skip otherwise, loudly: the end of the
run lists every such skip under a banner, so a local run that proved less than CI's says so.
"""

from __future__ import annotations

import functools
import gzip
import inspect
import json
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from hypothesis import settings

from processes import OwnHBase, SharedSpark, StartFailed

# Every random choice is seeded: hypothesis tries the same examples on every run and machine.
settings.register_profile("dedup-hbase", derandomize=True)
settings.load_profile("dedup-hbase")

# The tests send SIGINT to the commands they start and expect what a user's Ctrl-C gets. A suite
# started in the background by a script (`.ci/run &`) inherits SIGINT ignored, and so would every
# command it starts (an ignored signal stays ignored across exec): restore the default here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# A local Spark job's class archive (jobs/spark/cds.py) off, unless a test turns it on
# (test_spark_fixed_cost.py): writing one costs a job about 33 CPU s more (67 against 34 for a
# 300-text groups), mapping one saves about 5, and the suite's few later jobs do not earn it back.
os.environ.setdefault("DEDUP_HBASE_SPARK_CDS", "0")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
# The index table's regions in the Spark tests' HBase indexes, not the schema's 16: HBase opens and
# closes every region of every test's tables (an index of 16 regions made and dropped: about 1 CPU s
# of HBase's and 2 s; of 2 regions: half), and a Spark job runs a task per region. test_spark_check.py
# and test_spark_confirm.py: 182 -> 158 s alone, HBase's CPU 42 -> 26 s. Still more than one region.
TEST_REGIONS = 4


_MISSING: list[tuple[str, str]] = []  # (test, reason) of every test skipped for want of something


def required() -> bool:
    """Every test must run (DEDUP_HBASE_REQUIRE=1, or CI set): a missing prerequisite fails."""
    return os.environ.get("DEDUP_HBASE_REQUIRE") == "1" or os.environ.get("CI", "").lower() not in ("", "0", "false")


def require_or_skip(reason: str):
    """Skip, listed in the end-of-run banner; or fail where every test must run (``required``)."""
    if required():
        pytest.fail(f"this test must run here (DEDUP_HBASE_REQUIRE=1 or CI) but cannot: {reason}")
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or inspect.stack()[1].filename
    _MISSING.append((test, reason))
    pytest.skip(reason, allow_module_level=True)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """Under xdist's ``--dist loadgroup`` (scripts/test: ``-n 3``) each test goes to a process
    by group:

    - the tests of tests/test_cluster.py and every other test of the pip-installed virtualenv
      (``pip_installed``, made once per process: minutes) in one (their cluster is their own:
      scripts/cluster-local, other ports and folders);
    - the tests that stop, restart or freeze an HBase's processes (``own_hbase``: an HBase of
      their own, not the one the other tests share) in one, one at a time;
    - the tests that start and stop Spark sessions of their own (``no_shared_spark``) in one: run
      before any test of their process has made the process's shared session, they stop none (a
      session stopped there is one more started after them: a JVM's start, 30-55 s of a loaded
      machine);
    - the tests that compare a whole shared corpus with the Python reference (marked
      ``reference``: its features are computed once per process, ``reference_features``) in one;
    - every other test with the rest of its module (its module's fixtures made once); the tests
      of the shared test HBase (``hbase_url``: each on tables of its own) among them.

    These groups go first (scripts/test keeps this order: ``--no-loadscope-reorder``), the
    cluster's at once in one process; then the modules, the slowest first (``SLOW_FIRST``: the
    processes end together rather than one running a long module alone at the end)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        module = item.module.__name__
        fixtures = getattr(item, "fixturenames", ())
        if module == "test_cluster" or "pip_installed" in fixtures:
            group = "cluster"
        elif "own_hbase" in fixtures:
            group = "own-hbase"
        elif "no_shared_spark" in fixtures:
            group = "own-spark"
        elif item.get_closest_marker("reference"):
            group = "reference"
        else:
            group = module
        item.add_marker(pytest.mark.xdist_group(group))
        item.stash[_GROUP] = group
    first = {"cluster": 0, "own-hbase": 1, "own-spark": 2, "reference": 3}
    slow = {name: i for i, name in enumerate(SLOW_FIRST)}
    # stable: the modules not named keep their order, after those named
    items.sort(key=lambda item: (first.get(item.stash[_GROUP], len(first)), slow.get(item.stash[_GROUP], len(slow))))


_GROUP = pytest.StashKey[str]()
# the modules of a minute or more of test time, the slowest first (.ci/durations.txt of a
# fresh-clone run at 5113489: docs/testing.md); a plan only, any order gives the same results
SLOW_FIRST = ("test_spark", "test_spark_check", "test_spark_connect", "test_service", "test_native", "test_hbase",
              "test_fleet", "test_damaged_input", "test_groups", "test_spark_confirm", "test_spark_fixed_cost",
              "test_groups_confirm", "test_bench_scale", "test_odd_inputs", "test_first_hour", "test_short_texts")


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the skips go to the controller's banner
        session.config.workeroutput["missing"] = list(_MISSING)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # xdist's controller, as a worker ends
    _MISSING.extend(tuple(m) for m in getattr(node, "workeroutput", {}).get("missing", []))


_DURATIONS: dict[str, list[float]] = {}  # test id -> [seconds, CPU seconds] of its setup, call and teardown
_CPU_MARK = pytest.StashKey[float]()


def cpu_seconds() -> float:
    """CPU time of this process and of every process it started that has ended and been waited
    for (a command a test ran, and what that command waited for: a Spark job's JVM); not of a
    process still running (the test HBase, the cluster). The shared Spark session's JVM is
    counted, all of its life, when it ends: in the test during which it stops."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report carries the CPU seconds spent since the last one (in the test process)."""
    outcome = yield
    now = cpu_seconds()
    outcome.get_result().user_properties.append(("cpu", now - item.stash.get(_CPU_MARK, now)))
    item.stash[_CPU_MARK] = now


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_MARK] = cpu_seconds()


def pytest_runtest_logreport(report):
    spent = _DURATIONS.setdefault(report.nodeid, [0.0, 0.0])
    spent[0] += report.duration
    spent[1] += dict(report.user_properties).get("cpu", 0.0)


def write_durations(path: str, durations: dict[str, list[float]]) -> list[str]:
    """Where the suite's time goes, to ``path``: seconds and CPU seconds per module (the unit
    xdist spreads, but for the tests of the one test HBase and of the cluster, each a group run
    in one process), then per test, the slowest first. Returns the ten slowest tests' lines."""
    modules: dict[str, list[float]] = {}
    for test, (seconds, cpu) in durations.items():
        spent = modules.setdefault(test.split("::")[0], [0.0, 0.0])
        spent[0] += seconds
        spent[1] += cpu
    line = lambda name, spent: f"{spent[0]:9.1f} {spent[1]:9.1f}  {name}"
    by_time = lambda items: sorted(items, key=lambda t: -t[1][0])
    tests = [line(test, spent) for test, spent in by_time(durations.items())]
    lines = [f"# the suite's time: {sum(s for s, _ in durations.values()):.0f} s of test time in {len(durations)} "
             f"tests (setup + call + teardown; the test processes share it), {sum(c for _, c in durations.values()):.0f}"
             " CPU s of the test processes and the commands they waited for (not of the HBase and cluster daemons)", "",
             "## per module (seconds, CPU seconds)"]
    lines += [line(module, spent) for module, spent in by_time(modules.items())]
    Path(path).write_text("\n".join([*lines, "", "## per test (seconds, CPU seconds)", *tests, ""]), encoding="utf-8")
    return tests[:10]


def pytest_terminal_summary(terminalreporter):
    target = os.environ.get("DEDUP_HBASE_DURATIONS")
    if target and _DURATIONS and not hasattr(terminalreporter.config, "workeroutput"):
        slowest = write_durations(target, _DURATIONS)
        terminalreporter.section(f"the ten slowest tests (every test and module: {target})")
        for line in slowest:
            terminalreporter.line(line)
    if _MISSING:
        terminalreporter.section("SKIPPED FOR WANT OF A PREREQUISITE: this run proved less than CI's", sep="!")
        for test, reason in _MISSING:
            terminalreporter.line(f"{test}: {reason}")


@pytest.fixture(scope="session")
def hbase_url():
    """Base URL of a running HBase Thrift gateway (``hbase://HOST:PORT/``)."""
    url = os.environ.get("DEDUP_HBASE_TEST_URL")
    if url:
        yield url
        return
    launcher = ROOT / "scripts" / "hbase-local"
    if shutil.which("java") and shutil.which("mvn") and launcher.exists():
        port = os.environ.get("DEDUP_HBASE_THRIFT_PORT", "9090")
        started = subprocess.run([str(launcher), "status"], capture_output=True).returncode != 0
        if started:
            result = subprocess.run([str(launcher), "start"], capture_output=True, text=True)
            if result.returncode != 0:
                require_or_skip(f"scripts/hbase-local start failed:\n{result.stdout}\n{result.stderr}")
        admin = os.environ.get("DEDUP_HBASE_THRIFT2_PORT", "9091")
        yield f"hbase://127.0.0.1:{port}/?admin_port={admin}"
        if started:
            subprocess.run([str(launcher), "stop"], capture_output=True)
        return
    require_or_skip("no HBase: set DEDUP_HBASE_TEST_URL, or install Java 17 + Maven (scripts/hbase-local)")


@pytest.fixture(scope="session")
def own_hbase_holder(tmp_path_factory):
    holder = OwnHBase(ROOT / "scripts" / "hbase-local", tmp_path_factory)
    yield holder
    holder.stop()


@pytest.fixture
def own_hbase(own_hbase_holder):
    """``OwnHBase``'s (URL, the launcher's environment, folder), for the tests that stop, restart
    or freeze an HBase's processes (processes.py)."""
    try:
        return own_hbase_holder.get()
    except StartFailed as e:
        require_or_skip(str(e))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Under xdist, the test's own HBase stopped after the last test that uses it (the group
    ``own-hbase`` runs in one process, its tests one after the other; ``nextitem`` is the
    process's next). Without xdist the modules' order spreads those tests: it runs to the end."""
    holder = (getattr(item, "funcargs", None) or {}).get("own_hbase_holder")
    try:
        return (yield)
    finally:
        if holder is not None and hasattr(item.config, "workerinput") and "own_hbase" not in getattr(
                nextitem, "fixturenames", ()):
            holder.stop()


def hbase_store_url(base: str) -> str:
    """A URL for a fresh set of tables under a unique prefix."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}table_prefix=t{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["local", pytest.param("hbase", marks=pytest.mark.hbase)])
def store_url(request, tmp_path):
    """A store URL for a fresh index, on each store: a folder (embedded), and fresh tables on
    the real HBase (dropped afterwards)."""
    if request.param == "local":
        yield str(tmp_path / "index")
        return
    from dedup_hbase import open_store

    url = hbase_store_url(request.getfixturevalue("hbase_url"))
    yield url
    with open_store(url) as store:
        if store.exists():
            store.drop()


def shared_corpus(name: str) -> Path:
    """A shared development corpus (``../shared/data/NAME``, beside the repository, not in it)."""
    path = SHARED_DATA / name
    if not path.exists():
        require_or_skip(f"the shared corpus {path} is missing (put ../shared/data beside the repository)")
    return path


@pytest.fixture(scope="session")
def shared_spark():
    holder = SharedSpark()
    yield holder
    holder.stop()


@pytest.fixture
def spark(shared_spark):
    """The process's SparkSession (``SharedSpark``, processes.py)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        require_or_skip("PySpark is not installed (pip install -e '.[spark]')")
    return shared_spark.get()


@pytest.fixture
def no_shared_spark(shared_spark):
    """No SparkSession of the suite's running: for a test that makes and stops its own."""
    shared_spark.stop()


@pytest.fixture(scope="session")
def xwlb_path():
    return shared_corpus("xwlb_zh.jsonl.gz")


@pytest.fixture(scope="session")
def jargon_path():
    return shared_corpus("jargon_en.jsonl.gz")


# -- the shared corpora and what the Python reference makes of them -------------------------


@functools.cache
def shared_texts(path: Path) -> tuple[str, ...]:
    """The texts of a shared corpus (JSON lines, gzip), in file order; read once per session."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return tuple(json.loads(line)["text"] for line in f)


@functools.cache
def _reference_featurizer(name: str):
    from dedup_hbase.text.features import JiebaFeaturizer, ShingleFeaturizer

    return JiebaFeaturizer(fast=False) if name == "jieba" else ShingleFeaturizer(int(name.removeprefix("shingles")))


def _reference_chunk(name: str, texts: list[str]) -> list[dict[str, int]]:
    featurizer = _reference_featurizer(name)
    return [featurizer.features(text) for text in texts]


# The shared corpora's texts the whole-corpus tests compare with the Python reference: every one of
# the glossary, every fourth one of the news corpus (4,835 of 19,339, 50 to 5,393 characters
# each: the pure-Python jieba of all was the suite's longest test, 150-260 s of two processes, and
# the suite is CPU-bound on two cores). The core's short-text lengths (test_native) take every text.
REFERENCE_STRIDE = {"xwlb_zh.jsonl.gz": 4}


def reference_texts(path: Path) -> tuple[str, ...]:
    """The texts of a shared corpus that ``reference_features`` has the features of, in file order."""
    return shared_texts(path)[::REFERENCE_STRIDE.get(path.name, 1)]


@functools.cache
def reference_features(path: Path, name: str) -> tuple[dict[str, int], ...]:
    """The Python reference's features (pure jieba, never rjieba or the core; or shingles) of
    ``reference_texts(path)``, in order: computed once per session, on every core (the compiled
    core's and the rjieba path's tests both compare against it)."""
    texts = reference_texts(path)
    chunks = [list(texts[i:i + 500]) for i in range(0, len(texts), 500)]
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = pool.map(_reference_chunk, [name] * len(chunks), chunks)
        return tuple(features for part in parts for features in part)


@pytest.fixture(scope="session")
def pip_installed():
    """A virtualenv made the README's way, not editable: ``pip install ./native
    '.[fast,hbase,spark]'`` from a copy of the repository's files (with the checkout's
    jvm/target, which setup.py reuses when it is newer than its sources, else Maven builds it;
    and the compiled core's wheel that scripts/setup built with pip from the same ./native
    sources for this Python, in .native-wheels/, where there is one: the same wheel
    ``pip install ./native`` builds, without the minutes cargo takes again),
    in a folder every user can read (a cluster's executors read the Spark helper's jars
    there, as from an installation at one path on every node). Yields the venv's folder.
    DEDUP_HBASE_TEST_PIP_VENV=DIR: that virtualenv instead (made the same way), kept."""
    import tempfile

    if os.environ.get("DEDUP_HBASE_TEST_PIP_VENV"):
        yield Path(os.environ["DEDUP_HBASE_TEST_PIP_VENV"])
        return
    if shutil.which("cargo") is None:
        require_or_skip("cargo is not installed: the compiled core cannot be built here")
    base = Path(tempfile.mkdtemp(prefix="dedup-hbase-pip-"))
    base.chmod(0o755)
    copy = base / "src"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    if (ROOT / "jvm" / "target" / "lib").is_dir():
        for name in ["dedup-hbase-spark.jar", *(f"lib/{p.name}" for p in (ROOT / "jvm" / "target" / "lib").glob("*.jar"))]:
            (copy / "jvm" / "target" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / "jvm" / "target" / name, copy / "jvm" / "target" / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                          native_wheel() or "./native", ".[fast,hbase,spark]"], cwd=copy, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-3000:]
    yield venv
    shutil.rmtree(base, ignore_errors=True)


def native_wheel() -> str | None:
    """The compiled core's wheel scripts/setup built (``pip wheel ./native``) for these native/
    sources and this Python, kept in .native-wheels/KEY/ (KEY as scripts/setup computes it);
    None when there is none."""
    key = subprocess.run(["bash", "-c", "(cat native/Cargo.toml native/Cargo.lock native/build.rs native/gen_tables.py "
                          "native/pyproject.toml native/src/*.rs; \"$0\" -c 'import sys, unicodedata; "
                          "print(sys.version, unicodedata.unidata_version)') | sha256sum | cut -c1-16", sys.executable],
                         cwd=ROOT, capture_output=True, text=True).stdout.strip()
    found = sorted((ROOT / ".native-wheels" / key).glob("dedup_hbase_core-*.whl")) if key else []
    return str(found[0]) if found else None
