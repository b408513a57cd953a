"""The command line, driven the way users (and the held-out evaluation) drive it."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.text.fingerprint import hamming, parse_hex

DOCS = [
    {"id": "a1", "text": "国家卫生健康委员会今天通报最新疫情：全国新增本土确诊病例十二例，其中广东五例、上海四例、北京三例，无新增死亡病例。"},
    {"id": "a2", "text": "国家卫生健康委员会今天通报最新疫情：全国新增本土确诊病例十二例，其中广东五例、上海四例、北京三例，无新增死亡病例"},
    {"id": "b1", "text": "长江经济带生态环境保护发生了转折性变化，经济社会发展取得历史性成就，沿江省市共抓大保护、不搞大开发。"},
    {"id": "c1", "text": "The Jargon File is a glossary of hacker slang, maintained for decades by volunteers."},
]


def run(*args, env=None, cwd=None, input=None):
    """The installed console script, in a real process."""
    return subprocess.run(["dedup-hbase", *args], capture_output=True, text=True, input=input,
                          env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture
def loaded(tmp_path, corpus):
    store = str(tmp_path / "idx")
    runner = CliRunner()
    # without the short-text rule (the default's): its tests look up and load simhashes alone
    assert runner.invoke(app, ["init", "--store", store, "--short-texts", "off"]).exit_code == 0
    result = runner.invoke(app, ["load", "--store", store, str(corpus)])
    assert result.exit_code == 0, result.output
    return store


def test_exact_forms_end_to_end(tmp_path, corpus):
    env = {"DEDUP_HBASE_STORE": str(tmp_path / "env-store")}
    init = run("init", env=env)
    assert init.returncode == 0 and "scheme 4" in init.stdout
    load = run("load", str(corpus), env=env)
    assert load.returncode == 0
    assert "read 4, indexed 4 (4 new), rejected 0" in load.stderr
    check = run("check", str(corpus), "--json", env=env)
    lines = [json.loads(line) for line in check.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["a1", "a2", "b1", "c1"]
    by_id = {line["id"]: line for line in lines}
    assert [m["id"] for m in by_id["a1"]["matches"]] == ["a1", "a2"]
    for line in lines:
        assert {"id": line["id"], "simhash": line["simhash"], "distance": 0} in line["matches"]
        assert all(m["distance"] == hamming(parse_hex(m["simhash"]), parse_hex(line["simhash"]))
                   for m in line["matches"])
        assert [(m["distance"], m["id"]) for m in line["matches"]] == sorted(
            (m["distance"], m["id"]) for m in line["matches"])
    query = json.loads(run("query", DOCS[2]["text"], "--json", env=env).stdout)
    assert query["simhash"] == by_id["b1"]["simhash"] and [m["id"] for m in query["matches"]] == ["b1"]
    fp = run("fingerprint", "--file", str(corpus), "--json", env=env)
    assert [json.loads(x) for x in fp.stdout.splitlines()] == [
        {"id": x["id"], "simhash": x["simhash"], "featurizer": "jieba/2;seed=0"} for x in lines]
    assert run("fingerprint", DOCS[3]["text"], env=env).stdout.strip() == by_id["c1"]["simhash"]
    stats = json.loads(run("stats", "--json", env=env).stdout)
    assert {k: stats[k] for k in ("documents", "index_rows", "scheme", "k")} == {
        "documents": 4, "index_rows": 12, "scheme": "4", "k": 3}  # a1 and a2 share 4 rows
    assert stats["featurizer"]["name"] == "jieba"


def test_default_store_is_a_folder_in_the_current_directory(tmp_path, corpus):
    env = {"DEDUP_HBASE_STORE": ""}
    os.environ.pop("DEDUP_HBASE_STORE", None)
    assert run("init", "--scheme", "5", cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / "dedup-index").is_dir()
    assert json.loads(run("stats", "--json", cwd=tmp_path, env=env).stdout)["scheme"] == "5"


def test_query_inputs(loaded):
    runner = CliRunner()
    target = DOCS[0]["text"]
    by_text = json.loads(runner.invoke(app, ["query", target, "--store", loaded, "--json"]).stdout)
    by_stdin = json.loads(runner.invoke(app, ["query", "--store", loaded, "--json"], input=target).stdout)
    by_hex = json.loads(runner.invoke(app, ["query", "--simhash", by_text["simhash"], "--store", loaded,
                                            "--json"]).stdout)
    assert by_text == by_stdin == by_hex
    assert [m["id"] for m in by_text["matches"]] == ["a1", "a2"]
    human = runner.invoke(app, ["query", target, "--store", loaded, "-k", "0"]).stdout
    assert human.startswith(f"simhash {by_text['simhash']}: 2 matches within 0 bits")


def test_load_accounting_and_rejects_file(tmp_path, loaded):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "x1", "text": "\xe5\x9b\xbd\xe5\xae\xb6\xe5\x8d\xab\xe7\x94\x9f"}\n'
                    b'{"id": "x2"}\n{oops\n{"id": "x3", "text": "!!!"}\n{"id": "x4", "text": "bad \xff"}\n')
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(app, ["load", str(bad), "--store", loaded, "--rejects", str(rejects), "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert (report["read"], report["indexed"], report["rejected"]) == (5, 1, 4)
    assert report["read"] == report["indexed"] + report["rejected"]
    assert report["rejected_by_reason"] == {"no 'text' field (nor 'simhash')": 1, "malformed JSON": 1,
                                            "featureless text": 1, "invalid UTF-8": 1}
    kept = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["line"], r["id"]) for r in kept] == [(2, "x2"), (3, None), (4, "x3"), (5, None)]
    assert all(r["source"] == str(bad) for r in kept)


def test_reload_changes_nothing(loaded, corpus):
    runner = CliRunner()
    before = json.loads(runner.invoke(app, ["stats", "--store", loaded, "--json"]).stdout)
    report = json.loads(runner.invoke(app, ["load", str(corpus), "--store", loaded, "--json"]).stdout)
    assert report["already_complete"] is True and report["read"] == 4
    again = runner.invoke(app, ["load", str(corpus), "--store", loaded])
    assert again.stderr.startswith("already loaded (read 4, indexed 4): nothing to do")
    report = json.loads(runner.invoke(app, ["load", str(corpus), "--store", loaded, "--json", "--restart"]).stdout)
    assert (report["indexed"], report["new"], report["already_complete"]) == (4, 0, False)
    after = json.loads(runner.invoke(app, ["stats", "--store", loaded, "--json"]).stdout)
    assert {k: v for k, v in before.items()} == after


def test_fingerprints_load_and_delete(tmp_path, loaded):
    fps = tmp_path / "fps.jsonl"
    fps.write_text('{"id": "f1", "simhash": "00000000000000ff"}\n{"id": "f2", "simhash": "00000000000000fe", "text": "x"}\n')
    runner = CliRunner()
    report = json.loads(runner.invoke(app, ["load", "--fingerprints", str(fps), "--store", loaded, "--json"]).stdout)
    assert report["indexed"] == 2
    out = json.loads(runner.invoke(app, ["query", "--simhash", "00000000000000ff", "--store", loaded, "--json"]).stdout)
    assert [(m["id"], m["distance"]) for m in out["matches"]] == [("f1", 0), ("f2", 1)]
    deleted = json.loads(runner.invoke(app, ["delete", "f1", "nope", "--store", loaded, "--json"]).stdout)
    assert deleted == {"deleted": ["f1"], "missing": ["nope"]}
    out = json.loads(runner.invoke(app, ["query", "--simhash", "00000000000000ff", "--store", loaded, "--json"]).stdout)
    assert [m["id"] for m in out["matches"]] == ["f2"]


def test_plan_takes_a_count_as_people_write_it():
    """--docs 1e9, 1_000_000_000 and 1,000,000,000 are 1000000000; a fraction or a word is refused
    saying what is wanted."""
    want = CliRunner().invoke(app, ["plan", "--docs", "1000000000", "--json"]).stdout
    for given in ("1e9", "1_000_000_000", "1,000,000,000"):
        assert CliRunner().invoke(app, ["plan", "--docs", given, "--json"]).stdout == want
    for bad in ("1.5", "many", "0"):
        refused = CliRunner().invoke(app, ["plan", "--docs", bad])
        assert refused.exit_code == 2 and "Invalid value for '--docs'" in refused.output, refused.output


def test_plan_numbers():
    out = [json.loads(x) for x in CliRunner().invoke(app, ["plan", "--docs", "1000000000", "--json"]).stdout.splitlines()]
    four, five = out[0], out[1]
    assert (four["index_rows"], round(four["candidates"])) == (4 * 10**9, round(4 * 10**9 / 2**16))
    assert (five["index_rows"], round(five["candidates"])) == (10 * 10**9, round(10**9 * (6 / 2**26 + 4 / 2**25)))
    human = CliRunner().invoke(app, ["plan", "--docs", "1000000"]).stdout
    assert "61.0" in human and "candidates/lookup" in human
    sketched = [json.loads(x) for x in CliRunner().invoke(app, ["plan", "--docs", "1000000000", "--k", "8", "--confirm",
                                                                "14", "--json"]).stdout.splitlines()]
    plain = [json.loads(x) for x in CliRunner().invoke(app, ["plan", "--docs", "1000000000", "--k", "8", "--json"]
                                                       ).stdout.splitlines()]
    for a, b in zip(sketched, plain):  # the same rows, each cell 10 bytes more (the escaped id's end and the sketch)
        assert (a["index_rows"], a["key_bytes"] - b["key_bytes"]) == (b["index_rows"], 10 * b["index_rows"])
    refused = CliRunner().invoke(app, ["plan", "--docs", "1000", "--confirm", "14"])
    assert refused.exit_code == 1 and "--confirm confirms matches beyond 3 bits" in refused.stderr


def test_schema_ddl():
    out = CliRunner().invoke(app, ["schema", "--table-prefix", "news"]).stdout
    assert "create 'news_index', {NAME => 'd', VERSIONS => 1, BLOOMFILTER => 'ROWPREFIX_FIXED_LENGTH'" in out
    assert "COMPRESSION => 'GZ', BLOCKSIZE => '8192', CONFIGURATION" in out
    assert "'RowPrefixBloomFilter.prefix_length' => '5'" in out
    assert "SPLITS => ['\\x10', '\\x20'," in out and "'\\xF0']" in out
    assert "create 'news_docs'" in out and "create 'news_meta'" in out


@pytest.mark.parametrize("args,message", [
    (["stats"], "error: no index at {store}: create one with `dedup-hbase init`"),
    (["init", "--scheme", "7"], "error: unknown scheme '7'"),
    (["init", "--scheme", "4", "--k", "4"], "error: k=4 is more than scheme 4 can guarantee"),
    (["load", "nothere.jsonl"], "error: no index at"),
    (["query", "--simhash", "xyz"], "error: no index at"),
])
def test_clear_errors_without_traceback(tmp_path, args, message):
    store = str(tmp_path / "none")
    result = run(*args, "--store", store)
    assert result.returncode == 1
    assert result.stderr.startswith(message.format(store=store))
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_featurizer_mismatch_and_bad_input_errors(tmp_path, loaded):
    result = run("fingerprint", "some text", "--featurizer", "shingles", "--store", loaded)
    assert result.returncode == 1
    assert "was built with featurizer jieba v2 (seed 0), not shingles v1 (n=4; seed 0)" in result.stderr
    result = run("load", str(tmp_path / "missing.jsonl"), "--store", loaded)
    assert (result.returncode, result.stderr.strip()) == (1, f"error: no such file or folder: {tmp_path / 'missing.jsonl'}")
    result = run("query", "--simhash", "xyz", "--store", loaded)
    assert (result.returncode, result.stderr.strip()) == (1, "error: a simhash is 16 hex digits, not 'xyz'")
    result = run("init", "--store", loaded)
    assert result.returncode == 1 and "already holds an index" in result.stderr


def test_index_of_jieba_version_1_is_refused_with_what_to_do(loaded):
    from dedup_hbase.stores import open_store

    store = open_store(loaded)
    (raw,) = store.get("meta", [b"config"])
    config = json.loads(raw)
    config["fingerprint"].update(version=1, params={"hmm": True})  # as dedup-hbase 0.1.0 wrote it
    store.put("meta", [(b"config", json.dumps(config).encode())])
    store.close()
    for args in (["query", "some text"], ["load", "-"], ["stats"]):
        result = run(*args, "--store", loaded, input="")
        assert result.returncode == 1
        assert result.stderr == ("error: the index was built with featurizer jieba version 1, this dedup-hbase has "
                                 "version 2: fingerprints from different featurizer versions are not comparable; "
                                 "create a new index (dedup-hbase init --store NEW) and load the documents into it "
                                 "again\n")


def test_python_dash_m_and_help():
    result = subprocess.run([sys.executable, "-m", "dedup_hbase", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for command in ("init", "load", "query", "check", "fingerprint", "stats", "delete", "plan", "schema"):
        assert command in result.stdout
    assert "DEDUP_HBASE_STORE" in run("load", "--help").stdout


def test_global_options_before_or_after_the_command(loaded):
    runner = CliRunner()
    forms = [["--store", loaded, "stats", "--json"], ["stats", "--store", loaded, "--json"],
             ["stats", "--json", "-s", loaded], [f"--store={loaded}", "stats", "--json"]]
    outputs = [runner.invoke(app, args) for args in forms]
    assert all(o.exit_code == 0 for o in outputs), [o.output for o in outputs]
    assert len({o.stdout for o in outputs}) == 1 and json.loads(outputs[0].stdout)["documents"] == 4


def test_version_and_verbose(tmp_path):
    from dedup_hbase import __version__
    from dedup_hbase.text.native import describe

    assert run("--version").stdout == f"dedup-hbase {__version__}; fingerprints: {describe()}\n"
    quiet = run("stats", "--store", str(tmp_path / "none"))
    loud = run("stats", "--store", str(tmp_path / "none"), "--verbose")
    assert quiet.returncode == loud.returncode == 1
    assert "Traceback" not in quiet.stderr and "Traceback" in loud.stderr
    assert loud.stderr.splitlines()[-1] == quiet.stderr.strip() == f"error: no index at {tmp_path / 'none'}: " \
        "create one with `dedup-hbase init`"


def test_shingle_size_needs_the_shingles_featurizer(tmp_path):
    result = run("init", "--store", str(tmp_path / "x"), "--featurizer", "jieba", "--shingle-size", "3")
    assert (result.returncode, result.stderr) == (1, "error: a shingle size applies to the shingles featurizer, "
                                                      "not to jieba\n")
    assert not (tmp_path / "x").exists()
