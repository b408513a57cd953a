"""fingerprint_blocks.py reads --fingerprints files a block at a time: it must give exactly what
the record reader gives (corpus.read_records + batches.to_fingerprint), on hostile input too."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

from dedup_hbase.jobs import fingerprint_blocks as fb
from dedup_hbase.jobs.batches import to_fingerprint
from dedup_hbase.jobs.corpus import Fields, read_records

LABEL = "jieba-tfidf-v1"


def by_records(path, fields=Fields()):
    """The reference: the records of the record reader, checked as --fingerprints checks them."""
    records = list(read_records([str(path)], "auto", fields))
    to_fingerprint(records, use_simhash=True)
    good = [r for r in records if not r.error]
    return ([r.id for r in good], [r.simhash for r in good], [(r.source, r.line, r.id, r.error) for r in records if r.error],
            [(r.line, r.featurizer) for r in good if r.featurizer not in (None, LABEL)],
            sum(len(r.text.encode("utf-8", "surrogateescape")) for r in good if r.text))


def by_blocks(path, fields=Fields(), batch_size=7):
    parts = list(fb.fingerprint_parts([str(path)], "auto", fields, LABEL, batch_size))
    return ([i for p in parts for i in p.ids.to_pylist()], [int(s) for p in parts for s in p.simhashes],
            [(r.source, r.line, r.id, r.error) for p in parts for r in p.rejected],
            [(r.line, r.featurizer) for p in parts for r in p.featurized if r.featurizer != LABEL],
            sum(p.text_bytes for p in parts))


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few lines, so that every kind of line meets a block's edge."""
    monkeypatch.setattr(fb, "BLOCK", 300)
    monkeypatch.setattr(fb, "_READ", 64)


def hexes(rng, n):
    return [f"{rng.getrandbits(64):016x}" for _ in range(n)]


def test_plain_blocks_are_parsed_as_columns_with_the_record_readers_values(tmp_path, small_blocks):
    rng = random.Random(1)
    values = hexes(rng, 200)
    lines = [json.dumps({"id": f"d{i}", "simhash": h.upper() if i % 3 == 0 else h}) for i, h in enumerate(values)]
    lines += [json.dumps({"id": "中文 ✓", "simhash": values[0], "featurizer": LABEL}, ensure_ascii=e) for e in (True, False)]
    lines += [json.dumps({"id": "x" * 1024, "simhash": values[1], "featurizer": ""}), '{"id": "a\\"b\\\\", "simhash": "H"}'.replace("H", values[2])]
    path = tmp_path / "fps.jsonl"
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    block = path.read_bytes()
    part = fb._parsed(block, Fields(), LABEL)
    assert part is not None and len(part.ids) == len(lines)
    assert part.simhashes.tolist() == [int(h, 16) for h in values] + [int(values[0], 16)] * 2 + [int(values[1], 16), int(values[2], 16)]
    assert part.ids.to_pylist()[-4:] == ["中文 ✓", "中文 ✓", "x" * 1024, 'a"b\\']
    assert by_blocks(path) == by_records(path)


@pytest.mark.parametrize("line", [
    "", "   ", '{"id": "a", "simhash": "H"} {"id": "b", "simhash": "H"}', ' {"id": "a", "simhash": "H"}',
    '{"id": 7, "simhash": "H"}', '{"id": "", "simhash": "H"}', '{"id": "' + "y" * 1025 + '", "simhash": "H"}',
    '{"id": "a", "simhash": "0xH"}', '{"id": "a", "simhash": " H"}', '{"id": "a", "simhash": "H0"}',
    '{"id": "a", "simhash": "H", "title": "t"}', '{"id": "a", "simhash": "H", "text": 5}', '{"id": "a"}',
    '{"id": "a", "simhash": "H", "featurizer": "other-v9"}', '{"id": "a", "id": "b", "simhash": "H"}',
    '{"id": "a\\ud800", "simhash": "H"}', '{"id": null, "simhash": "H"}', '{"id": "a", "simhash": null}',
    '{"id": "a", "simhash": "H",}', '[1, 2]', '{"id": "a",\r"simhash": "H"}', '{"id": "a", "simhash": "gH15"}',
])
def test_a_block_with_one_unusual_line_is_read_record_by_record(tmp_path, small_blocks, line):
    """H: 16 hex digits, H15: 15 of them."""
    rng = random.Random(2)
    good = [json.dumps({"id": f"d{i}", "simhash": h}) for i, h in enumerate(hexes(rng, 40))]
    h = hexes(rng, 1)[0]
    odd = line.replace("H15", h[:15]).replace("H", h)
    path = tmp_path / "fps.jsonl"
    path.write_text("\n".join(good[:20] + [odd] + good[20:]) + "\n", encoding="utf-8")
    assert fb._parsed(path.read_bytes(), Fields(), LABEL) is None
    assert by_blocks(path) == by_records(path)


def hostile_lines(rng: random.Random, n: int) -> list[bytes]:
    kinds = [
        lambda h: {"id": f"d{rng.randrange(10**6)}", "simhash": h},
        lambda h: {"id": rng.randrange(-5, 10**12), "simhash": h},
        lambda h: {"id": "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x4e00, 0x9fff), 0x1F600,
                                                 rng.randrange(0, 32)])) for _ in range(rng.randrange(0, 6))), "simhash": h},
        lambda h: {"id": "z", "simhash": rng.choice([h.upper(), "0x" + h, h[:15], h + "0", " " + h, "", None, 17, h[:8] + "-" + h[9:]])},
        lambda h: {"id": "t", "simhash": h, "text": rng.choice(["短文本", None, 3, ""]), "title": "x"},
        lambda h: {"id": "f", "simhash": h, "featurizer": rng.choice([LABEL, "", None, "other-v1", 5])},
        lambda h: {"simhash": h},
        lambda h: [h],
    ]
    lines, odd = [], rng.choice([0.01, 0.3])
    for _ in range(n):
        h = f"{rng.getrandbits(64):016x}"
        if rng.random() > odd:
            lines.append(json.dumps({"id": f"p{len(lines)}", "simhash": h}).encode())
            continue
        roll = rng.random()
        if roll < 0.75:
            lines.append(json.dumps(rng.choice(kinds)(h), ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass"))
        else:
            line = bytearray(json.dumps({"id": "b", "simhash": h}).encode())
            for _ in range(rng.randrange(1, 3)):  # a byte changed, dropped or added anywhere
                at = rng.randrange(len(line))
                op = rng.randrange(3)
                if op == 0:
                    line[at] = rng.choice(b'{}[]":,\\ \r\x00\xff\xc3ab0')
                elif op == 1:
                    del line[at]
                else:
                    line.insert(at, rng.choice(b'{}"\\\r\n \xe4'))
            lines.append(bytes(line))
    return lines


@pytest.mark.parametrize("seed", range(10))
def test_hostile_lines_give_what_the_record_reader_gives(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    monkeypatch.setattr(fb, "BLOCK", rng.choice([64, 500, 4000, 1 << 20]))
    monkeypatch.setattr(fb, "_READ", rng.choice([16, 300, 1 << 16]))
    path = tmp_path / "fps.jsonl"
    lines = hostile_lines(rng, 1500)
    path.write_bytes(b"\n".join(lines) + (b"\n" if seed % 2 else b""))
    assert by_blocks(path, batch_size=rng.choice([1, 5, 2000])) == by_records(path)


def test_gzip_bom_and_other_encodings_read_as_the_record_reader_reads_them(tmp_path, small_blocks):
    rng = random.Random(3)
    lines = [json.dumps({"id": f"标题{i}", "simhash": h}, ensure_ascii=False) for i, h in enumerate(hexes(rng, 300))]
    text = "\n".join(lines) + "\n"
    cases = {"a.jsonl.gz": gzip.compress(text.encode()), "bom.jsonl": b"\xef\xbb\xbf" + text.encode(),
             "gbk.jsonl": text.encode("gbk"), "utf16.jsonl": text.encode("utf-16")}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        for encoding in ("utf-8", "auto", "gb18030"):
            fields = Fields(encoding=encoding)
            assert by_blocks(tmp_path / name, fields) == by_records(tmp_path / name, fields), (name, encoding)
    ids, simhashes, rejected, _, _ = by_blocks(tmp_path / "gbk.jsonl", Fields(encoding="auto"))
    assert ids == [f"标题{i}" for i in range(300)] and rejected == []


def test_cut_off_gzip_keeps_the_lines_before_the_damage_and_says_where(tmp_path):
    rng = random.Random(4)
    lines = [json.dumps({"id": f"d{i}", "simhash": h}) for i, h in enumerate(hexes(rng, 20000))]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[:len(data) // 2])
    read = by_blocks(path)
    assert read == by_records(path)
    ids, simhashes, rejected, _, _ = read
    assert len(rejected) == 1 and rejected[0][3].startswith("cut-off input: after line ")
    last = int(rejected[0][3].split("after line ")[1].split(",")[0])
    assert last == len(ids) > 5000 and rejected[0][1] == last + 1
    assert ids == [f"d{i}" for i in range(last)] and simhashes == [int(h, 16) for h in hexes(random.Random(4), last)]


def test_the_hex_digits_of_every_byte():
    import pyarrow as pa

    rng = np.random.default_rng(5)
    good = [f"{int(v):016x}" for v in rng.integers(0, 2**63, 100, dtype=np.int64)] + ["ffffffffffffffff", "0" * 16]
    assert fb._hex(pa.array(good)).tolist() == [int(h, 16) for h in good]
    assert fb._hex(pa.array(good[3:])[2:]).tolist() == [int(h, 16) for h in good[5:]]  # an array's slice
    for byte in range(128):
        odd = "0" * 15 + chr(byte)
        assert (fb._hex(pa.array([odd])) is None) == (chr(byte) not in "0123456789abcdefABCDEF"), byte
