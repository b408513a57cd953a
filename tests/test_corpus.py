import bz2
import gzip
import io
import lzma

import pytest

from dedup_hbase.jobs.corpus import Fields, read_records


def records(tmp_path, name, content: bytes, **kw):
    path = tmp_path / name
    path.write_bytes(content)
    return list(read_records([str(path)], **kw))


JSONL = '{"id": "a", "text": "一"}\n\n{"id": 7, "text": "二", "title": "T"}\n'.encode()


@pytest.mark.parametrize("name,pack", [("c.jsonl", bytes), ("c.jsonl.gz", gzip.compress),
                                       ("c.jsonl.bz2", bz2.compress), ("c.jsonl.xz", lzma.compress),
                                       ("c.data", gzip.compress)])
def test_jsonl_plain_and_compressed(tmp_path, name, pack):
    got = records(tmp_path, name, pack(JSONL), fmt="jsonl" if name == "c.data" else "auto")
    assert [(r.id, r.text, r.line, r.title, r.error) for r in got] == [
        ("a", "一", 1, None, None), ("7", "二", 3, "T", None)]


def test_zstd(tmp_path):
    import zstandard  # the test extra's: a test run without it fails here rather than skipping
    got = records(tmp_path, "c.jsonl.zst", zstandard.ZstdCompressor().compress(JSONL))
    assert [r.id for r in got] == ["a", "7"]


def test_bad_records_are_reported_with_line_and_reason(tmp_path):
    content = (b'{"id": "ok", "text": "x"}\n'
               b'{"id": "t", "text": "bad \xff\xfe"}\n'
               b'{"id": "n"}\n'
               b'{"id": "s", "text": 5}\n'
               b'not json\n'
               b'[1, 2]\n'
               b'{"text": "no id"}\n'
               b'{"id": "h", "simhash": "xyz"}\n'
               b'{"id": "f", "simhash": "00000000000000FF"}\n'
               b'{"id": "c", "text": "a\tb"}\n')
    got = records(tmp_path, "bad.jsonl", content)
    assert [(r.line, r.id, r.error) for r in got] == [
        (1, "ok", None),
        (2, None, "invalid UTF-8"),
        (3, "n", "no 'text' field (nor 'simhash')"),
        (4, "s", "'text' is not a string"),
        (5, None, "malformed JSON: Expecting value at column 1"),
        (6, None, "a JSON line must be an object, not list"),
        (7, None, "no 'id' field"),
        (8, "h", "bad 'simhash': a simhash is 16 hex digits, not 'xyz'"),
        (9, "f", None),
        (10, None, "malformed JSON: Invalid control character at column 23"),  # a raw tab in a string
    ]
    assert got[-2].simhash == 255 and got[-2].text is None


def test_csv_tsv_and_custom_fields(tmp_path):
    csv_text = b'doc,body\nx,"hello, ""world""\nline two"\ny,bye\nz,a,extra\n'
    got = records(tmp_path, "c.csv", csv_text, fields=Fields(id="doc", text="body"))
    assert [(r.id, r.text, r.line, r.error) for r in got] == [
        ("x", 'hello, "world"\nline two', 2, None), ("y", "bye", 4, None),  # a record is at its first line
        (None, None, 5, "1 more fields than the header has")]
    got = records(tmp_path, "c.tsv", b"id\ttext\n1\tone\n")
    assert [(r.id, r.text) for r in got] == [("1", "one")]


def test_text_lines_and_folders(tmp_path):
    got = records(tmp_path, "notes.txt", "first doc\n\nsecond doc\r\nbad \xff\n".encode("latin-1"), fmt="lines")
    assert [(r.id, r.text, r.error) for r in got] == [
        ("notes.txt:1", "first doc", None), ("notes.txt:3", "second doc", None),
        ("notes.txt:4", None, "invalid UTF-8")]
    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.txt").write_text("page b\nstill b")
    (folder / "sub" / "a.html").write_bytes(gzip.compress(b"page a"))
    (folder / "more.jsonl").write_text('{"id": "j", "text": "json"}\n')
    (folder / ".hidden").write_text("skip me")
    got = list(read_records([str(folder)]))
    assert [(r.id, r.text) for r in got] == [("b.txt", "page b\nstill b"), ("j", "json"), ("sub/a.html", "page a")]
    # one rule (corpus.holds): a text file named by itself is one document too, as in a folder
    assert [(r.id, r.text) for r in read_records([str(folder / "b.txt")])] == [("b.txt", "page b\nstill b")]


def test_stdin_is_sniffed():
    got = list(read_records(["-"], stdin=io.BytesIO(gzip.compress(JSONL))))
    assert [r.id for r in got] == ["a", "7"]
    got = list(read_records(["-"], stdin=io.BytesIO(b"plain line\n")))
    assert [(r.id, r.text) for r in got] == [("<stdin>:1", "plain line")]


def test_missing_file_and_bad_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder: .*nope"):
        list(read_records([str(tmp_path / "nope")]))
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        list(read_records(["-"], fmt="xml"))


def test_a_malformed_lines_column_does_not_depend_on_how_the_line_ends(tmp_path):
    """The column of a JSON error is the line's, whatever ends it (LF, CRLF, a lone CR, the
    end of the file): the JVM's split reader hands lines over without their ends."""
    got = records(tmp_path, "ends.jsonl", b'{\n{\r\n{\r{')
    assert [(r.line, r.error) for r in got] == [
        (n, "malformed JSON: Expecting property name enclosed in double quotes at column 2") for n in (1, 2, 3, 4)]
