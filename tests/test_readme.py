"""The README's session, run as written: every ``$`` line of its "A session" block runs in a
fresh folder (with this repository's scripts/), one after the other as a user types them, and
prints what the README shows below it. Only what differs from run to run is masked: a load's
duration and rates, a groups run's duration, an index's creation time.

It runs with what ``scripts/demo`` installs and nothing more: the packages of this environment
that the demo's install would not bring (the other extras' and the test tools') cannot be
imported by the session's processes."""

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from conftest import ROOT

VOLATILE = [
    (re.compile(r"in \d+\.\d s: [\d,]+ docs/s, [\d.]+ MB/s"), "in T s: R docs/s, R MB/s"),
    (re.compile(r'"created": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"'), '"created": "T"'),
    (re.compile(r"engine, \d+\.\d s$", re.M), "engine, T s"),
]


def session(readme: str, heading: str = "## A session") -> list[tuple[str, list[str]]]:
    """(command, the lines the README shows it printing) of the first console block after ``heading``."""
    section = readme[readme.index(heading):]
    block = section[section.index("```console\n") + len("```console\n"):]
    block = block[:block.index("```")]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def masked(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


def demo_distributions() -> set[str]:
    """The distributions ``scripts/setup`` (run by scripts/demo) installs: dedup-hbase's own
    dependencies and those of the extras it names, with theirs, as installed here."""
    extras = re.search(r'^extras="([^"]+)"', (ROOT / "scripts" / "setup").read_text("utf-8"), re.M).group(1)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    todo = [*project["dependencies"], *(r for e in extras.split(",") for r in project["optional-dependencies"][e])]
    found: set[str] = set()
    while todo:
        requirement = Requirement(todo.pop())
        name = canonical(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        found.add(name)
        try:
            todo.extend(importlib.metadata.requires(requirement.name) or [])
        except importlib.metadata.PackageNotFoundError:
            pass  # not installed here: nothing of it to block
    return found | {"dedup-hbase"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def demo_install_only(folder: Path) -> str:
    """A folder whose sitecustomize.py makes every module of a distribution installed here
    but not by the demo (``demo_distributions``) fail to import, as it would after the demo."""
    allowed = demo_distributions()
    blocked = sorted(module for module, dists in importlib.metadata.packages_distributions().items()
                     if not any(canonical(d) in allowed for d in dists))
    assert "pyspark" in blocked and "hypothesis" in blocked and "jieba" not in blocked
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(f"""import sys

BLOCKED = {set(blocked)!r}


class NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed by scripts/demo)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled)
""", encoding="utf-8")
    return str(folder)


def test_the_readme_session_prints_what_the_readme_shows(tmp_path):
    steps = session((ROOT / "README.md").read_text("utf-8"))
    assert len(steps) >= 8 and steps[0][0].startswith("python scripts/make_corpus.py")
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEDUP_HBASE_STORE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the dedup-hbase under test
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [demo_install_only(tmp_path / "demo-install"),
                                                      env.get("PYTHONPATH")]))
    for command, shown in steps:
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").split("#")[0].strip().partition("=")
            env[name] = value
            continue
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, (command, result.stderr)
        assert masked(result.stdout + result.stderr) == masked("\n".join(shown)), command


def test_the_readme_lists_every_command_of_the_cli_and_no_other():
    """The README's command list (the paragraph under "## Commands", before "Every command")
    names exactly the CLI's commands: one added to the CLI and not to the README fails, and so
    does one the README names that the CLI does not have."""
    import typer

    from dedup_hbase.cli.commands import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = readme.split("\n## Commands\n", 1)[1].split("Every command", 1)[0]
    named = {piece.split()[0] for piece in re.findall(r"`([^`]+)`", listed)}
    assert named == set(typer.main.get_command(app).commands)


def test_the_readme_layout_names_every_package_in_the_architecture_order():
    """The README's layout line is the architecture's layers line, and its list of folders
    names every package of dedup_hbase/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    line = re.compile(r"^errors  ->.*$", re.M)
    assert line.search(readme).group(0) == line.search(architecture).group(0).replace("  ->  __main__", "")
    packages = {p.name for p in (ROOT / "dedup_hbase").iterdir() if (p / "__init__.py").exists()}
    layers = {name.strip() for part in line.search(readme).group(0).split("->") for name in part.split(",")}
    assert layers - {"errors"} == packages
    folders = readme.split("\n## How it works\n", 1)[1].split("\n## ", 1)[0]
    assert {name for name in re.findall(r"`(\w+)/`", folders)} >= packages
