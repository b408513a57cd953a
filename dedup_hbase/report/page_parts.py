"""The pieces of the HTML report (page.py) that do not depend on a groups output: the page
around the sections (inline CSS and one inline script, nothing fetched), a pair of texts with
the differences marked, and the section of a ``check`` output.

Every text put into the page goes through ``html.escape``; the search index is JSON inside a
``<script type="application/json">`` element with every ``<`` written as ``\\u003c``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from html import escape
from pathlib import Path

from . import svg
from .explain import Pair, rule_lines

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#222}
h1{font-size:20px} h2{font-size:17px;border-bottom:1px solid #ccc;padding-bottom:2px} h3{font-size:15px}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
table.counts td{text-align:right}
svg.chart{max-width:100%;height:auto;margin:4px 16px 4px 0}
svg .bar{fill:#4a7ab5} svg text{font:11px sans-serif;fill:#333}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px;margin:8px 0 16px}
.pair .head{grid-column:1/3;font-weight:600}
.text{white-space:pre-wrap;border:1px solid #ddd;padding:6px;background:#fafafa;overflow-wrap:anywhere}
del{background:#fbb;text-decoration:line-through} ins{background:#bfb;text-decoration:none}
.pair .rule{font-weight:400;color:#555} .how,.note{color:#555} .members{font-size:12px;color:#444}
#found{margin:6px 0;font-family:monospace} .hidden{display:none}
@media (max-width:800px){.pair{grid-template-columns:1fr}.pair .head{grid-column:1}}
"""

SCRIPT = """
(function(){
  var index = JSON.parse(document.getElementById('index').textContent);
  var box = document.getElementById('search'), found = document.getElementById('found');
  function show(){
    var id = box.value.trim(), hit = index[id];
    document.querySelectorAll('article.group').forEach(function(a){
      a.classList.toggle('hidden', id !== '' && hit !== undefined && a.dataset.group !== hit[0]);
    });
    if (id === '') { found.textContent = ''; return; }
    if (hit === undefined) { found.textContent = id + ': not in a group of two or more known to this page'; return; }
    found.textContent = id + ': group ' + hit[0] + (hit[1] === null ? ' (kept)' : ', via ' + hit[1] + ', ' + hit[2] + ' bits');
  }
  box.addEventListener('input', show);
  function asked(){  // report.html#search=ID: the page opens searching for ID
    var m = /^#search=(.*)$/.exec(location.hash);
    if (m) { box.value = decodeURIComponent(m[1]); show(); }
  }
  window.addEventListener('hashchange', asked);
  asked();
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title><style>@CSS@</style></head>
<body><h1>@TITLE@</h1>
<section id="find"><label for="search">Find a document by id: </label><input id="search" type="search" size="40">
<div id="found"></div><p class="note">The search knows @SEARCHABLE@ documents. @NOTE@</p></section>
@BODY@
<script type="application/json" id="index">@INDEX@</script>
<script>@SCRIPT@</script>
</body></html>
"""


def render_page(title: str, body: str, index_json: str, searchable: int, note: str) -> str:
    """The whole page; ``title`` and ``note`` are escaped here, ``body`` is HTML already."""
    values = {"@TITLE@": escape(title), "@CSS@": CSS, "@SEARCHABLE@": f"{searchable:,}", "@NOTE@": escape(note),
              "@SCRIPT@": SCRIPT, "@INDEX@": index_json, "@BODY@": body}
    return re.sub(r"@[A-Z]+@", lambda m: values[m.group(0)], PAGE)  # one pass: no value is read again


def pair_html(via: str, doc: str, distance: int, pair: Pair) -> str:
    """A dropped document's text (right) beside its via's (left, ``pair.a``), what only one has
    marked (<del> on the left, <ins> on the right); the bits apart beside the bigram Jaccard,
    and what the short-text rule says of the pair (``rule_lines``)."""
    left, right = [], []
    for op, a, b in pair.pieces:
        if op == "equal":
            left.append(escape(a))
            right.append(escape(b))
            continue
        if a:
            left.append(f"<del>{escape(a)}</del>")
        if b:
            right.append(f"<ins>{escape(b)}</ins>")
    rule = "".join(f'<div class="rule">{escape(line)}</div>' for line in rule_lines(pair))
    return (f'<div class="pair" data-via="{escape(via)}" data-doc="{escape(doc)}" data-bigrams="{pair.bigrams:.2f}">'
            f'<div class="head">{escape(doc)} dropped via {escape(via)}, {distance} bits apart, '
            f"bigram Jaccard {pair.bigrams:.2f}{rule}</div>"
            f'<div class="text via">{"".join(left)}</div><div class="text doc">{"".join(right)}</div></div>')


def check_records(path: str):
    """The records of a check output: a file of JSON lines (``check --json``), or a folder
    (``check --engine spark --out``: its json/ folder, or the folder itself) of them."""
    folder = Path(path)
    if folder.is_dir():
        inner = folder / "json" if (folder / "json").is_dir() else folder
        files = sorted(p for p in inner.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))
    else:
        files = [folder]
    for file in files:
        with open(file, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def check_section(path: str) -> str:
    """The counts of a check output and the histogram of each record's nearest match."""
    records = rejected = matched = 0
    nearest: Counter = Counter()
    for record in check_records(path):
        records += 1
        if "error" in record:
            rejected += 1
        elif record.get("matches"):
            matched += 1
            nearest[record["matches"][0]["distance"]] += 1
    rows = [("records", records), ("with a match", matched), ("without", records - rejected - matched),
            ("rejected", rejected)]
    cells = "".join(f'<tr><th>{name}</th><td data-check="{name}">{value:,}</td></tr>' for name, value in rows)
    chart = svg.histogram([(str(d), nearest.get(d, 0)) for d in range(max(nearest, default=0) + 1)],
                          "checked documents by distance to their nearest match", "bits")
    return (f'<section id="check"><h2>Check: {escape(path)}</h2><table class="counts">{cells}</table>'
            f"{chart}</section>")
