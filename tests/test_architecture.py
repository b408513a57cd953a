"""The import rules of docs/architecture.md, checked on the source: each module of the package
imports only the package modules its row allows. A new import across a wall fails here."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dedup_hbase"

# module -> the package modules it may import (docs/architecture.md). Prefixes end with "."
ALLOWED = {
    "errors": set(),
    "arrays": set(),
    "boilerplate": set(),
    "features": {"boilerplate", "errors"},
    "fingerprint": {"errors", "features", "native"},
    "native": {"boilerplate", "errors", "features"},
    "corpus": {"errors", "fingerprint", "ids"},
    "workers": {"errors", "fingerprint"},
    "layout": {"errors"},
    "plan": {"errors", "layout"},
    "schema": {"errors"},
    "stores.url": {"errors"},
    "stores.base": {"errors", "schema"},
    "stores.memory": {"errors", "stores.base"},
    "stores.hbase": {"errors", "schema", "stores.base", "stores.hbase_admin", "stores.hbase_locks", "stores.hbase_paths",
                     "stores.thrift2", "stores.url"},
    "stores.hbase_paths": {"errors", "stores.base", "stores.thrift2"},
    "stores.hbase_locks": {"errors", "stores.thrift2"},
    "stores.hbase_admin": {"errors", "schema", "stores.thrift2"},
    "stores.thrift2": {"stores.base"},
    "stores.local.": {"arrays", "errors", "stores.base", "stores.local."},
    "stores": {"stores.base", "stores.url", "stores.memory", "stores.hbase", "stores.local"},
    "candidates": {"arrays", "native", "stores.base"},
    "index": {"arrays", "candidates", "errors", "fingerprint", "ids", "layout", "plan", "retention", "schema", "stores.base"},
    "neardup": {"layout"},
    "interrupts": set(),
    "ids": {"errors"},
    "batches": {"corpus", "errors", "fingerprint", "ids", "workers"},
    "groups": {"batches", "corpus", "errors", "fingerprint", "layout", "neardup", "plan", "workers"},
    "loader": {"batches", "corpus", "errors", "fingerprint", "groups", "ids", "index", "interrupts", "neardup", "workers"},
    "engines": {"corpus", "errors", "fingerprint", "groups", "index", "loader", "spark"},
    "progress": {"corpus"},
    "online": {"fingerprint", "ids", "index", "neardup", "retention"},
    "retention": {"errors", "ids"},
    "spark.": {"arrays", "batches", "candidates", "corpus", "errors", "fingerprint", "groups", "ids", "index", "interrupts",
               "layout", "loader", "schema", "stores", "stores.base", "spark."},
    "batcher": set(),
    "spark_daemon": set(),
    "http_lane": set(),
    "service": {"batcher", "errors", "fingerprint", "http_lane", "ids", "index", "online", "retention"},
    "command": {"errors", "index", "interrupts", "stores", "stores.hbase_admin"},
    "cli": {"", "batches", "command", "corpus", "engines", "errors", "fingerprint", "groups", "index", "interrupts", "loader",
            "native", "online", "plan", "progress", "retention", "schema", "service", "spark", "stores"},
    "": {"errors", "features", "fingerprint", "index", "layout", "stores"},
    "__main__": {"cli"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, as names relative to the package ("" = the package)."""
    name = module_name(path)
    parts = name.split(".") if name else []
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = set()
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
            submodules = [f"{target}.{n}".lstrip(".") for n in names if (PACKAGE / Path(*f"{target}.{n}".lstrip(".").split("."))).with_suffix(".py").exists()
                          or (PACKAGE / Path(*f"{target}.{n}".lstrip(".").split("."))).is_dir()]
            found.update(submodules or [target])
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("dedup_hbase").lstrip(".") for a in node.names
                         if a.name.split(".")[0] == "dedup_hbase")
    return found


def rule_for(name: str) -> set[str]:
    if name in ALLOWED:
        return ALLOWED[name]
    prefixes = [p for p in ALLOWED if p.endswith(".") and (name.startswith(p) or name == p[:-1])]
    if not prefixes:
        raise AssertionError(f"dedup_hbase.{name} has no row in docs/architecture.md (and in ALLOWED here)")
    return ALLOWED[max(prefixes, key=len)]


def allowed(target: str, rule: set[str]) -> bool:
    return target in rule or any(p.endswith(".") and target.startswith(p) for p in rule)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_architecture(path):
    name = module_name(path)
    rule = rule_for(name)
    wrong = sorted(t for t in package_imports(path) if t != name and not allowed(t, rule))
    assert wrong == [], f"dedup_hbase.{name or '__init__'} imports {wrong}, which docs/architecture.md does not allow"


def test_nothing_outside_the_embedded_store_imports_it():
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        if name.startswith("stores.local") or name == "stores":
            continue
        assert not any(t.startswith("stores.local") for t in package_imports(path)), name


def test_the_checker_sees_imports():
    assert package_imports(PACKAGE / "index.py") >= {"stores.base", "layout", "errors"}
    assert "stores.local.records" in package_imports(PACKAGE / "stores" / "local" / "packed.py")
