"""The smaller edges a new user meets (issue 35), each as the user meets it: a null text, a
boolean id, a slow load's rate, a ;-separated CSV, .zst input without its package, the TTL in
init's confirmation, the help text, and the service's gzip bodies, one id sent twice and
expired documents."""

import gzip
import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.jobs.corpus import read_records
from dedup_hbase.jobs.reports import LoadReport
from dedup_hbase.service.documents import RequestError
from dedup_hbase.service.handlers import DedupService
from dedup_hbase.service.online import OnlineIndex


def dedup(*args, env=None, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "dedup_hbase", *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def test_a_null_text_and_a_boolean_id_are_said_as_json_says_them(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "a", "text": null}\n{"id": true, "text": "x"}\n'
                                      '{"id": {"k": [1]}, "text": "x"}\n{"id": "b"}\n', encoding="utf-8")
    assert [r.error for r in read_records([str(tmp_path / "c.jsonl")])] == [
        "'text' is null", "bad 'id': true is a boolean (an id is a string or a whole number)",
        'bad \'id\': {"k": [1]} is an object (an id is a string or a whole number)', "no 'text' field (nor 'simhash')"]


def test_a_load_slower_than_a_document_a_second_says_its_rate():
    assert "in 30.0 s: 0.033 docs/s, 0.00 MB/s" in LoadReport(read=1, indexed=1, new=1, elapsed_s=30.0).summary()
    assert "in 0.5 s: 4,271 docs/s" in LoadReport(read=2000, indexed=2000, new=2000, elapsed_s=2000 / 4271).summary()


def test_the_progress_line_of_a_slow_load_says_its_rate(capsys, monkeypatch):
    """Off a terminal, one line every ``every`` seconds: one 50 MB document done after 30 s is
    0.033 docs/s there too, not "0 docs/s"."""
    from dedup_hbase.jobs import progress

    clock = iter([100.0, 100.0, 130.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    with progress.LoadProgress(enabled=True, every=10.0) as shown:
        shown.update(1, 50_000_000)
    assert capsys.readouterr().err.splitlines()[-1] == (
        "progress: 1 records done and checkpointed, 0.033 docs/s, 1.67 MB/s, 0 rejected")


def test_stats_reports_the_keys_it_has_read_as_it_reads_them(tmp_path, capsys, monkeypatch):
    """``stats`` reads every key: its progress counts the documents' keys, then the index's
    cells, to the last; off a terminal one line every ``every`` seconds, with the rate."""
    from dedup_hbase.jobs import progress

    store = tmp_path / "idx"
    assert dedup("init", "--store", str(store)).returncode == 0
    texts = "\n".join(json.dumps({"id": f"d{i}", "text": f"第{i}篇 长江经济带生态环境保护发生了转折性变化 {i * 7919}"})
                      for i in range(300))
    assert dedup("load", "-", "--store", str(store), stdin=texts).returncode == 0
    seen = []
    with open_store(str(store)) as opened:
        stats = Index.open(opened).stats(progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == stats["documents"] + stats["index_cells"] == 300 + 4 * 300
    clock = iter([100.0, 100.0, 110.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    with progress.CountProgress("keys", every=10.0) as shown:
        shown.update(200_000)
    assert capsys.readouterr().err.splitlines() == ["progress: 200,000 keys read, 20,000 keys/s"]


def test_a_csv_with_another_delimiter(tmp_path):
    (tmp_path / "c.csv").write_text('id;text\na;"长江经济带生态环境保护; 发生了转折性变化"\nb;国家卫生健康委员会今天通报最新疫情\n',
                                    encoding="utf-8")
    store = str(tmp_path / "idx")
    assert dedup("init", "--store", store).returncode == 0
    loaded = dedup("load", str(tmp_path / "c.csv"), "--delimiter", ";", "--json", "--store", store)
    assert loaded.returncode == 0, loaded.stderr
    assert (json.loads(loaded.stdout)["indexed"], json.loads(loaded.stdout)["rejected"]) == (2, 0)
    refused = dedup("load", str(tmp_path / "c.csv"), "--store", store)  # a comma: no id column
    assert refused.returncode == 1 and refused.stderr.startswith(f"error: {tmp_path / 'c.csv'} has no 'id' column")
    bad = dedup("check", str(tmp_path / "c.csv"), "--delimiter", ";;", "--store", store)
    assert (bad.returncode, bad.stderr) == (1, "error: a delimiter is one character (not a quote or a line break), "
                                               "not ';;'\n")


def test_zst_input_without_its_package_names_the_extra(tmp_path):
    import zstandard

    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"id": "a", "text": "x"}\n'))
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "zstandard.py").write_text("raise ModuleNotFoundError(\"No module named 'zstandard'\", "
                                                        "name='zstandard')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "blocked"), os.environ.get("PYTHONPATH", "")])}
    result = dedup("fingerprint", "--file", str(tmp_path / "c.jsonl.zst"), "--store", str(tmp_path / "none"), env=env)
    assert result.returncode == 1
    assert result.stderr in ("error: this needs the Python package zstandard, which is not installed: "
                             f"pip install {e}'.[zstd]' in the dedup-hbase folder\n" for e in ("", "-e "))


def test_init_says_the_ttl(tmp_path):
    made = dedup("init", "--ttl", "720h", "--store", str(tmp_path / "idx"))
    assert made.returncode == 0 and made.stdout.rstrip().endswith(
        ", featurizer jieba, short texts near only by their words, ttl 30d (older "
        "documents stop matching and are removed)")


def test_help_at_80_columns_names_what_options_take():
    env = {"COLUMNS": "80", "TERM": "dumb"}
    check = dedup("check", "--help", env=env).stdout
    assert "--max-matches           N " in check and "--format            FORMAT" in check  # the Input panel's own widths
    assert "<int" not in check and "<str>" not in check and "Usage: dedup-hbase check [OPTIONS] FILES..." in check
    assert "│ *    FILES...        Files or folders" in check
    refused = dedup("check", "--max-matches", "0", "-", env=env)
    assert (refused.returncode, refused.stderr) == (1, "error: max_matches is a whole number >= 1, not 0\n")
    groups = dedup("groups", "--help", env=env).stdout
    assert "--store" not in groups.replace("(no --store)", "") and "--verbose" in groups
    assert dedup("groups", "--help", "--store", "x").returncode == 0  # accepted (every command takes it), unlisted
    assert "Parquet" in dedup("load", "--help", env=env).stdout


COMMANDS = ["init", "load", "groups", "query", "check", "fingerprint", "stats", "delete", "plan", "schema", "serve",
            "pack-env", "explain", "report", "tune"]


def test_every_help_at_80_columns_names_arguments_in_words_and_breaks_no_sentence():
    """Every command's --help (and the root's) at 80 columns: no Python type as a metavar, no
    range in Python's notation, and each paragraph of a description flows to the width (a
    line of it ends early only where the next word would not fit)."""
    env = {"COLUMNS": "80", "TERM": "dumb"}
    listed = dedup("--help", env=env).stdout
    assert [c for c in COMMANDS if f"│ {c} " not in listed] == []
    usages = {}
    for name in ["", *COMMANDS]:
        shown = dedup(*[name] if name else [], "--help", env=env)
        assert shown.returncode == 0, shown.stderr
        text = shown.stdout
        assert [bad for bad in ("<list[", "<int range>", "[x>=", "<str>", "<int>") if bad in text] == [], name
        usages[name] = next(line.strip() for line in text.splitlines() if "Usage:" in line)
        assert "{" not in usages[name], usages[name]  # typer's {FILES} for a required argument
        lines = text.splitlines()
        for above, below in zip(lines, lines[1:]):
            if not above.strip() or not below.strip() or not above.startswith(" ") or "Usage:" in above:
                continue  # a panel's row, a blank line, the usage
            first = below.split()[0]
            # the description's own lines: an early end means the next word was too long for it
            assert len(above.rstrip()) + 1 + len(first) > 79, f"{name}: {above!r} / {below!r}"
    assert usages["load"] == "Usage: dedup-hbase load [OPTIONS] FILES..."
    assert usages["query"] == "Usage: dedup-hbase query [OPTIONS] [TEXT]"
    assert usages["report"] == "Usage: dedup-hbase report [OPTIONS] GROUPS_OUT [FILES]..."
    assert usages["delete"] == "Usage: dedup-hbase delete [OPTIONS] IDS..."


@pytest.fixture
def service(tmp_path):
    index = Index.create(open_store(str(tmp_path / "idx"), create=True), 4, 3, ttl=3600)
    yield DedupService(OnlineIndex(index))
    index.store.close()


def test_get_of_an_expired_document_is_a_404_before_the_sweep(service):
    now = int(time.time())
    service.online.add([Document("old", 42, {"loaded": now - 3601}), Document("new", 43, {"loaded": now}),
                        Document("short", 44, {"loaded": now - 11, "ttl": 10})], if_new=False)
    assert service.document("new")["id"] == "new"
    for doc_id in ("old", "short"):
        with pytest.raises(RequestError) as gone:
            service.document(doc_id)
        assert (gone.value.status, gone.value.body) == (
            404, {"error": f"no document {doc_id!r} (it expired; it is removed at the next sweep)"})


def test_one_id_twice_with_two_fingerprints_in_one_insert_if_new_is_refused(service):
    from dedup_hbase.service.documents import Limits, parse_documents

    two = parse_documents(b'[{"id": "a", "simhash": "0000000000000000"}, {"id": "a", "simhash": "ffffffffffffffff"}]',
                          Limits())
    with pytest.raises(RequestError) as refused:
        service.add(two, if_new=True)
    assert (refused.value.status, refused.value.body["error"]) == (
        400, "document 1 ('a'): its id is document 0's too, with another fingerprint: an insert-if-new takes one "
             "version of a document")
    assert service.online.get(["a"]) == [None]
    same = parse_documents(b'[{"id": "a", "simhash": "0000000000000000"}, {"id": "a", "simhash": "0000000000000000"}]',
                           Limits())
    assert [a["added"] for a in service.add(same, if_new=True)] == [True, False]  # a retry in one call: added once


def test_a_gzip_body_is_read_and_another_encoding_refused(tmp_path):
    store = str(tmp_path / "idx")
    assert dedup("init", "--store", store, "--short-texts", "off").returncode == 0  # it adds a simhash alone
    proc = subprocess.Popen([sys.executable, "-m", "dedup_hbase", "serve", "--store", store, "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("serving "), line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        body = json.dumps([{"id": "a", "simhash": "5ddcd9e58abddc86"}]).encode()
        with httpx.Client(base_url=url, timeout=60) as client:
            added = client.post("/v1/add", content=gzip.compress(body),
                                headers={"content-encoding": "gzip", "content-type": "application/json"})
            assert added.status_code == 200 and added.json()[0]["added"]
            plain = client.post("/v1/check", content=body)
            zipped = client.post("/v1/check", content=gzip.compress(body), headers={"content-encoding": "gzip"})
            assert zipped.status_code == plain.status_code == 200 and zipped.json() == plain.json()
            assert plain.json()[0]["matches"][0]["id"] == "a"
            other = client.post("/v1/check", content=body, headers={"content-encoding": "br"})
            assert (other.status_code, other.json()) == (
                415, {"error": "Content-Encoding 'br' is not supported: send gzip, or the body as it is"})
            cut = client.post("/v1/check", content=gzip.compress(body)[:-12], headers={"content-encoding": "gzip"})
            assert (cut.status_code, cut.json()) == (400, {"error": "the body's gzip data is cut off"})
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_the_check_add_new_summary_says_what_was_added():
    from dedup_hbase.jobs.reports import CheckReport

    report = CheckReport(read=150, with_matches=100, added=150, skipped=0, out="/o", elapsed_s=1.0)
    assert report.summary() == ("checked 150 documents: 100 with matches, 0 rejected; added the 150 that match no other "
                                "document, in the index or earlier in the input (skipped 0 that do); records in /o")
    assert CheckReport(read=3, with_matches=1, out="/o").summary() == (
        "checked 3 documents: 1 with matches, 0 rejected; records in /o")
