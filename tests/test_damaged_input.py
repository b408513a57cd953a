"""A cut-off or corrupt compressed input (a half-downloaded .gz, .bz2, .xz or .zst, from a file or
stdin) is a rejected record after the last whole one, not a lost job: the records before the cut
are read (and indexed, checked, grouped, fingerprinted), the damage is one line naming the file
and the last good line, and the job exits with status 3."""

import bz2
import gzip
import io
import json
import lzma
import os
import random
import subprocess
import sys
import zlib

import pytest
import zstandard

from dedup_hbase.jobs.compressed import DamagedInput, decompressed
from dedup_hbase.jobs.corpus import read_records

_RANDOM = random.Random(35)
DOCS = [{"id": f"d{i:04d}", "text": "".join(chr(_RANDOM.randrange(0x4E00, 0x4E00 + 2000))
                                            for _ in range(_RANDOM.randrange(20, 300)))} for i in range(3000)]
PLAIN = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS).encode()
PACK = {"gz": lambda b: gzip.compress(b, mtime=0), "bz2": lambda b: bz2.compress(b, 1), "xz": lzma.compress,
        "zst": lambda b: zstandard.ZstdCompressor(write_checksum=True).compress(b)}


def reference_prefix(kind: str, data: bytes) -> bytes:
    """What the standard one-shot decompressors make of the bytes there are (the reference)."""
    if kind == "zst":
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    decompressor = {"gz": lambda: zlib.decompressobj(31), "bz2": bz2.BZ2Decompressor,
                    "xz": lzma.LZMADecompressor}[kind]()
    return decompressor.decompress(data)


def whole_lines(kind: str, data: bytes) -> int:
    out = reference_prefix(kind, data)
    return out[:out.rfind(b"\n") + 1].count(b"\n")


CUTS = [0.05, 0.5, 0.93, -1]  # a share of the compressed bytes; -1: all but the last byte


def cut(kind: str, where: float) -> bytes:
    data = PACK[kind](PLAIN)
    return data[:len(data) - 1] if where == -1 else data[:int(len(data) * where)]


@pytest.mark.parametrize("where", CUTS)
@pytest.mark.parametrize("kind", list(PACK))
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_the_records_before_the_cut_then_one_reject(tmp_path, kind, where, source):
    data = cut(kind, where)
    whole = whole_lines(kind, data)
    assert where != -1 or whole == len(DOCS)  # the last byte cut: every record is there, the end is not
    if source == "file":
        (tmp_path / f"c.jsonl.{kind}").write_bytes(data)
        got, name = list(read_records([str(tmp_path / f"c.jsonl.{kind}")])), str(tmp_path / f"c.jsonl.{kind}")
    else:
        got, name = list(read_records(["-"], stdin=io.BytesIO(data))), "<stdin>"
    assert [(r.id, r.text, r.line) for r in got[:-1]] == [(d["id"], d["text"], i + 1) for i, d in enumerate(DOCS[:whole])]
    last = got[-1]
    kind_name = {"gz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}[kind]
    where_text = f"after line {whole}" if whole else "before its first line"
    assert (last.source, last.line, last.id, last.error) == (
        name, whole + 1, None,
        f"cut-off input: {where_text}, the {kind_name} data ends before its end marker (a partial download or copy?)")


@pytest.mark.parametrize("kind", list(PACK))
def test_an_uncut_input_reads_whole(tmp_path, kind):
    (tmp_path / f"c.jsonl.{kind}").write_bytes(PACK[kind](PLAIN) + PACK[kind](b'{"id": "x", "text": "two members"}\n'))
    got = list(read_records([str(tmp_path / f"c.jsonl.{kind}")]))
    assert [r.id for r in got] == [d["id"] for d in DOCS] + ["x"] and not any(r.error for r in got)


def test_corrupt_gzip_is_a_reject_and_a_disk_error_is_not_damage(tmp_path):
    data = bytearray(PACK["gz"](PLAIN))
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "c.jsonl.gz").write_bytes(bytes(data))
    got = list(read_records([str(tmp_path / "c.jsonl.gz")]))
    assert got[-1].error.startswith(f"corrupt input: after line {got[-2].line}, the gzip data is corrupt (")
    # the records before the flipped byte (half-way) are whole; deflate may decode garbage after it (records,
    # bad or plausible) until the gzip checksum sees the damage at the member's end
    assert [(r.id, r.error) for r in got[:1000]] == [(d["id"], None) for d in DOCS[:1000]]

    class Failing(io.RawIOBase):  # a disk that fails after the gzip header
        def __init__(self):
            self.data = io.BytesIO(PACK["gz"](PLAIN)[:4096])

        def readable(self):
            return True

        def readinto(self, b):
            n = self.data.readinto(b)
            if n:
                return n
            raise OSError(5, "Input/output error")

    with pytest.raises(OSError) as failed:
        decompressed(Failing()).read()
    assert failed.value.errno == 5 and not isinstance(failed.value, DamagedInput)


def dedup(*args, store, stdin=None):
    return subprocess.run([sys.executable, "-m", "dedup_hbase", *args, "--store", store], capture_output=True,
                          input=stdin, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize("kind", list(PACK))
def test_every_job_keeps_what_stood_before_the_cut_and_exits_3(tmp_path, kind):
    store = str(tmp_path / "idx")
    path = tmp_path / f"corpus.jsonl.{kind}"
    data = cut(kind, 0.5)
    path.write_bytes(data)
    whole = whole_lines(kind, data)
    assert 0 < whole < len(DOCS)
    line = (f"error: {path}: cut-off input: after line {whole}, the "
            f"{ {'gz': 'gzip', 'bz2': 'bzip2', 'xz': 'xz', 'zst': 'zstd'}[kind]} data ends before its end marker "
            "(a partial download or copy?): the records before it are used; replace the file (download or copy it "
            "again) and run the same command again")
    assert dedup("init", "--featurizer", "shingles", store=store).returncode == 0

    loaded = dedup("load", str(path), "--json", store=store)
    assert loaded.returncode == 3, loaded.stderr
    assert loaded.stderr.decode().splitlines()[-1] == line
    report = json.loads(loaded.stdout)
    assert (report["read"], report["indexed"], report["rejected"], report["rejected_by_reason"]) == (
        whole + 1, whole, 1, {"cut-off input": 1})
    stats = json.loads(dedup("stats", "--json", store=store).stdout)
    assert stats["documents"] == whole

    again = dedup("load", str(path), store=store)  # a finished load says so again
    assert again.returncode == 3 and again.stderr.decode().splitlines()[-1] == line

    piped = dedup("check", "-", "--json", store=store, stdin=data)
    assert piped.returncode == 3
    assert piped.stderr.decode().splitlines()[-1] == line.replace(str(path), "<stdin>")
    answers = [json.loads(a) for a in piped.stdout.splitlines()]
    assert [a["id"] for a in answers[:-1]] == [d["id"] for d in DOCS[:whole]]
    assert all({"id": a["id"], "simhash": a["simhash"], "distance": 0} in a["matches"] for a in answers[:-1])
    assert answers[-1]["line"] == whole + 1 and answers[-1]["error"].startswith("cut-off input: ")

    printed = dedup("fingerprint", "--file", str(path), store=store)
    assert printed.returncode == 3 and printed.stderr.decode().splitlines()[-1] == line
    assert [x.split("\t")[1] for x in printed.stdout.decode().splitlines()] == [d["id"] for d in DOCS[:whole]]

    grouped = dedup("groups", str(path), "--out", str(tmp_path / "g"), "--featurizer", "shingles", "--json",
                    store=store)
    assert grouped.returncode == 3 and grouped.stderr.decode().splitlines()[-1] == line
    assert (json.loads(grouped.stdout)["documents"], json.loads(grouped.stdout)["read"]) == (whole, whole + 1)

    path.write_bytes(PACK[kind](PLAIN))  # the whole file, downloaded again
    rerun = dedup("load", str(path), "--json", store=store)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["rejected"] == 0
    assert json.loads(dedup("stats", "--json", store=store).stdout)["documents"] == len(DOCS)


def test_a_spark_load_keeps_what_stood_before_the_cut_and_exits_3(tmp_path):
    """The Spark engine's load of a cut-off .gz file with a bad record: every record before the
    cut, the same stderr as the local engine's (each rejected record, the summary, the last
    line), exit status 3 (before: a few records fewer, no rejected records shown, and exit 0
    with the cut counted only as a reject). Its groups account for the records in the same
    function (spark/records.py ``account``)."""
    path = tmp_path / "corpus.jsonl.gz"
    lines = PLAIN.split(b"\n")
    data = gzip.compress(b"\n".join(lines[:5] + [b'{"id": "x", "text": 7}'] + lines[5:]), mtime=0)
    data = data[:len(data) // 2]
    path.write_bytes(data)
    whole = whole_lines("gz", data)
    outs = []
    for engine in ("local", "spark"):
        store = str(tmp_path / engine)
        assert dedup("init", "--featurizer", "shingles", store=store).returncode == 0
        loaded = dedup("load", str(path), "--engine", engine, store=store)
        assert loaded.returncode == 3, loaded.stderr
        said = [line.split(" in ")[0] if line.startswith("read ") else line
                for line in loaded.stderr.decode().splitlines() if not line.startswith("WARN")]
        outs.append((said, json.loads(dedup("stats", "--json", store=store).stdout)["documents"]))
    assert outs[0] == outs[1] and outs[0][1] == whole - 1
    assert outs[0][0] == [f"rejected {path}:6 (x): 'text' is not a string",
                          f"rejected {path}:{whole + 1}: cut-off input: after line {whole}, the gzip data ends "
                          "before its end marker (a partial download or copy?)",
                          f"read {whole + 1}, indexed {whole - 1} ({whole - 1} new), rejected 2 (1 'text' is "
                          "not a string, 1 cut-off input)",
                          outs[0][0][-1]]
    assert outs[0][0][-1].startswith(f"error: {path}: cut-off input: after line {whole}, ")


def test_a_cut_stdin_load_exits_3_with_its_records_indexed(tmp_path):
    store = str(tmp_path / "idx")
    data = cut("gz", 0.5)
    whole = whole_lines("gz", data)
    assert dedup("init", "--featurizer", "shingles", store=store).returncode == 0
    loaded = dedup("load", "-", "--quiet", store=store, stdin=data)
    assert loaded.returncode == 3
    assert loaded.stderr.decode().splitlines()[-1].startswith(f"error: <stdin>: cut-off input: after line {whole}, ")
    assert json.loads(dedup("stats", "--json", store=store).stdout)["documents"] == whole


@pytest.mark.parametrize("kind", ["gz", "zst"])  # compressed.checked (gzip, bzip2, xz) and zstd's own reader
@pytest.mark.parametrize("where", CUTS)
def test_the_spark_workers_reader_keeps_every_record_before_the_cut(tmp_path, kind, where):
    """A Spark worker reads a whole file as a local load does (texts.opened, then read_opened
    without a second decompression): every record before the cut, then the same one reject
    (with ISA-L's gzip, used there before, up to 128 KB fewer; with a second buffered reader
    over the first, a few lines fewer)."""
    from pathlib import Path

    from dedup_hbase.jobs.corpus import read_opened
    from dedup_hbase.jobs.spark import texts

    data = cut(kind, where)
    path = tmp_path / f"c.jsonl.{kind}"
    path.write_bytes(data)
    with open(path, "rb") as raw:
        got = list(read_opened(texts.opened(raw, True), Path(path), str(path), "auto", decompress=False))
    want = list(read_records([str(path)]))
    assert got == want and len(got) == whole_lines(kind, data) + 1
