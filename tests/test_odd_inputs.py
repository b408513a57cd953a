"""File names of any bytes and files or folders that cannot be read: each a reject like any
other (file, line, reason), carried through messages and --rejects; the rest goes on."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import require_or_skip

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, as_nobody=False):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/tmp"}
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if as_nobody else []
    return subprocess.run([*prefix, sys.executable, "-m", "dedup_hbase", *args], capture_output=True, env=env)


def test_a_file_name_that_is_not_utf8_is_carried_through_rejects(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    name = b"\xc8\xcb\xc3\xf1.txt"  # 人民 in GBK: not UTF-8
    (folder / os.fsdecode(name)).write_bytes("国家卫生健康委员会今天通报最新疫情".encode())
    (folder / "ok.txt").write_text("长江经济带生态环境保护发生了转折性变化", encoding="utf-8")
    store, rejects = str(tmp_path / "idx"), tmp_path / "rejects.jsonl"
    assert cli("init", "--store", store).returncode == 0
    load = cli("load", str(folder), "--store", store, "--rejects", str(rejects))
    assert load.returncode == 0, load.stderr
    assert b"Traceback" not in load.stderr and b"read 2, indexed 1 (1 new), rejected 1" in load.stderr
    [line] = rejects.read_bytes().splitlines()
    line.decode("utf-8")  # the file is UTF-8 JSON lines
    reject = json.loads(line)
    assert os.fsencode(reject["source"]) == os.fsencode(str(folder)) + b"/" + name  # the name's bytes, escaped
    assert reject["reason"].startswith("a document id is valid Unicode text")


def test_an_unreadable_file_or_folder_is_a_reject_and_the_rest_is_loaded():
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        require_or_skip("root reads any file, and setpriv (util-linux), to read as nobody, is not installed")
    base = Path(tempfile.mkdtemp(prefix="dedup-unreadable-"))
    try:
        base.chmod(0o777)
        folder = base / "corpus"
        (folder / "closed").mkdir(parents=True)
        (folder / "closed" / "x.txt").write_text("a page nobody may list")
        (folder / "a.txt").write_text("国家卫生健康委员会今天通报最新疫情", encoding="utf-8")
        (folder / "b.txt").write_text("长江经济带生态环境保护发生了转折性变化", encoding="utf-8")
        (folder / "b.txt").chmod(0o000)
        (folder / "closed").chmod(0o000)
        for p in (folder, folder / "a.txt"):
            p.chmod(0o777 if p.is_dir() else 0o666)
        store, rejects = str(base / "idx"), base / "rejects.jsonl"
        nobody = os.geteuid() == 0
        assert cli("init", "--store", store, as_nobody=nobody).returncode == 0
        load = cli("load", str(folder), "--store", store, "--rejects", str(rejects), as_nobody=nobody)
        assert load.returncode == 3, load.stderr
        err = load.stderr.decode()
        assert "Traceback" not in err and "read 3, indexed 1 (1 new), rejected 2 (2 unreadable input)" in err
        assert err.strip().endswith(f"error: {folder / 'closed'}: unreadable input: Permission denied (and 1 more "
                                    "inputs): give it read permission (or copy it) and run the same command again")
        got = [json.loads(line) for line in rejects.read_text().splitlines()]
        assert got == [{"source": str(folder / "closed"), "line": 1, "id": None, "reason": "unreadable input: Permission denied"},
                       {"source": str(folder / "b.txt"), "line": 1, "id": "b.txt", "reason": "unreadable input: Permission denied"}]
    finally:
        for p in base.rglob("*"):
            p.chmod(0o777)
        shutil.rmtree(base)


def test_a_rejected_check_record_has_every_records_keys(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "国家卫生健康委员会今天通报最新疫情"}\n{bad\n', encoding="utf-8")
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    check = cli("check", str(path), "--json", "--store", store)
    records = [json.loads(line) for line in check.stdout.splitlines()]
    assert [r["matches"] for r in records] == [[], []]
    assert records[1] == {"id": None, "source": str(path), "line": 2, "error": "malformed JSON: Expecting property name "
                          "enclosed in double quotes at column 2", "simhash": None, "matches": []}


def test_a_store_that_is_a_regular_file_is_named_as_such(tmp_path):
    (tmp_path / "afile").write_text("")
    message = (f"error: {tmp_path / 'afile'} is a file, not a folder: an embedded store's URL names its folder "
               "(init creates it; give a new path)\n").encode()
    for command in (["stats"], ["init"]):
        got = cli(*command, "--store", str(tmp_path / "afile"))
        assert (got.returncode, got.stderr) == (1, message)


def test_a_usage_error_exits_2_as_documented():
    got = cli("load", "--no-such-option")
    assert got.returncode == 2
    assert "2 for a usage error" in (ROOT / "docs" / "commands.md").read_text()


def test_one_rule_for_what_a_path_holds_in_every_command(tmp_path):
    """A .txt file is one document, whole, in load, check, groups, query --file and fingerprint
    --file, named by itself or in a folder; --format lines makes each line a document."""
    text = "国家卫生健康委员会今天通报最新疫情：全国新增本土确诊病例十二例\n其中广东五例、上海四例、北京三例，无新增死亡病例"
    page = tmp_path / "page.txt"
    page.write_text(text, encoding="utf-8")
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "page.txt").write_text(text, encoding="utf-8")
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    assert b"read 1, indexed 1 (1 new)" in cli("load", str(page), "--store", store).stderr
    in_folder = cli("load", str(folder), "--store", store, "--restart")
    assert in_folder.returncode == 0 and b"read 1, indexed 1" in in_folder.stderr
    [checked] = [json.loads(line) for line in cli("check", str(page), "--json", "--store", store).stdout.splitlines()]
    assert checked["id"] == "page.txt" and checked["matches"][0]["distance"] == 0
    queried = json.loads(cli("query", "--file", str(page), "--json", "--store", store).stdout)
    assert queried["simhash"] == checked["simhash"]
    [fingerprinted] = [json.loads(line) for line in
                       cli("fingerprint", "--file", str(page), "--json", "--store", store).stdout.splitlines()]
    assert fingerprinted["simhash"] == checked["simhash"]
    groups = cli("groups", str(page), "--out", str(tmp_path / "g"), "--json")
    assert json.loads(groups.stdout)["read"] == 1
    lines = [json.loads(line) for line in
             cli("check", str(page), "--format", "lines", "--json", "--store", store).stdout.splitlines()]
    assert [r["id"] for r in lines] == ["page.txt:1", "page.txt:2"]
    several = cli("query", "--file", str(page), "--format", "lines", "--store", store)
    assert (several.returncode, several.stderr) == (
        1, f"error: {page} holds 2 documents: query looks up one (check FILE looks up each)\n".encode())


def test_the_load_summary_comes_once_the_store_is_closed(tmp_path, xwlb_path):
    """The summary line is printed when the load's work is done, the store's close included:
    stopped (SIGSTOP) at that line, the load holds the store no more, and a second load opens
    it for writing."""
    import signal

    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "o", "text": "长江经济带生态环境保护发生了转折性变化"}\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "dedup_hbase", "load", str(xwlb_path), "--store", store, "--quiet"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()
        proc.send_signal(signal.SIGSTOP)
        assert line.startswith("read 19339, indexed 19339"), line
        second = cli("load", str(other), "--store", store)
        assert second.returncode == 0 and b"read 1, indexed 1" in second.stderr, second.stderr
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.communicate(timeout=120)
    assert proc.returncode == 0


# A load whose store merges its recent writes as it closes, Ctrl-C (a real SIGINT, sent to
# itself) arriving as the merge starts: the point is exact, whatever the machine's speed.
INTERRUPTED_CLOSE = """
import os, signal, sys
from dedup_hbase.stores.local import packed
merge = packed.PackedTable.merge
def interrupted(self):
    os.kill(os.getpid(), signal.SIGINT)
    merge(self)
packed.PackedTable.merge = interrupted
from dedup_hbase.__main__ import main
sys.argv[0] = "dedup-hbase"
sys.exit(main())
"""


def test_ctrl_c_while_the_store_closes_says_what_state_the_store_is_in(tmp_path):
    """Ctrl-C during a load's close (the embedded store merging its writes): status 130, one line
    saying every record is written and the merge comes at the next open; that open finds them."""
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store, "--short-texts", "off").returncode == 0  # fingerprints alone
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "simhash": f"{i * 0x9E3779B97F4A7C15 % 2**64:016x}"}) + "\n"
                              for i in range(5000)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_CLOSE, "load", "--fingerprints", "--store", store, "-q",
                           str(corpus)], capture_output=True, text=True, env=env, timeout=300)
    assert (done.returncode, done.stderr) == (130, (
        "interrupted by SIGINT: while the store closed, after the load finished: every record is written and "
        "checkpointed; the writes not yet merged are merged when the store is next opened (that open is slower)\n"))
    stats = json.loads(cli("stats", "--json", "--store", store).stdout)
    assert (stats["documents"], stats["index_cells"]) == (5000, 20000)
    again = json.loads(cli("load", "--fingerprints", "--json", "--store", store, str(corpus)).stdout)
    assert (again["already_complete"], again["read"]) == (True, 5000)  # the load's end was checkpointed


def test_check_engine_spark_on_the_embedded_store_says_it_needs_hbase_first(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "a", "text": "国家卫生健康委员会"}\n', encoding="utf-8")
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    got = cli("check", str(tmp_path / "a.jsonl"), "--engine", "spark", "--store", store)
    assert (got.returncode, got.stderr) == (
        1, b"error: check --engine spark reads an HBase index (hbase://...); use the local engine here\n")


def test_shell_completion_is_offered():
    help_text = cli("--help").stdout
    assert b"--install-completion" in help_text and b"--show-completion" in help_text
    script = cli("--show-completion", "bash")
    assert script.returncode == 0 and b"_DEDUP_HBASE_COMPLETE=complete_bash" in script.stdout


def test_the_same_id_twice_in_one_load_is_said(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"id": "a", "text": "国家卫生健康委员会今天通报最新疫情"}\n'
                    '{"id": "a", "text": "长江经济带生态环境保护发生了转折性变化"}\n', encoding="utf-8")
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    load = cli("load", str(path), "--store", store)
    assert load.returncode == 0
    assert load.stderr.decode().splitlines()[1] == ("note: 1 records had the id of an earlier record of the load: "
                                                    "the last of each id is kept")
    [kept] = [json.loads(line) for line in cli("check", str(path), "--json", "--store", store).stdout.splitlines()][1:]
    assert [m["id"] for m in kept["matches"]] == ["a"]
