"""One vocabulary: every flag a message of the package names is an option of the real CLI
(of the command it is named with, when it is), and an option's name means one thing in every
command that has it."""

import ast
import re

import pytest
import typer

from dedup_hbase.cli.commands import app

from conftest import ROOT

CLI = typer.main.get_command(app)
COMMANDS = {name: {opt for param in cmd.params for opt in param.opts + param.secondary_opts}
            for name, cmd in CLI.commands.items()}
GLOBAL = {opt for param in CLI.params for opt in param.opts + param.secondary_opts}
# `COMMAND --flag` (the command named right before it: `init --ttl`) or a flag alone.
FLAG = re.compile(r"(?:(?<![\w-])(" + "|".join(map(re.escape, COMMANDS)) + r") )?(?<![\w-])(--[a-z][a-z0-9-]*)")
FOREIGN = {"--without-pip"}  # another program's flag: `python -m venv --without-pip` (jobs/spark/ship.py)


def strings(path):
    """The string constants of a module (the pieces of f-strings too), its docstrings left out:
    every message the package prints or raises."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def named_flags():
    """(module, command or None, flag) for every flag a message names."""
    for path in sorted((ROOT / "dedup_hbase").rglob("*.py")):
        for text in strings(path):
            for command, flag in FLAG.findall(text):
                if flag not in FOREIGN:
                    yield path.relative_to(ROOT).as_posix(), command or None, flag


def test_the_collector_finds_the_messages_flags():
    found = set(named_flags())
    assert ("dedup_hbase/report/page.py", None, "--sample-seed") in found
    assert any(command == "check" and flag == "--engine" for _, command, flag in found)
    assert len({flag for _, _, flag in found}) > 20


def test_every_flag_a_message_names_exists():
    every = set().union(GLOBAL, *COMMANDS.values())
    missing = sorted({(module, command, flag) for module, command, flag in named_flags()
                      if flag not in (COMMANDS[command] | GLOBAL if command else every)})
    assert missing == []


def test_no_message_names_init_force():
    """`init --force` does not exist: a message that named it sent users to a dead end."""
    assert "--force" not in COMMANDS["init"]
    assert not [m for m in named_flags() if m[2] == "--force"]


def test_the_seed_is_the_hash_seed_in_every_command():
    """--seed is the mmh3 seed of the feature hashes wherever it is; a sample's seed is --sample-seed."""
    with_seed = {name: cmd for name, cmd in CLI.commands.items() if "--seed" in COMMANDS[name]}
    assert {"init", "groups", "explain", "tune"} <= set(with_seed)
    for name, cmd in with_seed.items():
        (param,) = [p for p in cmd.params if "--seed" in p.opts]
        assert "mmh3" in param.help, name
    for name in ("report", "tune"):
        assert "--sample-seed" in COMMANDS[name]
        assert "--hash-seed" not in COMMANDS[name]
    assert "--seed" not in COMMANDS["report"]  # the report fingerprints nothing


def test_groups_is_a_file_in_load_and_explain_takes_a_groups_dir():
    assert "--groups" in COMMANDS["load"]
    assert "--groups-dir" in COMMANDS["explain"] and "--groups" not in COMMANDS["explain"]


@pytest.mark.parametrize("name", ["init", "load", "check", "groups", "serve"])
def test_help_groups_the_options_of_the_large_commands(name):
    """--help shows the options of a command with many of them in panels by purpose."""
    panels = {getattr(p, "rich_help_panel", None) for p in CLI.commands[name].params if not p.hidden}
    assert len(panels - {None}) >= 2, panels


def test_the_library_names_arguments_and_the_cli_maps_each_to_a_flag():
    """Every library argument an error may name has its flag in command.FLAGS, and that flag
    exists; a message becomes the flags' (``--confirm 14``, ``--add-new``, ``--tokens``)."""
    from dedup_hbase.cli.command import FLAGS, as_flags
    from dedup_hbase.errors import InvalidInput

    every = set().union(GLOBAL, *COMMANDS.values())
    assert sorted(flag for flag in FLAGS.values() if flag not in every) == []
    error = InvalidInput("add_new=True with k=5, not k=; without tokens=: give tokens=FILE", arguments=("add_new", "k", "tokens"))
    assert as_flags(error) == "--add-new with --k 5, not --k; without --tokens: give --tokens FILE"
    assert as_flags(InvalidInput("k=5 but not_k=5", arguments=("k",))) == "--k 5 but not_k=5"
    assert as_flags(InvalidInput("k=5")) == "k=5"  # only the arguments it lists
