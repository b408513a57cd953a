"""``dedup-hbase report``: one self-contained HTML file from a ``groups`` output (and,
optionally, a ``check`` output) plus the inputs the job read.

The page holds: the counts of the job's JSON summary (``summary.json``: documents, groups,
kept, dropped, rejected; the first four are counted again from ``documents/`` and must agree);
a histogram of the sizes of the groups of two or more and one of the distances of the dropped
documents to their vias (plain SVG); the largest groups; a sample of groups of two or more,
each dropped document's text beside its via's with the differences marked, the bits apart
beside the character-bigram Jaccard of the whole texts and, for a short text or a run of
``groups`` with the short-text rule on (summary.json's ``short_texts``), what the short-text rule says of
the pair (explain.py); a
search box that finds a document of a group of two or more by id; for a check output, its
counts and the histogram of each record's nearest match.

Bounded whatever the output's size: ``sample`` groups drawn with Python's
``random.Random(seed).sample`` from the groups of two or more in the order of their first
member (the page says so), at most ``pairs`` pairs of each, texts cut at ``TEXT_CHARS``
characters, the largest ``largest`` groups with at most ``MEMBERS_SHOWN`` ids each, and the
search over at most ``searchable`` documents. Everything is inline (CSS, one script, SVG): no
URL is fetched, and every text is escaped (a document holding ``<script>`` shows as text).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..jobs.corpus import Fields
from ..text.units import WORDS
from . import sources, svg
from .explain import diff_pieces, texts_pair
from .page_parts import check_section, pair_html, render_page

TEXT_CHARS = 4000   # of each text shown and compared
MEMBERS_SHOWN = 20  # ids listed per largest group


@dataclass(frozen=True)
class ReportOptions:
    sample: int = 50        # groups of two or more shown with their texts
    seed: int = 0           # of the sample
    pairs: int = 5          # dropped documents shown per sampled group, in input order
    largest: int = 20       # largest groups listed
    searchable: int = 50_000  # documents of groups of two or more the search box knows

    def __post_init__(self) -> None:
        for name in ("sample", "pairs", "largest", "searchable"):
            if getattr(self, name) < 0:
                raise InvalidInput(f"--{name} must be >= 0, not {getattr(self, name)}")


def counts_of(groups_out: str) -> dict[str, Any]:
    """The counts of a groups output: those of its summary.json, checked against the
    Parquet rows (documents, groups, multi_groups, to_drop)."""
    import pyarrow.compute as pc

    table = sources.documents(groups_out, ["keep", "size"])
    keep = table["keep"]
    counted = {"documents": table.num_rows, "groups": pc.sum(keep).as_py() or 0,
               "multi_groups": pc.sum(pc.and_(keep, pc.greater(table["size"], 1))).as_py() or 0}
    counted["to_drop"] = counted["documents"] - counted["groups"]
    summary = sources.summary(groups_out)
    if summary is None:
        return {**counted, "read": None, "rejected": None}
    differ = [k for k, v in counted.items() if summary.get(k) != v]
    if differ:
        raise InvalidInput(f"{groups_out}: summary.json and documents/ disagree on {', '.join(differ)}: "
                           "the folder holds parts of two runs; run groups again")
    return summary


def build(groups_out: str, inputs: list[str], html_path: str, options: ReportOptions = ReportOptions(),
          check: str | None = None, fmt: str = "auto", fields: Fields = Fields()) -> dict[str, Any]:
    """Write the report of ``groups_out`` to ``html_path``; returns what it shows in numbers
    (the counts, the sample's size, its seed, the pairs shown)."""
    import pyarrow.compute as pc

    counts = counts_of(groups_out)
    table = sources.documents(groups_out, ["id", "group", "size", "keep", "via", "distance"])
    firsts = table.filter(pc.and_(table["keep"], pc.greater(table["size"], 1))).select(["id", "size"]).to_pylist()
    sample = sorted(random.Random(options.seed).sample(range(len(firsts)), min(options.sample, len(firsts))))
    chosen = [firsts[i]["id"] for i in sample]
    largest = sorted(range(len(firsts)), key=lambda i: (-firsts[i]["size"], i))[:options.largest]
    shown = set(chosen) | {firsts[i]["id"] for i in largest}
    members: dict[str, list[dict]] = {}
    for row in table.filter(pc.is_in(table["group"], value_set=_strings(shown))).to_pylist():
        members.setdefault(row["group"], []).append(row)
    pairs = [(g, m["via"], m["id"], m["distance"]) for g in chosen
             for m in [x for x in members[g] if not x["keep"]][:options.pairs]]
    texts = sources.texts_of(inputs, {x for _, a, b, _ in pairs for x in (a, b)}, fmt, fields) if inputs else {}
    sizes = Counter(f["size"] for f in firsts)
    counted = pc.value_counts(table.filter(pc.invert(table["keep"]))["distance"]).to_pylist()
    distances = {c["values"]: c["counts"] for c in counted}
    k = counts.get("k") or max(distances, default=0)
    charts = [svg.histogram(svg.size_bins(sizes), "groups of two or more by size", "documents in the group"),
              svg.histogram([(str(d), distances.get(d, 0)) for d in range(k + 1)],
                            "dropped documents by distance to their via", "bits")]
    search = _search_index(table, options.searchable)
    body = [_counts_html(counts), '<section id="charts"><h2>Histograms</h2>' + "".join(charts) + "</section>",
            _largest_html(firsts, largest, members),
            _sample_html(chosen, members, pairs, texts, options, len(firsts), bool(inputs),
                         None if counts.get("short_texts") is None else WORDS)]
    if check:
        body.append(check_section(check))
    page = render_page(f"dedup-hbase report: {groups_out}", "\n".join(body), _script_json(search["ids"]),
                       len(search["ids"]), search["note"])
    Path(html_path).write_text(page, encoding="utf-8")
    return {"counts": counts, "sample": len(chosen), "seed": options.seed, "pairs": len(pairs),
            "texts_found": len(texts), "largest": len(largest), "searchable": len(search["ids"])}


def _strings(values):
    import pyarrow as pa

    return pa.array(sorted(values), pa.string())


def _script_json(value) -> str:
    """JSON safe inside a <script> element: no "<" (so no "</script>") and no line separators."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _search_index(table, limit: int) -> dict[str, Any]:
    """id -> [group, via, distance] of the documents of groups of two or more, the first
    ``limit`` of them in input order."""
    import pyarrow.compute as pc

    multi = table.filter(pc.greater(table["size"], 1))
    rows = multi.slice(0, limit).select(["id", "group", "via", "distance"]).to_pylist()
    note = "" if multi.num_rows <= limit else (
        f"The search knows the first {limit:,} of the {multi.num_rows:,} documents of groups of two or more "
        "(in input order).")
    return {"ids": {r["id"]: [r["group"], r["via"], r["distance"]] for r in rows}, "note": note}


def _counts_html(counts: dict[str, Any]) -> str:
    def cell(value):
        return "unknown" if value is None else f"{value:,}"

    rows = [("documents", counts["documents"]), ("groups", counts["groups"]),
            ("groups of two or more", counts["multi_groups"]), ("kept", counts["groups"]),
            ("dropped", counts["to_drop"]), ("read", counts.get("read")), ("rejected", counts.get("rejected"))]
    cells = "".join(f'<tr><th>{escape(name)}</th><td data-count="{escape(name)}">{cell(value)}</td></tr>'
                    for name, value in rows)
    settings = ", ".join(f"{key} {escape(str(counts[key]))}" for key in ("k", "scheme", "engine") if key in counts)
    return f'<section id="counts"><h2>Counts</h2><table class="counts">{cells}</table><p>{settings}</p></section>'


def _largest_html(firsts: list[dict], largest: list[int], members: dict[str, list[dict]]) -> str:
    rows = []
    for i in largest:
        group = firsts[i]["id"]
        ids = [m["id"] for m in members[group]]
        more = f" … and {len(ids) - MEMBERS_SHOWN:,} more" if len(ids) > MEMBERS_SHOWN else ""
        rows.append(f'<tr data-group="{escape(group)}"><td>{firsts[i]["size"]:,}</td><td>{escape(group)}</td>'
                    f'<td>{escape(", ".join(ids[:MEMBERS_SHOWN]))}{more}</td></tr>')
    return ('<section id="largest"><h2>Largest groups</h2><table class="largest"><tr><th>size</th><th>kept</th>'
            f'<th>members</th></tr>{"".join(rows)}</table></section>')


def _sample_html(chosen: list[str], members: dict[str, list[dict]], pairs, texts, options: ReportOptions,
                 multi: int, have_inputs: bool, short_texts: str | None) -> str:
    how = (f"{len(chosen):,} of the {multi:,} groups of two or more, drawn with Python's "
           f"random.Random({options.seed}).sample from those groups in the order of their first member "
           f"(--sample {options.sample}, --sample-seed {options.seed}), shown in that order; of each, the first "
           f"{options.pairs} dropped documents in input order beside their vias; texts cut at {TEXT_CHARS:,} characters.")
    if not have_inputs:
        how += " No inputs were given: the texts are not shown."
    by_group: dict[str, list] = {}
    for group, via, doc, distance in pairs:
        by_group.setdefault(group, []).append((via, doc, distance))
    parts = [f'<section id="sample"><h2>Sample of groups</h2><p class="how">{escape(how)}</p>']
    for n, group in enumerate(chosen, 1):
        listed = ", ".join(m["id"] if m["keep"] else f'{m["id"]} (via {m["via"]}, {m["distance"]})'
                           for m in members[group][:MEMBERS_SHOWN])
        parts.append(f'<article class="group" id="g-{n}" data-group="{escape(group)}"><h3>group {escape(group)}: '
                     f'{len(members[group]):,} documents</h3><p class="members">{escape(listed)}</p>')
        for via, doc, distance in by_group.get(group, []):
            if via in texts and doc in texts:
                a, b = texts[via].text, texts[doc].text  # the figures of the whole texts, the pieces of their heads
                pieces = diff_pieces(a[:TEXT_CHARS], b[:TEXT_CHARS])
                parts.append(pair_html(via, doc, distance, texts_pair(via, a, doc, b, pieces, short_texts)))
            else:
                parts.append(f'<p class="pair missing">{escape(doc)} via {escape(via)}, {distance} bits: '
                             "texts not in the inputs given</p>")
        parts.append("</article>")
    parts.append("</section>")
    return "".join(parts)
