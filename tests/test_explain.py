"""dedup-hbase explain: one pair or one group shown in the terminal, from the texts of the
inputs: the differences (difflib) that rebuild both texts, the distance of the fingerprints the
fingerprinter gives, the weightiest terms, side by side or one above the other within the
width asked for, and a group's members with the vias its groups output holds."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.jobs.local.groups import group_files
from dedup_hbase.jobs.options import GroupsOptions
from dedup_hbase.report.explain import diff_pieces, explain_pair
from dedup_hbase.report.terminal import cells, render_pair, visible
from dedup_hbase.text.fingerprint import make_fingerprinter

BASE = ("国家卫生健康委员会今天通报最新疫情：全国新增本土确诊病例十二例，其中广东五例、上海四例、北京三例。"
        "长江经济带生态环境保护发生了转折性变化，沿江省市共抓大保护、不搞大开发。"
        "今年前三季度，全国规模以上工业增加值同比增长百分之四点五，高技术制造业增长较快。")
EDITED = BASE.replace("五例", "六例").replace("百分之四点五", "百分之四点六")  # 2 bits apart
OTHER = "The quick brown fox jumps over the lazy dog while the farmer sleeps under an old oak tree."


@pytest.fixture(scope="module")
def fp():
    return make_fingerprinter()


def test_pieces_rebuild_both_texts_and_mark_only_what_differs():
    for a, b in ((BASE, EDITED), ("the cat sat on the mat", "the cat sat on a mat"), ("", "x"), (BASE, "")):
        pieces = diff_pieces(a, b)
        assert "".join(p[1] for p in pieces) == a and "".join(p[2] for p in pieces) == b
    changed = [(a, b) for op, a, b in diff_pieces(BASE, EDITED) if op != "equal"]
    assert changed == [("五", "六"), ("五", "六")]  # Chinese: character by character
    assert [(a, b) for op, a, b in diff_pieces("the cat sat on the mat", "the cat sat on a mat")
            if op != "equal"] == [("the", "a")]  # English: word by word


def test_pair_distance_and_terms_are_the_fingerprinters(fp):
    pair = explain_pair("a", BASE, "b", EDITED, fp, top=5)
    assert (pair.a.simhash, pair.b.simhash) == (fp.fingerprint(BASE), fp.fingerprint(EDITED))
    assert pair.distance == (fp.fingerprint(BASE) ^ fp.fingerprint(EDITED)).bit_count()
    assert len(pair.differing_bits) == pair.distance
    weights = fp.featurizer.features(BASE)
    top = sorted(weights.items(), key=lambda x: (-x[1], x[0]))[:5]
    assert [(t.term, t.weight) for t in pair.a.terms] == top
    others = fp.featurizer.features(EDITED)
    assert all(t.shared == (t.term in others) for t in pair.a.terms)
    assert {t.term for t in pair.a.own} <= set(weights) - set(others) and pair.a.own
    assert explain_pair("x", "", "y", BASE, fp).distance is None  # no features: no fingerprint, no distance


def test_side_by_side_or_stacked_within_the_width(fp):
    pair = explain_pair("a", BASE, "b", EDITED, fp)
    wide = list(render_pair(pair, width=100))
    assert any(" │ " in line for line in wide)
    assert any("[-五-]" in line and "{+六+}" in line for line in wide)  # marked, on one row
    narrow = list(render_pair(pair, width=60))
    assert "── a" in narrow and "── b" in narrow and not any(" │ " in line for line in narrow)
    text_rows = [line for line in wide[3:] if " │ " in line]
    assert text_rows and all(visible(line) <= 100 for line in text_rows)
    assert all(visible(line) <= 60 for line in narrow[narrow.index("── a"):narrow.index("── b")])
    assert cells("国") == 2 and cells("a") == 1
    colored = "\n".join(render_pair(pair, width=100, color=True))
    assert "\x1b[31m五\x1b[0m" in colored and "\x1b[32m六\x1b[0m" in colored and "[-" not in colored


def corpus(tmp_path):
    rows = [("k", BASE), ("x", OTHER), ("d", EDITED), ("c", BASE)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    return path


def test_cli_group_and_pair(tmp_path, fp):
    path = corpus(tmp_path)
    group_files([str(path)], str(tmp_path / "g"), GroupsOptions(k=3), fp)
    distance = (fp.fingerprint(BASE) ^ fp.fingerprint(EDITED)).bit_count()
    assert distance <= 3
    runner = CliRunner()
    result = runner.invoke(app, ["explain", str(path), "--id", "d", "--groups-dir", str(tmp_path / "g"), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["group"] == "k"
    assert shown["members"] == [{"id": "k", "keep": True, "via": None, "distance": None},
                                {"id": "d", "keep": False, "via": "k", "distance": distance},
                                {"id": "c", "keep": False, "via": "k", "distance": 0}]
    assert [(p["a"]["id"], p["b"]["id"], p["distance"]) for p in shown["pairs"]] == [("k", "d", distance),
                                                                                    ("k", "c", 0)]
    text = runner.invoke(app, ["explain", str(path), "--id", "k", "--id", "x", "--width", "120"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"k ~ x: distance {(fp.fingerprint(BASE) ^ fp.fingerprint(OTHER)).bit_count()} bits")
    assert "{+The quick" in text.stdout and "  terms that weigh most (* in both):" in lines
    for args, message in (([str(path), "--id", "k"], "give two ids (a pair), or one id and --groups-dir DIR"),
                          ([str(path), "--id", "k", "--id", "nope"], "no text for 'nope' in"),
                          ([str(path), "--id", "zz", "--groups-dir", str(tmp_path / "g")], "'zz' is not a document"),
                          ([str(path), "--id", "k", "--groups-dir", str(tmp_path)], "is not a groups output")):
        failed = runner.invoke(app, ["explain", *args])
        assert failed.exit_code == 1 and message in failed.stderr, failed.output
