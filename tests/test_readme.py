"""The README's session, run as written: every ``$`` line of its "A session" block runs in a
fresh folder (with this repository's scripts/), one after the other as a user types them, and
prints what the README shows below it. Only what differs from run to run is masked: a load's
duration and rates, a groups run's duration, an index's creation time."""

import os
import re
import subprocess
import sys
from pathlib import Path

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


def test_the_readme_session_prints_what_the_readme_shows(tmp_path):
    steps = session((ROOT / "README.md").read_text("utf-8"))
    assert len(steps) >= 8 and steps[0][0].startswith("python scripts/make_corpus.py")
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEDUP_HBASE_STORE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the dedup-hbase under test
    for command, shown in steps:
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").split("#")[0].strip().partition("=")
            env[name] = value
            continue
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, (command, result.stderr)
        assert masked(result.stdout + result.stderr) == masked("\n".join(shown)), command
