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
from dedup_hbase.report.explain import diff_pieces, explain_pair, rule_lines
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
    for args, message in (([str(path), "--id", "k", "--id", "x", "--id", "d"],
                           "give one id (a document), two (a pair), or one id and --groups-dir DIR"),
                          ([str(path), "--id", "k", "--id", "nope"], "no text for 'nope' in"),
                          ([str(path), "--id", "zz", "--groups-dir", str(tmp_path / "g")], "'zz' is not a document"),
                          ([str(path), "--id", "k", "--groups-dir", str(tmp_path)], "is not a groups output")):
        failed = runner.invoke(app, ["explain", *args])
        assert failed.exit_code == 1 and message in failed.stderr, failed.output


# the short-text rule's pairs (issue 44): bigram Jaccards worked by hand from the bigrams
SPRING, SPRING_OTHER = "春节里的中国", "春节近 年味浓"              # 1 shared of 9 bigrams, 0 bits apart
PH, KOREA, PH_DOT = "习近平会见菲律宾总统", "习近平会见韩国总统", "习近平会见菲律宾总统。"  # 5/12; 9/10
LONG = BASE * 2  # 250 characters of body: not short


def test_bigram_jaccard_and_the_rule_of_each_pair(fp):
    from dedup_hbase.index.confirm import kept_of, sketches_agree
    from dedup_hbase.text.units import WORDS, text_sketches

    spring = explain_pair("a", SPRING, "b", SPRING_OTHER, fp, short_texts=WORDS)
    assert (spring.bigrams, spring.distance) == (1 / 9, 0)
    assert (spring.a.length, spring.a.short, spring.a.kept, spring.b.kept) == (6, True, SPRING, SPRING_OTHER)
    assert spring.short_near is False
    assert rule_lines(spring) == ["a: short, 6 characters (under 200)", "b: short, 6 characters (under 200)",
                                  "not near under the short-text rule: words of each the other lacks: 中 国 的 里 "
                                  "against 味 年 浓 近"]
    dot = explain_pair("c", PH, "e", PH_DOT, fp, short_texts=WORDS)
    assert (dot.bigrams, dot.short_near) == (0.9, True)
    assert rule_lines(dot)[2] == "near under the short-text rule: the same numbers, and the words of one among the other's"
    korea = explain_pair("c", PH, "d", KOREA, fp, short_texts=WORDS)
    assert (korea.bigrams, korea.short_near) == (5 / 12, False)
    assert rule_lines(korea)[2] == "not near under the short-text rule: words of each the other lacks: 宾 律 菲 against 国 韩"
    mixed = explain_pair("c", PH, "l", LONG, fp, short_texts=WORDS)
    assert (mixed.b.length, mixed.b.kept, mixed.short_near) == (250, None, False)
    assert rule_lines(mixed)[1:] == ["not near under the short-text rule: c is short, l is not (250 characters): "
                                     "a short text matches only a short one"]
    longs = explain_pair("l", LONG, "m", LONG + "。", fp, short_texts=WORDS)
    assert longs.short_near is None and rule_lines(longs) == [
        "the short-text rule does not apply: neither text is short (250 and 251 characters, not under 200); "
        "the fingerprints decide"]
    assert rule_lines(explain_pair("l", LONG, "m", LONG, fp)) == []  # the rule off, neither short: nothing to say
    assert rule_lines(explain_pair("c", PH, "e", PH_DOT, fp))[2] == (
        "short-text rule off: the same numbers, and the words of one among the other's; the fingerprints alone "
        "decide (groups/init --short-texts on)")
    numbers = explain_pair("x", "通报七起问题", "y", "通报八起问题", fp, short_texts=WORDS)
    assert rule_lines(numbers)[2] == "not near under the short-text rule: other numbers: 七 against 八"
    for a, b in ((SPRING, SPRING_OTHER), (PH, KOREA), (PH, PH_DOT), (PH, LONG), (LONG, LONG + "。")):
        pair = explain_pair("x", a, "y", b, fp, short_texts=WORDS)
        sketches, kepts = text_sketches([a, b])
        rule = sketches_agree(pair.distance, *sketches, None, WORDS, kept_of(sketches, kepts))  # the index's rule
        assert (pair.short_near if pair.short_near is not None else pair.distance <= 3) == rule


def test_cli_says_the_rule_of_the_groups_run(tmp_path, fp):
    from dedup_hbase.text.units import WORDS

    rows = [("a", SPRING), ("b", SPRING_OTHER), ("c", PH), ("e", PH_DOT), ("d", KOREA)]
    path = tmp_path / "short.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    group_files([str(path)], str(tmp_path / "g"), GroupsOptions(k=3, short=WORDS), fp)
    runner = CliRunner()
    shown = runner.invoke(app, ["explain", str(path), "--id", "e", "--groups-dir", str(tmp_path / "g"), "--no-color"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[:9] == [
        "group c: 2 documents, keep c", "  c  (kept)", "  e  via c, 0 bits", "",
        "c ~ e: distance 0 bits, bigram Jaccard 0.90, 95% of the text the same",
        f"  c: {fp.fingerprint(PH):016x}    e: {fp.fingerprint(PH_DOT):016x}",
        "  c: short, 10 characters (under 200)",
        "  e: short, 11 characters (under 200)",
        "  near under the short-text rule: the same numbers, and the words of one among the other's"]
    pair = runner.invoke(app, ["explain", str(path), "--id", "a", "--id", "b", "--short-texts", "on", "--json"])
    got = json.loads(pair.stdout)["pairs"][0]
    assert {k: got[k] for k in ("distance", "bigram_jaccard", "short_texts", "short_near")} == {
        "distance": 0, "bigram_jaccard": 0.1111, "short_texts": WORDS, "short_near": False}
    assert got["short_rule"][-1] == ("not near under the short-text rule: words of each the other lacks: 中 国 的 里 "
                                     "against 味 年 浓 近")
    assert (got["a"]["length"], got["a"]["short"], got["a"]["kept"]) == (6, True, SPRING)
    other = runner.invoke(app, ["explain", str(path), "--id", "a", "--id", "b", "--short-texts", "12"])
    assert other.exit_code == 1 and "--short-texts takes on or off, not '12'" in other.stderr, other.output


def test_one_document_and_the_rule(tmp_path, fp):
    path = tmp_path / "one.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                            for i, t in (("s", SPRING), ("l", LONG))), encoding="utf-8")
    runner = CliRunner()
    short = runner.invoke(app, ["explain", str(path), "--id", "s", "--short-texts", "on"])
    assert short.exit_code == 0, short.output
    assert short.stdout.splitlines() == [
        f"s: fingerprint {fp.fingerprint(SPRING):016x}",
        f"  s: short, 6 characters (under 200), kept as '{SPRING}'",
        "  short-text rule: it matches only a short text with the same numbers, of which its words are all among "
        "the other's or the other's among its (but one misspelled), at any distance",
        "  terms that weigh most: 春节 7543, 中国 3027"]
    long = runner.invoke(app, ["explain", str(path), "--id", "l", "--json"])
    doc = json.loads(long.stdout)["document"]
    assert (doc["length"], doc["short"], doc["kept"], doc["simhash"]) == (250, False, None, f"{fp.fingerprint(LONG):016x}")
    assert doc["short_rule"] == ["l: not short, 250 characters (not under 200)",
                                 "short-text rule off: the fingerprints alone decide (groups/init --short-texts on)"]
    ruled = runner.invoke(app, ["explain", str(path), "--id", "l", "--short-texts", "on"])
    assert ruled.stdout.splitlines()[2] == ("  short-text rule: no short text matches it; the fingerprints decide, "
                                            "as without the rule")
