"""dedup-hbase report opened in a real browser: Chromium (Debian's package; scripts/setup --test
installs it) headless, on the page a real ``groups`` run on planted structure gave. In the DOM
Chromium builds (after the page's script ran): the counts equal the groups command's JSON
summary, both histograms have their bars, the sampled groups hold each dropped document's text
beside its via's, and ``#search=ID`` in the URL finds the document (the script fills #found and
hides the other groups). A screenshot is written into the test's folder and read back as PNG."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter

import pytest
from test_report import Page, corpus, report  # noqa: F401  (corpus: the planted groups output, a fixture)

from dedup_hbase.report.page import TEXT_CHARS
from dedup_hbase.report.svg import size_bins

from conftest import require_or_skip

WIDTH, HEIGHT = 1000, 1400


@pytest.fixture(scope="module")
def browser():
    found = shutil.which("chromium")
    if found is None:
        require_or_skip("chromium is not installed (scripts/setup --test installs it: apt-get install chromium)")
    return found


def chromium(browser, tmp_path, *args: str) -> str:
    """Chromium headless with its own profile in ``tmp_path`` (``--no-sandbox``: its sandbox
    cannot start as root, as CI runs); its stdout."""
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                           *args], capture_output=True, text=True, timeout=180, env={**os.environ, "LANG": "C.UTF-8"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_page_in_chromium(tmp_path, corpus, browser):  # noqa: F811
    _, _, summary, texts = corpus
    shown, html = report(tmp_path, corpus, "--sample", "7", "--sample-seed", "3")
    rows = output_rows(corpus)
    wanted = Page(html).find("div", **{"class": "pair"})[0]["data-doc"]  # a dropped document shown
    group, via, distance = (rows["dropped"][wanted][x] for x in ("group", "via", "distance"))
    dom = Page(chromium(browser, tmp_path, "--dump-dom", (tmp_path / "r.html").as_uri() + f"#search={wanted}"))

    counts = {a["data-count"]: dom.text_of(a) for a in dom.find("td") if "data-count" in a}
    assert counts == {"documents": f"{summary['documents']:,}", "groups": f"{summary['groups']:,}",
                      "groups of two or more": f"{summary['multi_groups']:,}", "kept": f"{summary['groups']:,}",
                      "dropped": f"{summary['to_drop']:,}", "read": f"{summary['read']:,}",
                      "rejected": f"{summary['rejected']:,}"}

    bars: list[list[dict]] = []
    for tag, attrs in dom.elements:
        if tag == "svg":
            bars.append([])
        elif tag == "rect" and attrs.get("class") == "bar":
            bars[-1].append(attrs)
    assert len(bars) == 2
    sizes = Counter(size for size in rows["sizes"] if size > 1)
    assert [(b["data-label"], int(b["data-count"])) for b in bars[0]] == size_bins(sizes)
    assert [b["data-label"] for b in bars[1]] == [str(d) for d in range(summary["k"] + 1)]
    assert sum(int(b["data-count"]) for b in bars[1]) == summary["to_drop"]

    articles = dom.find("article")
    assert len(articles) == shown["sample"] == 7
    pairs = dom.find("div", **{"class": "pair"})
    assert len(pairs) == shown["pairs"] > 0
    boxes = {dom.text_of(a) for t, a in dom.elements if t == "div" and a.get("class", "").startswith("text")}
    for p in pairs:
        assert texts[p["data-doc"]][:TEXT_CHARS] in boxes and texts[p["data-via"]][:TEXT_CHARS] in boxes
        assert f"{p['data-doc']} dropped via {p['data-via']}" in dom.text_of(p)

    # the script ran: #search=ID found the document and hid every group but its own
    (found,) = [a for t, a in dom.elements if t == "div" and a.get("id") == "found"]
    assert dom.text_of(found) == f"{wanted}: group {group}, via {via}, {distance} bits"
    hidden = {a["data-group"]: "hidden" in a.get("class", "").split() for a in articles}
    assert hidden == {g: g != group for g in hidden} and list(hidden.values()).count(False) == 1


def output_rows(planted_output) -> dict:
    """What the groups output says, read from its JSON lines (not from the page): each
    group's size, and each dropped document's group, via and distance."""
    _, out, _, _ = planted_output
    with open(out / "groups.jsonl", encoding="utf-8") as f:
        sizes = [json.loads(line)["size"] for line in f]
    with open(out / "dropped.jsonl", encoding="utf-8") as f:
        dropped = {row["id"]: row for row in map(json.loads, f)}
    return {"sizes": sizes, "dropped": dropped}


def test_a_screenshot_of_the_page(tmp_path, corpus, browser):  # noqa: F811
    report(tmp_path, corpus, "--sample", "3")
    shot = tmp_path / "report.png"
    chromium(browser, tmp_path, "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
             (tmp_path / "r.html").as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind, width, height, depth, color = struct.unpack(">I4sIIBB", data[8:26])
    assert (kind, length, width, height) == (b"IHDR", 13, WIDTH, HEIGHT)
    pixels = zlib.decompress(b"".join(chunks(data, b"IDAT")))
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    assert depth == 8 and len(pixels) == HEIGHT * (1 + WIDTH * channels)  # every row whole
    assert len(set(pixels)) > 16  # something was drawn: text and bars, not one blank colour


def chunks(data: bytes, kind: bytes):
    """The contents of a PNG's chunks of ``kind``, in order."""
    at = 8
    while at < len(data):
        length, name = struct.unpack(">I4s", data[at:at + 8])
        if name == kind:
            yield data[at + 8:at + 8 + length]
        at += 12 + length
