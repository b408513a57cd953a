"""The package's architecture (docs/architecture.md), checked on the source.

The packages follow the data path, lowest first: ``errors``, ``text`` (text to fingerprint),
``index`` (the row key, candidates, the lookup, and the store contract), ``stores`` (the stores
that implement it), then ``jobs`` (bulk jobs and their engines) beside ``service`` (the HTTP
service), then ``cli``. A module may import a module below it: of a lower layer, or of its own
package and listed before it in that package's order. Neither of two packages of one layer imports
the other. No module imports a name starting with ``_`` from another module of the package.
"""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dedup_hbase"

# the layers, lowest first; a layer is one package (or module) or several that ignore each other.
# The package's own __init__ ("") imports its public names lazily (by name): it stands lowest.
# Inside a package, its modules (and subpackages) in order, lowest first; "" is the package's
# own __init__.
LAYERS = [("", "errors"), ("text",), ("index",), ("stores",), ("jobs", "service"), ("pipelines",), ("report",), ("cli",),
          ("__main__",)]
ORDER = {
    "text": ["", "encodings", "boilerplate", "features", "native", "fingerprint", "signatures", "terms", "shorts", "units"],
    "index": ["", "ids", "arrays", "parts", "layout", "costs", "plan", "schema", "store", "candidates", "retention", "confirm", "neardup", "probed",
              "documents", "lookup", "spec", "index"],
    "stores": ["url", "memory", "local", "hbase", ""],
    "stores.local": ["rocks", "records", "batch", "packed", "store", ""],
    "stores.hbase": ["", "results", "kept", "wire", "encoding", "tables", "connections", "datapath", "thrift2", "admin", "locks",
                     "store"],
    "jobs": ["", "spark_daemon", "interrupts", "compressed", "corpus", "progress", "workers", "batches", "fingerprint_blocks",
             "options", "reports",
             "outputs", "local", "spark", "engines"],
    "jobs.local": ["components", "linked", "group_output", "kept_texts", "left_out", "load", "check", "groups", ""],
    "jobs.spark": ["cds", "connect", "jvm", "session", "ship", "files", "hbase", "hfiles", "rows", "stages", "texts", "inputs", "harness",
                   "fingerprints", "records", "bulk", "pairs", "components", "groups", "adding", "signed", "check", "load", ""],
    "service": ["", "batcher", "online", "documents", "access", "metrics", "probes", "handlers", "app", "http_lane",
                "server"],
    "pipelines": ["", "columns", "arrow", "frames", "polars_frames", "spark_frames", "datatrove_step", "ray_data", "hf_datasets"],
    "report": ["", "sources", "explain", "terminal", "svg", "page_parts", "page", "copies", "tune"],
    "cli": ["", "command", "environment", "layout", "views", "service", "commands"],
}
# modules that import nothing of the package (Spark's daemon imports them before it forks)
IMPORT_NOTHING = {"jobs", "jobs.spark_daemon"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """The package modules ``path`` imports (as names relative to the package, "" = the
    package), each with the names taken from it."""
    name = module_name(path)
    parts = name.split(".") if name else []
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "dedup_hbase":
                target = node.module.removeprefix("dedup_hbase").lstrip(".")
            else:
                continue
            names = [alias.name for alias in node.names]
            submodules = [f"{target}.{n}".lstrip(".") for n in names if is_module(f"{target}.{n}".lstrip("."))]
            if submodules:
                found.extend((s, []) for s in submodules)
            else:
                found.append((target, names))
        elif isinstance(node, ast.Import):
            found.extend((a.name.removeprefix("dedup_hbase").lstrip("."), []) for a in node.names
                         if a.name.split(".")[0] == "dedup_hbase")
    return found


def is_module(name: str) -> bool:
    path = PACKAGE / Path(*name.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def package_imports(path: Path) -> set[str]:
    return {target for target, _ in imports(path)}


def rank(name: str) -> tuple:
    """Where ``name`` stands: its layer, then its place in each package's order."""
    parts = name.split(".") if name else [""]
    layer = next((i for i, layer in enumerate(LAYERS) if parts[0] in layer), None)
    if layer is None:
        raise AssertionError(f"dedup_hbase.{name} is in no layer of tests/test_architecture.py")
    out: list = [layer]
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in ORDER:
            break
        child = parts[depth] if depth < len(parts) else ""
        if child not in ORDER[package]:
            raise AssertionError(f"dedup_hbase.{name}: {child or '__init__'} is not in the order of {package} "
                                 "in tests/test_architecture.py")
        out.append(ORDER[package].index(child))
    return tuple(out)


def wrong_imports(name: str, targets: set[str]) -> list[str]:
    own_top = name.split(".")[0] if name else ""
    own = rank(name)
    wrong = []
    for target in sorted(targets - {name}):
        top = target.split(".")[0]
        if name in IMPORT_NOTHING:
            wrong.append(target)
        elif top != own_top and rank(target)[0] == own[0]:
            wrong.append(target)  # two packages of one layer
        elif not rank(target) < own:
            wrong.append(target)
    return wrong


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path):
    name = module_name(path)
    wrong = wrong_imports(name, package_imports(path))
    assert wrong == [], f"dedup_hbase.{name or '__init__'} imports {wrong}, above it in tests/test_architecture.py"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_crosses_modules(path):
    private = [f"{target}.{n}" for target, names in imports(path) for n in names
               if n.startswith("_") and not n.endswith("__")]
    assert private == [], f"dedup_hbase.{module_name(path)} imports private names {private}"


def test_nothing_outside_the_embedded_store_imports_it():
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        if name.startswith("stores.local") or name == "stores":
            continue
        assert not any(t.startswith("stores.local") for t in package_imports(path)), name


def test_the_top_level_is_the_public_face():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "errors.py"]


def test_the_checker_sees_imports():
    assert package_imports(PACKAGE / "index" / "index.py") >= {"index.store", "index.layout", "errors"}
    assert "stores.local.records" in package_imports(PACKAGE / "stores" / "local" / "packed.py")
    assert wrong_imports("index.layout", {"index.index"}) == ["index.index"]
    assert wrong_imports("jobs.local.load", {"service.online"}) == ["service.online"]
    assert wrong_imports("index.index", {"stores"}) == ["stores"]
    assert wrong_imports("stores.hbase.store", {"index.store", "stores.hbase.thrift2"}) == []
    assert wrong_imports("stores.hbase.connections", {"stores.hbase.thrift2"}) == ["stores.hbase.thrift2"]


def test_pip_installs_every_package():
    """pyproject.toml's package list names every package of the source tree (a package left out
    is missing from what ``pip install`` puts in place, and only a non-editable install shows it)."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {".".join(("dedup_hbase", *p.parent.relative_to(PACKAGE).parts)) for p in PACKAGE.rglob("__init__.py")}
    assert present - listed == set()


# PySpark's private ways into the JVM, and what Spark Connect does not have (a SparkContext, RDDs):
# a Spark job that names them cannot run through Spark Connect, and a Spark upgrade may break it
# (the JVM helper is reached through its data sources instead: jobs/spark/hfiles.py)
PRIVATE_SPARK = re.compile(r"\b(_jvm|_jsc|_gateway|_jdf|_jsparkSession|sparkContext|toRdd|toJavaRDD|parallelize|"
                           r"launch_gateway)\b|\.rdd\b")
# the modules that still use them, and how often: to be brought to none (issue 46); a module
# freed of them leaves this list, a new use anywhere fails. jvm.py: a classic session's JVM, a
# child of this process that only PySpark's gateway knows (watched, ended, forgotten)
STILL_PRIVATE = {"jobs/spark/jvm.py": 13}


def test_no_new_use_of_pyspark_private_names():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        uses = len(PRIVATE_SPARK.findall(path.read_text("utf-8")))
        if uses:
            found[path.relative_to(PACKAGE).as_posix()] = uses
    assert found == STILL_PRIVATE
