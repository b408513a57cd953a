"""What the Spark workers read is what corpus.py reads: files of JSON lines (gzip through ISA-L,
texts.opened) give exactly the records corpus.py's reader and batches.py's fingerprinting give on
this machine, every column of every record, on the shared corpus and on hostile lines (bad ids,
texts that are not strings, malformed JSON, NaN, lone surrogates, bad UTF-8, a BOM, duplicate
fields, lone CRs), whole and in pieces; and the Parquet rows the compiled core fingerprints a
batch at a time (texts.parquet_batch) give the records of corpus.parquet_record. No Spark
needed: the worker's function is run as Spark runs it, on an Arrow batch of file rows."""

import bz2
import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from dedup_hbase.jobs.corpus import Fields, read_opened
from dedup_hbase.jobs.spark import inputs, stages, texts
from dedup_hbase.text.fingerprint import make_fingerprinter

from conftest import require_or_skip, shared_corpus

SPEC = make_fingerprinter().spec
if stages.fingerprinter(SPEC).core is None:
    require_or_skip("the compiled core is not installed (scripts/setup builds it with cargo)")


def parse(files: list[inputs.InputFile], fields: Fields = Fields(), spec: dict = SPEC) -> list[dict]:
    """The records of ``files`` as a Spark worker reads them (inputs.parse_files)."""
    run = inputs.parse_files(fields, stages.fingerprint_records(spec, False))
    rows = [{"ordinal": f.ordinal, "path": str(f.path), "source": f.source, "fmt": f.fmt, "doc_id": f.doc_id,
             "start": f.start, "end": f.end, "first_line": f.first_line} for f in files]
    out = list(run([pa.RecordBatch.from_pylist(rows, schema=_file_schema())]))
    records = pa.Table.from_batches(out).to_pylist() if out else []
    return sorted(records, key=lambda r: (r["ordinal"], r["line"]))


def reference(files: list[inputs.InputFile], fields: Fields = Fields(), spec: dict = SPEC) -> list[dict]:
    """The records of whole ``files`` as corpus.py reads them on this machine (zlib), fingerprinted
    as a local job fingerprints them."""
    finish = stages.fingerprint_records(spec, False)
    out = []
    for f in files:
        with open(f.path, "rb") as raw:
            records = [(f.ordinal, r) for r in read_opened(raw, Path(f.path), f.source, f.fmt, fields, f.doc_id)]
        if records:
            out.extend(finish(records).to_pylist())
    return sorted(out, key=lambda r: (r["ordinal"], r["line"]))


def _file_schema():
    return pa.schema([("ordinal", pa.int32()), ("path", pa.string()), ("source", pa.string()), ("fmt", pa.string()),
                      ("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("first_line", pa.int64())])


def test_the_shared_corpus_reads_the_same():
    files = [inputs.InputFile(0, str(shared_corpus("xwlb_zh.jsonl.gz")), "news.jsonl.gz", "auto", None)]
    got = parse(files)
    assert len(got) > 10_000 and got == reference(files)
    assert all(r["error"] is None for r in got[:100])


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def hostile_lines(rnd: random.Random, count: int) -> bytes:
    """JSON lines, most of them good records, the rest every way a line can go wrong."""
    words = ["国家卫生健康委员会通报", "全国疫情防控最新情况", "长江经济带生态环境保护", "hello world", "。。。",
             "的了", "c++ t恤 3.5%", "😀𠀀", "a\\nb", "\\u4e2d\\u56fd", "\\ud83d\\ude00", "\\u0000", "\\\"q\\\""]
    ids = ['"d{n}"', "{n}", "-{n}", '""', "null", "1.5", "true", "[1]", '{{"a": 1}}', str(2**70),
           '"' + "x" * 1025 + '"', '"' + "é" * 513 + '"', '"\\ud800"', '"é{n}"', "1e2", "-0"]
    others = ['[1, 2]', "42", '"s"', "NaN", "{", '{"id": "a", "text": "t", "n": NaN}', '{"id": "a", "text": "t"} x',
              '\ufeff{"id": "a", "text": "国家"}', '\x0b{"id": "a", "text": "国家"}', "\u3000", "   ", "",
              '{"id": "a", "text": "\\udc80国家"}', '{"id": "a", "text": "国家", "text": "卫生"}',
              '{"id": "a", "text": "国家", "deep": ' + "[" * 200 + "]" * 200 + "}",
              '{"id": "a", "text": "国家", "n": 1e999}', '{"id": "a", "simhash": "00ff00ff00ff00ff"}',
              '{"id": "a", "text": "国家", "simhash": ""}', '{"id": "a", "text": "国家", "simhash": "zz"}',
              '{"id": "a", "text": "国家", "featurizer": "x", "featurizer": "y"}', '{"text": "国家"}']
    out = []
    for n in range(count):
        roll = rnd.random()
        if roll < 0.6:
            fields = [f'"id": {rnd.choice(ids[:2]).format(n=n)}' if rnd.random() < 0.9 else
                      f'"id": {rnd.choice(ids).format(n=n)}',
                      '"text": "' + "".join(rnd.choice(words) for _ in range(rnd.randint(0, 6))) + '"']
            if rnd.random() < 0.5:
                fields.append(rnd.choice(['"title": "标题"', '"title": 3', '"title": null', '"title": "\\u00e9"']))
            if rnd.random() < 0.2:
                fields.append(rnd.choice(['"simhash": null', '"x": {"id": 1, "text": 2}', '"featurizer": "jieba"',
                                          '"text2": [1, "a"]', '"n": 123456789012345678901234567890']))
            rnd.shuffle(fields)
            line = ("{" + ", ".join(fields) + "}").encode()
        elif roll < 0.7:
            line = (f'{{"id": {rnd.choice(ids).format(n=n)}, "text": '
                    + rnd.choice(['"国家通报"', "5", "null", '"' + _escaped("x\ty") + '"']) + "}").encode()
        elif roll < 0.95:
            line = rnd.choice(others).encode()
        else:
            line = rnd.choice([b'{"id": "b", "text": "\xff\xfe"}', b"\xc3", b'{"id": "\xe4\xb8", "text": "t"}'])
        out.append(line + rnd.choice([b"\n", b"\n", b"\r\n", b"\r"]))
    if out and rnd.random() < 0.5:
        out[-1] = out[-1].rstrip(b"\r\n")
    return b"".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_hostile_lines_read_the_same(tmp_path, seed):
    rnd = random.Random(seed)
    data = hostile_lines(rnd, 300)
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    (tmp_path / "c.json.bz2").write_bytes(bz2.compress(data))
    files = [inputs.InputFile(i, str(p), p.name, "auto", None)
             for i, p in enumerate([plain, packed, tmp_path / "c.json.bz2"])]
    got = parse(files)
    assert got == reference(files)
    errors = {r["reason"] for r in got if r["error"]}
    assert {"malformed JSON", "invalid UTF-8", "'id' is null", "featureless text"} <= errors
    assert sum(r["error"] is None for r in got) > 100


def test_pieces_of_a_file_read_the_same(tmp_path, monkeypatch):
    rnd = random.Random(11)
    data = hostile_lines(rnd, 2000).replace(b"\r", b" ")  # a file with a CR is not cut
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(inputs, "MIN_PIECE", 4096)
    whole = inputs.InputFile(0, str(path), "big.jsonl", "auto", None)
    pieces = inputs.pieces(whole, 8)
    assert len(pieces) >= 8 and pieces[1].first_line > 1
    assert parse(pieces) == parse([whole]) == reference([whole])


def test_a_binary_file_is_one_reject_and_other_field_names(tmp_path):
    binary = tmp_path / "x.jsonl"
    binary.write_bytes(b'{"id": "a", "text": "t"}\n\0\0\0 binary')
    named = tmp_path / "y.jsonl"
    named.write_bytes('{"doc": "a", "body": "国家卫生健康委员会通报", "id": 5, "text": 7, "headline": "h"}\n'.encode())
    fields = Fields(id="doc", text="body", title="headline")
    files = [inputs.InputFile(0, str(binary), "x.jsonl", "auto", None),
             inputs.InputFile(1, str(named), "y.jsonl", "jsonl", None)]
    got = parse(files, fields)
    assert got == reference(files, fields)
    assert [(r["line"], r["reason"]) for r in got] == [(1, "binary data, not text (a NUL byte at byte 25)"),
                                                       (1, None)]
    assert got[1]["id"] == "a" and got[1]["title"] == "h" and got[1]["simhash"] is not None


def test_the_core_is_not_used_where_it_cannot_mirror_the_reader():
    assert texts.usable(SPEC, Fields(), use_simhash=False)
    assert not texts.usable(SPEC, Fields(), use_simhash=True)
    assert not texts.usable(SPEC, Fields(title="text"), use_simhash=False)


def parquet_rows(columns: list[str], fast: bool, batch: pa.RecordBatch, by_path) -> list[dict]:
    finish = stages.fingerprint_records(SPEC, False)
    run = inputs.parse_parquet_rows(Fields(), finish, by_path, columns, SPEC if fast else None, False)
    out = list(run([batch]))
    return sorted(pa.Table.from_batches(out).to_pylist(), key=lambda r: (r["ordinal"], r["line"]))


def hostile_parquet(rnd: random.Random, n: int, id_type, title_type, with_simhash: bool):
    """A batch as Spark's Parquet reader hands it to the worker (c0... = the columns)."""
    words = ["国家卫生健康委员会通报", "全国疫情防控最新情况", "hello world", "。。。", "的了", "😀𠀀"]
    ids, bodies, titles, sims = [], [], [], []
    for i in range(n):
        roll = rnd.random()
        if id_type == pa.string():
            ids.append(f"d{i}" if roll < 0.8 else rnd.choice([None, "", "x" * 1025, "é" * 512, "é" * 513]))
        elif id_type == pa.binary():
            ids.append(rnd.choice([b"ok", b"\xff"]))
        else:
            ids.append((i - 5 if id_type == pa.int64() else 2**64 - 1 - i) if roll < 0.9 else None)
        bodies.append("".join(rnd.choice(words) for _ in range(rnd.randint(0, 5))) if rnd.random() < 0.9 else None)
        titles.append(rnd.choice(["t", None]) if title_type == pa.string() else rnd.choice([3, None]))
        sims.append(rnd.choice([None, None, None, "", "00ff00ff00ff00ff", "zz"]))
    arrays = {"id": pa.array(ids, id_type), "text": pa.array(bodies, pa.string()),
              "title": pa.array(titles, title_type)}
    if with_simhash:
        arrays["simhash"] = pa.array(sims, pa.string())
    columns = list(arrays)
    paths = [rnd.choice(["file:///data/a.parquet", "file:///data/b%20c.parquet"]) for _ in range(n)]
    batch = pa.RecordBatch.from_arrays(
        [*arrays.values(), pa.array(paths), pa.array([rnd.randrange(10**6) for _ in range(n)], pa.int64())],
        names=[f"c{i}" for i in range(len(columns))] + ["_file_path", "_row_index"])
    by_path = {"/data/a.parquet": inputs.InputFile(0, "/data/a.parquet", "a.parquet", "parquet", None),
               "/data/b c.parquet": inputs.InputFile(1, "/data/b c.parquet", "b c.parquet", "parquet", None)}
    return columns, batch, by_path


@pytest.mark.parametrize("id_type", [pa.string(), pa.int64(), pa.uint64(), pa.binary()])
@pytest.mark.parametrize("title_type", [pa.string(), pa.int32()])
@pytest.mark.parametrize("with_simhash", [False, True])
def test_parquet_rows_read_the_same(monkeypatch, id_type, title_type, with_simhash):
    rnd = random.Random(f"{id_type}{title_type}{with_simhash}")
    columns, batch, by_path = hostile_parquet(rnd, 400, id_type, title_type, with_simhash)
    picked = []
    real = texts.parquet_batch

    def counted(*args):
        done, rest = real(*args)
        picked.append(0 if done is None else done.num_rows)
        return done, rest
    monkeypatch.setattr(texts, "parquet_batch", counted)
    fast = parquet_rows(columns, True, batch, by_path)
    assert fast == parquet_rows(columns, False, batch, by_path)
    assert len(fast) == 400 and {r["source"] for r in fast} == {"a.parquet", "b c.parquet"}
    # the core took the plainly good rows (all rows are the reader's where a column is binary)
    assert (picked[0] == 0) == (id_type == pa.binary()) and picked[0] < 400


@pytest.mark.parametrize("damage", ["none", "cut", "crc", "byte"])
def test_gzip_read_whole_as_the_local_reader_reads_it(tmp_path, damage):
    """A gzip file of two members (as `cat` makes), whole, cut off, its CRC wrong or one byte
    of its data flipped, read by a Spark task: the records a local load reads, and where the
    data is damaged the same one reject after the last of them (ISA-L's gzip, used here
    before, kept up to 128 KB fewer of a cut-off file's bytes and let a corrupt file's error
    stop the task)."""
    rnd = random.Random(5)
    first, second = hostile_lines(rnd, 500), hostile_lines(rnd, 3000)
    data = gzip.compress(first) + gzip.compress(second, compresslevel=1)
    middle = len(data) * 2 // 3
    data = {"none": data, "cut": data[:middle], "crc": data[:-8] + bytes(4) + data[-4:],
            "byte": data[:middle] + bytes([data[middle] ^ 0x10]) + data[middle + 1:]}[damage]
    path = tmp_path / "two.jsonl.gz"
    path.write_bytes(data)
    with open(path, "rb") as raw:
        assert texts.opened(raw, True).read(len(first)) == first
    files = [inputs.InputFile(0, str(path), "two.jsonl.gz", "auto", None)]
    got, want = parse(files), reference(files)
    assert got == want and len(want) > 500
    assert (want[-1]["reason"] in ("cut-off input", "corrupt input")) == (damage != "none")


def test_a_parquet_batch_of_good_rows_only_reads_the_same():
    words = ["国家卫生健康委员会通报", "全国疫情防控最新情况", "长江经济带生态环境保护"]
    rnd = random.Random(4)
    n = 300
    batch = pa.RecordBatch.from_arrays(
        [pa.array([f"g{i}" for i in range(n)]), pa.array(["".join(rnd.choices(words, k=3)) for _ in range(n)]),
         pa.array(["file:///data/a.parquet"] * n), pa.array(list(range(n)), pa.int64())],
        names=["c0", "c1", "_file_path", "_row_index"])
    by_path = {"/data/a.parquet": inputs.InputFile(0, "/data/a.parquet", "a.parquet", "parquet", None)}
    done, rest = texts.parquet_batch(batch, ["id", "text"], Fields(), SPEC, lambda uri: by_path[uri[7:]])
    assert done.num_rows == n and rest.num_rows == 0
    fast = parquet_rows(["id", "text"], True, batch, by_path)
    assert fast == parquet_rows(["id", "text"], False, batch, by_path) and len(fast) == n


def remote_files(tmp_path: Path) -> tuple[list[inputs.InputFile], Fields]:
    """Files of every kind that a remote read streams in chunks (FileChunks.java), and the
    fields to read them with: a CSV whose quoted fields hold line ends and multi-byte characters,
    a TSV, JSON lines gzipped and cut off, a binary file (of which only the head is read), a
    GB18030 file, a whole-file document, an empty file."""
    rnd = random.Random(13)
    (tmp_path / "a.csv").write_text("id,text\r\n" + "".join(
        f'c{i},"国家卫生{"，" * (i % 5)}健康\n委员会 ""通报"" {i}"\r\n' for i in range(120)), encoding="utf-8")
    (tmp_path / "b.tsv").write_text("id\ttext\n" + "".join(f"t{i}\t长江经济带生态环境保护 {i}\n"
                                                         for i in range(80)), encoding="utf-8")
    data = gzip.compress("".join(json.dumps({"id": f"z{i}", "text": f"国家卫生健康委员会通报 {rnd.random()}"}) + "\n"
                                 for i in range(3000)).encode())
    (tmp_path / "c.jsonl.gz").write_bytes(data[:len(data) * 3 // 4])
    (tmp_path / "d.jsonl").write_bytes(b"\x00\x01 not text\n" * 5000)
    (tmp_path / "e.jsonl").write_bytes("".join(json.dumps({"id": f"g{i}", "text": f"全国疫情防控最新情况{i}"},
                                                          ensure_ascii=False) + "\n"
                                               for i in range(50)).encode("gb18030"))
    (tmp_path / "f.txt").write_text("一篇文档，" * 300, encoding="utf-8")
    (tmp_path / "g.csv").write_bytes(b"")
    files = [inputs.InputFile(i, str(tmp_path / name), name, "file" if name == "f.txt" else "auto",
                              "doc-f" if name == "f.txt" else None)
             for i, name in enumerate(["a.csv", "b.tsv", "c.jsonl.gz", "d.jsonl", "e.jsonl", "f.txt", "g.csv"])]
    return files, Fields(encoding="auto")


def check_remote_records(files: list[inputs.InputFile], fields: Fields, got: list[dict]) -> None:
    """``got`` (the records of ``remote_files``' files read in chunks) are a local read's."""
    want = reference(files, fields)
    assert sorted(got, key=lambda r: (r["ordinal"], r["line"])) == want
    assert [sum(r["ordinal"] == f.ordinal for r in want) for f in files][:2] == [120, 80]
    assert any(r["reason"] == "cut-off input" for r in want if r["ordinal"] == 2)
    assert [r["reason"] for r in want if r["ordinal"] == 3] == ["binary data, not text (a NUL byte at byte 0)"]
    assert {r["id"] for r in want if r["ordinal"] == 5} == {"doc-f"}


def chunk_batches(files: list[inputs.InputFile], chunk_bytes: int, rows_per_batch: int) -> list:
    """The rows ``dedup-hbase-chunks`` gives a task for ``files`` (FileChunks.java: each file's
    bytes in chunks of ``chunk_bytes``, at least one chunk a file), in Arrow batches of
    ``rows_per_batch`` rows as Spark hands them to mapInArrow."""
    rows = []
    for f in files:
        data = Path(f.path).read_bytes()
        rows += [{"ordinal": f.ordinal, "chunk": data[at:at + chunk_bytes]}
                 for at in range(0, max(1, len(data)), chunk_bytes)]
    schema = pa.schema([("ordinal", pa.int32()), ("chunk", pa.binary())])
    return [pa.RecordBatch.from_pylist(rows[at:at + rows_per_batch], schema=schema)
            for at in range(0, len(rows), rows_per_batch)]


@pytest.mark.parametrize("chunk_bytes, rows_per_batch", [(1, 1000), (7, 3), (4096, 1), (1 << 20, 16)])
def test_remote_files_streamed_in_chunks_read_as_the_local_reader_reads_them(tmp_path, chunk_bytes, rows_per_batch):
    """Files of another file system come to a task as their bytes in chunks, several files one
    after another in a partition; read as a stream of them (inputs.parse_chunks), each file
    gives the records a local read gives, whatever the chunks' size and the batches' (a file
    the reader leaves early, the binary one, has its other chunks skipped)."""
    files, fields = remote_files(tmp_path)
    run = inputs.parse_chunks(fields, stages.fingerprint_records(SPEC, False), {f.ordinal: f for f in files})
    out = list(run(iter(chunk_batches(files, chunk_bytes, rows_per_batch))))
    check_remote_records(files, fields, pa.Table.from_batches(out).to_pylist())
