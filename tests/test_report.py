"""dedup-hbase report: one offline HTML page of a groups output, read back with html.parser:
the counts equal the groups command's JSON summary, the histograms add up to the groups and
the dropped documents, the sample holds at most --sample groups (the same ones for the same
seed) with each dropped document's text beside its via's, nothing is fetched from a URL, and
texts holding markup stay text."""

from __future__ import annotations

import json
import random
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.report.page import TEXT_CHARS

from planted import flip, planted

EVIL = "注意 <script>alert('x')</script> & </div> 之后 <b>粗</b>"  # beside its via, ORIGINAL
ORIGINAL = "注意 <script>alert('x')</script> & </div> 之前"


class Page(HTMLParser):
    """What a browser would build, as far as the tests need it: elements with their attributes
    and text, the classes of the elements each piece of text is inside."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.stack: list[tuple[str, dict, list]] = []
        self.texts: dict[int, list[str]] = {}
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        if tag not in ("meta", "input", "rect", "line"):
            self.stack.append((tag, attrs, []))
            self.texts[id(attrs)] = self.stack[-1][2]

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for _, _, bucket in self.stack:
            bucket.append(data)

    def text_of(self, attrs: dict) -> str:
        return "".join(self.texts[id(attrs)])

    def find(self, tag: str, **want) -> list[dict]:
        return [a for t, a in self.elements if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in want.items())]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """~650 planted fingerprints (copies, near copies, chains, pairs at k and k + 1 bits) with
    texts, one of them holding markup and near its original; an id holding "</script>"."""
    fps = planted(11, randoms=200, pages=(60,), bucket=200)
    rnd = random.Random(11)
    fps += [fps[0], flip(fps[0], 2, rnd)]  # two near copies of the first: the markup one among them
    folder = tmp_path_factory.mktemp("report")
    ids = [f"d{i}" for i in range(len(fps))]
    ids[-2] = "</script><b>id"
    texts = [f"第{i}篇 文本 text number {i} " + "正文" * (i % 7) for i in range(len(fps))]
    texts[0], texts[-1] = ORIGINAL, EVIL
    texts[5] = "长" * (TEXT_CHARS + 500)
    path = folder / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "simhash": f"{v:016x}", "text": t}, ensure_ascii=False) + "\n"
                            for i, v, t in zip(ids, fps, texts)), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["groups", str(path), "--fingerprints", "--out", str(folder / "g"), "--json"])
    assert result.exit_code == 0, result.output
    return path, folder / "g", json.loads(result.stdout), dict(zip(ids, texts))


def report(tmp_path, corpus, *args):
    path, out, _, _ = corpus
    html = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(out), str(path), "--out", str(html), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), html.read_text(encoding="utf-8")


def test_counts_charts_and_sample_bound(tmp_path, corpus):
    _, _, summary, _ = corpus
    shown, html = report(tmp_path, corpus, "--sample", "7", "--sample-seed", "3")
    page = Page(html)
    counts = {a["data-count"]: page.text_of(a) for a in page.find("td") if "data-count" in a}
    assert counts == {"documents": f"{summary['documents']:,}", "groups": f"{summary['groups']:,}",
                      "groups of two or more": f"{summary['multi_groups']:,}", "kept": f"{summary['groups']:,}",
                      "dropped": f"{summary['to_drop']:,}", "read": f"{summary['read']:,}", "rejected": "0"}
    charts = page.find("svg")
    assert len(charts) == 2
    by_chart: list[list[int]] = [[], []]
    chart = -1
    for tag, attrs in page.elements:
        if tag == "svg":
            chart += 1
        elif tag == "rect" and attrs.get("class") == "bar":
            by_chart[chart].append(int(attrs["data-count"]))
    assert sum(by_chart[0]) == summary["multi_groups"] and sum(by_chart[1]) == summary["to_drop"]
    assert len(by_chart[1]) == summary["k"] + 1
    groups = page.find("article")
    assert len(groups) == shown["sample"] == 7 <= summary["multi_groups"]
    how = page.text_of(page.find("p", **{"class": "how"})[0])
    assert "random.Random(3).sample" in how and "7 of the" in how
    again, html_again = report(tmp_path, corpus, "--sample", "7", "--sample-seed", "3")
    assert html_again == html
    _, other = report(tmp_path, corpus, "--sample", "7", "--sample-seed", "4")
    assert [a["data-group"] for a in Page(other).find("article")] != [a["data-group"] for a in groups]


def test_offline_and_escaped(tmp_path, corpus):
    _, _, summary, texts = corpus
    _, html = report(tmp_path, corpus, "--sample", "1000", "--pairs", "1000")
    page = Page(html)
    for tag, attrs in page.elements:
        for name in ("src", "href"):
            assert not str(attrs.get(name, "")).startswith(("http://", "https://", "//")), (tag, attrs)
    assert not page.find("link") and all("src" not in a for a in page.find("script"))
    assert len(page.find("script")) == 2  # the search index and the inline script: no text became markup
    pairs = [a for t, a in page.elements if t == "div" and a.get("class") == "pair"]
    assert len(pairs) == summary["to_drop"]  # every group sampled, every dropped document shown
    doc_texts = {a["data-doc"]: a for a in pairs}
    evil = doc_texts[next(i for i, t in texts.items() if t == EVIL)]
    boxes = [a for t, a in page.elements if t == "div" and a.get("class", "").startswith("text")]
    shown = {page.text_of(b) for b in boxes}
    assert evil["data-via"] == "d0" and EVIL in shown and ORIGINAL in shown
    for doc, attrs in doc_texts.items():
        assert texts[doc][:TEXT_CHARS] in shown and texts[attrs["data-via"]][:TEXT_CHARS] in shown
    index = json.loads(page.text_of(page.find("script", type="application/json", id="index")[0]))
    assert "</script><b>id" in index and "\\u003c/script>" in html
    assert index["</script><b>id"][0] in {a["data-group"] for a in page.find("article")}


def test_check_section_and_bad_folder(tmp_path, corpus):
    check = tmp_path / "check.jsonl"
    records = [{"id": "a", "simhash": "0" * 16, "matches": [{"id": "x", "simhash": "0" * 16, "distance": 2}]},
               {"id": "b", "simhash": "0" * 16, "matches": []},
               {"id": None, "source": "f", "line": 3, "error": "malformed JSON"}]
    check.write_text("".join(json.dumps(r) + "\n" for r in records))
    _, html = report(tmp_path, corpus, "--check", str(check))
    page = Page(html)
    got = {a["data-check"]: page.text_of(a) for a in page.find("td") if "data-check" in a}
    assert got == {"records": "3", "with a match": "1", "without": "1", "rejected": "1"}
    failed = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "x.html")])
    assert failed.exit_code == 1 and "is not a groups output" in failed.stderr


def test_pairs_show_bigram_jaccard_and_the_short_text_rule(tmp_path):
    """Each pair's head: bits apart beside the bigram Jaccard (worked by hand: 9/10; 36/37, the
    copy's one more bigram "。。") and, in a run of
    groups with the short-text rule on, why the pair was joined."""
    ph, dot = "习近平会见菲律宾总统", "习近平会见菲律宾总统。"  # bigram Jaccard 9/10, both short
    long = "长江经济带生态环境保护发生了转折性变化，沿江省市共抓大保护、不搞大开发。" * 6  # 216 characters, 36 bigrams (35 + "。长")
    path = tmp_path / "in.jsonl"
    rows = [("p", ph), ("q", dot), ("l", long), ("m", long + "。"), ("s", "春节里的中国"), ("t", "春节近 年味浓")]
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    runner = CliRunner()
    made = runner.invoke(app, ["groups", str(path), "--out", str(tmp_path / "g"), "--short-texts", "on", "--json"])
    assert made.exit_code == 0, made.output
    html = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(tmp_path / "g"), str(path), "--out", str(html)])
    assert result.exit_code == 0, result.output
    page = Page(html.read_text(encoding="utf-8"))
    heads = {a["data-doc"]: (a["data-bigrams"], page.text_of(page.find("div", **{"class": "head"})[n]))
             for n, a in enumerate(page.find("div", **{"class": "pair"}))}
    assert heads == {  # 春节里的中国 / 春节近 年味浓 (0 bits) not joined: each has words the other lacks
        "q": ("0.90", "q dropped via p, 0 bits apart, bigram Jaccard 0.90"
                      "p: short, 10 characters (under 200)"
                      "q: short, 11 characters (under 200)"
                      "near under the short-text rule: the same numbers, and the words of one among the other's"),
        "m": ("0.97", "m dropped via l, 0 bits apart, bigram Jaccard 0.97the short-text rule does not apply: neither "
                      "text is short (216 and 217 characters, not under 200); the fingerprints decide")}
