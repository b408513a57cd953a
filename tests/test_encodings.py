"""Inputs in other encodings than UTF-8 (--encoding: gb18030, big5, auto) and byte-order marks,
through the real command line (text/encodings.py, jobs/corpus.py)."""

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dedup_hbase.jobs.corpus import Fields, read_records
from dedup_hbase.text.encodings import check_encoding, detect

from conftest import require_or_skip

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd=None, input=None):
    """dedup-hbase of this checkout, in a real process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dedup_hbase", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, input=input)


def same_index(a: str, b: str) -> None:
    """Two indexes hold the same documents and rows: their stats (but name and creation time)
    and every document's check record alike."""
    def stats(store):
        got = json.loads(cli("stats", "--json", "--store", store).stdout)
        return {k: v for k, v in got.items() if k not in ("store", "created")}
    assert stats(a) == stats(b)


@pytest.fixture(scope="module")
def archive(tmp_path_factory, xwlb_path):
    """A small archive of the shared news corpus, in UTF-8 and converted by iconv to GB18030:
    four JSON lines files and ten text files (one document each) in a folder."""
    if shutil.which("iconv") is None:
        require_or_skip("iconv (libc-bin) is not installed")
    root = tmp_path_factory.mktemp("archive")
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(410), f)]
    utf8 = root / "utf8"
    utf8.mkdir()
    for part in range(4):
        (utf8 / f"part-{part}.jsonl").write_text(
            "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs[part * 100:(part + 1) * 100]), encoding="utf-8")
    for i, d in enumerate(docs[400:]):
        (utf8 / f"page-{i}.txt").write_text(d["text"], encoding="utf-8")
    gbk = root / "gb18030"
    gbk.mkdir()
    for f in sorted(utf8.iterdir()):
        with open(f, "rb") as src, open(gbk / f.name, "wb") as dst:
            subprocess.run(["iconv", "-f", "utf-8", "-t", "gb18030"], stdin=src, stdout=dst, check=True)
    return utf8, gbk


def loaded(tmp_path, name: str, folder: Path, *options: str) -> tuple[str, subprocess.CompletedProcess]:
    store = str(tmp_path / name)
    assert cli("init", "--store", store).returncode == 0
    return store, cli("load", str(folder), "--store", store, *options)


def test_a_gb18030_archive_loads_as_its_utf8_original(tmp_path, archive):
    utf8, gbk = archive
    original, load = loaded(tmp_path, "utf8", utf8)
    assert load.returncode == 0 and "read 410, indexed 410" in load.stderr
    refused, load = loaded(tmp_path, "refused", gbk)
    assert load.returncode == 3
    assert "rejected 14 (14 binary data, not text (mostly bytes that are not UTF-8; --encoding gb18030, big5 or auto " \
           "reads other encodings))" in load.stderr
    named, load = loaded(tmp_path, "gb18030", gbk, "--encoding", "gb18030")
    assert load.returncode == 0 and "read 410, indexed 410 (410 new), rejected 0" in load.stderr
    detected, load = loaded(tmp_path, "auto", gbk, "--encoding", "auto")
    assert load.returncode == 0 and "read 410, indexed 410 (410 new), rejected 0" in load.stderr
    said = [line for line in load.stderr.splitlines() if "--encoding auto" in line]
    assert said == [f"{gbk / name}: read as GB18030 (--encoding auto)" for name in sorted(os.listdir(gbk))]
    for store in (named, detected):
        same_index(original, store)
    checks = {cli("check", str(utf8), "--json", "--store", store).stdout for store in (original, named, detected)}
    assert len(checks) == 1 and len(checks.pop().splitlines()) == 410
    # the GBK files checked in their encoding find what their originals find
    assert cli("check", str(gbk), "--json", "--encoding", "gbk", "--store", original).stdout == \
        cli("check", str(utf8), "--json", "--store", original).stdout


def test_every_command_that_reads_text_takes_encoding():
    for command in ("load", "check", "groups", "fingerprint", "query", "explain", "report", "tune"):
        assert "--encoding" in cli(command, "--help").stdout, command


def test_an_unknown_encoding_is_refused_in_one_line(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "a", "text": "x"}\n')
    got = cli("fingerprint", "--file", str(tmp_path / "a.jsonl"), "--encoding", "klingon")
    assert got.returncode == 1
    assert got.stderr == ("error: unknown encoding 'klingon': choose utf-8, gb18030, big5, auto (auto: detected per "
                          "file), or another Python codec name\n")
    assert [check_encoding(n) for n in ("GBK", "gb2312", "UTF8", "cp950", "auto")] == \
        ["gb18030", "gb18030", "utf-8", "big5", "auto"]


def records(path: Path, fmt="auto", **fields):
    return [(r.line, r.id, r.text, r.error) for r in read_records([str(path)], fmt, fields=Fields(**fields))]


TEXT = "國家衛生健康委員會今天通報最新疫情，臺灣同胞"


def test_big5_and_bytes_of_no_encoding(tmp_path):
    path = tmp_path / "big5.jsonl"
    path.write_bytes(json.dumps({"id": "t", "text": TEXT}, ensure_ascii=False).encode("big5") + b"\n"
                     + b'{"id": "u", "text": "\xff\xff"}\n')
    assert records(path, encoding="big5") == [(1, "t", TEXT, None), (2, None, None, "invalid Big5")]
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(bytes(range(1, 256)) * 40)
    assert records(junk, encoding="auto") == [(1, None, None, "binary data, not text (no encoding fits its bytes)")]
    assert detect(b"plain ascii") == "utf-8"


@pytest.mark.parametrize("encoding", ["utf-8", "auto"])
def test_byte_order_marks_are_dropped(tmp_path, encoding):
    bom = b"\xef\xbb\xbf"
    (tmp_path / "a.jsonl").write_bytes(bom + b'{"id": "j", "text": "json line"}\n')
    (tmp_path / "b.csv").write_bytes(bom + b"id,text\nc,csv row\n")
    (tmp_path / "c.tsv").write_bytes(bom + b"id\ttext\nt,x\ttsv row\n")
    (tmp_path / "d.txt").write_bytes(bom + b"a text file")
    folder = [(r.id, r.text, r.error) for r in read_records([str(tmp_path)], fields=Fields(encoding=encoding))]
    assert folder == [("j", "json line", None), ("c", "csv row", None), ("t,x", "tsv row", None),
                      ("d.txt", "a text file", None)]
    lines = tmp_path / "e.lines"
    lines.write_bytes(bom + b"first line\nsecond\n")
    assert records(lines, "lines", encoding=encoding) == [(1, "e.lines:1", "first line", None), (2, "e.lines:2", "second", None)]
    gb = tmp_path / "f.jsonl"
    gb.write_bytes(b"\x84\x31\x95\x33" + '{"id": "g", "text": "国家"}\n'.encode("gb18030"))
    assert records(gb, encoding="gb18030") == [(1, "g", "国家", None)]


def test_a_bom_before_a_csv_header_is_not_part_of_its_first_column(tmp_path):
    (tmp_path / "b.csv").write_bytes(b"\xef\xbb\xbfid,text\nc,some words of a row\n")
    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    got = cli("load", str(tmp_path / "b.csv"), "--store", store)
    assert got.returncode == 0 and "read 1, indexed 1 (1 new), rejected 0" in got.stderr


def test_the_service_reads_a_body_in_the_charset_its_content_type_names(tmp_path):
    import httpx

    from serving import started

    store = str(tmp_path / "idx")
    assert cli("init", "--store", store).returncode == 0
    doc = [{"id": "a", "text": "国家卫生健康委员会今天通报最新疫情：全国新增本土确诊病例十二例"}]
    body = json.dumps(doc, ensure_ascii=False)
    with started(store, log=tmp_path / "serve.log") as (url, _):
        with httpx.Client(base_url=url, timeout=60) as client:
            def post(data: bytes, content_type: str, path: str = "/v1/check"):
                return client.post(path, content=data, headers={"content-type": content_type})
            assert post(body.encode("gb18030"), "application/json; charset=GBK", "/v1/add").status_code == 200
            utf8 = client.post("/v1/check", content=body.encode(), headers={"content-type": "application/json"})
            gbk = post(body.encode("gb18030"), 'application/json; charset="gb18030"')
            assert gbk.status_code == 200 and gbk.json() == utf8.json() and utf8.json()[0]["matches"][0]["id"] == "a"
            assert post(body.encode("big5", "replace"), "application/json; charset=big5").status_code == 200
            unknown = post(body.encode(), "application/json; charset=klingon")
            assert (unknown.status_code, unknown.json()) == (415, {"error": "charset 'klingon' is not supported: send "
                                                                            "UTF-8, GB18030 (GBK), Big5 or another "
                                                                            "charset Python reads"})
            wrong = post(b'[{"id": "b", "text": "\xff\xff"}]', "application/json; charset=big5")
            assert (wrong.status_code, wrong.json()["error"]) == (
                400, "the body is not Big5, as its Content-Type says: a bad byte at byte 22")
