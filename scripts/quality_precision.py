"""Precision of a whole ``groups`` run, and recall on planted short copies (issue 44).

``python scripts/quality.py --precision`` runs it (this module holds it, so that quality.py
stays the harness of planted lookups). For each corpus it writes the documents as JSONL, adds
planted copies of short texts, runs ``dedup-hbase groups`` (the command as shipped, with
``--groups-args`` passed on, engine local) and reads ``dropped.jsonl`` back:

* precision: among the dropped documents, the share whose text is not near its ``via`` --
  character-bigram Jaccard of the texts' bodies (``shorts.similarity``: of ``shorts.squeezed``,
  the normalized body without white space, what ``report`` and ``explain`` show too) below 0.5,
  a measure that does not use the fingerprint -- by length band of the dropped document's
  squeezed body (< 50, 50-200, 200-1,000, > 1,000 characters);
* recall: the planted copies (of originals under 200 characters: a character edited, a word
  added, punctuation changed) that end in their original's group.

Corpora (from ../shared/data): ``titles`` (the news items' ``title`` field), ``glossary``
(jargon_en's entries), ``news`` (the news bodies), ``mixed`` (all three at once); and
``docstrings``, short English texts of this machine: the first paragraph (15 to 200
characters) of every function's and class's docstring in the standard library of the Python
that runs this (its tests left out: 7,503 texts under CPython 3.11). The
planted copies are seeded (``--seed``); every count goes to ``--json``.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import random
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

from dedup_hbase.text.shorts import similarity
from dedup_hbase.text.shorts import squeezed as squeeze

NEAR_JACCARD = 0.5
BANDS = ((0, 50, "<50"), (50, 200, "50-200"), (200, 1000, "200-1000"), (1000, 1 << 62, ">1000"))
SHORT = 200  # planted copies are made of originals shorter than this (characters of the squeezed body)
PLANTED_KINDS = ("char_edited", "word_added", "punctuation")
PUNCT = {"zh": "，。、！？：；", "en": ",.;:!?-"}


def band(length: int) -> str:
    return next(name for lo, hi, name in BANDS if lo <= length < hi)


def read(path: str, field: str, prefix: str) -> list[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [(f"{prefix}:{r['id']}", r[field]) for r in rows if r.get(field)]


def docstrings() -> list[tuple[str, str]]:
    """(file:line, first paragraph) of every function's and class's docstring of 15 to 200
    characters (white space made single) in this Python's standard library, its tests and
    site-packages left out, in path order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in ("test", "tests", "site-packages", "idle_test"))
        for name in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / name
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(node):
                    first = " ".join(ast.get_docstring(node).strip().split("\n\n")[0].split())
                    if 15 <= len(first) <= 200:
                        out.append((f"doc:{path.relative_to(root)}:{node.lineno}", first))
    return out


def corpora(data: Path) -> dict[str, list[tuple[str, str]]]:
    news = data / "xwlb_zh.jsonl.gz"
    titles, bodies = read(str(news), "title", "title"), read(str(news), "text", "news")
    glossary = read(str(data / "jargon_en.jsonl.gz"), "text", "glossary")
    return {"titles": titles, "glossary": glossary, "news": bodies, "mixed": titles + glossary + bodies,
            "docstrings": docstrings()}


def lang(text: str) -> str:
    return "zh" if sum("\u3400" <= ch <= "\u9fff" for ch in text) > 0.2 * max(1, len(text)) else "en"


def plant(text: str, kind: str, rnd: random.Random, words: list[str]) -> str:
    """A short copy of ``text``: one letter replaced by another of the text's own; one word
    (of another document; Chinese: two characters) inserted at a space (Chinese: anywhere); or
    punctuation changed: a mark replaced or removed, else a space made a mark, else a mark added
    at the end (never inside a word)."""
    zh = lang(text) == "zh"
    if kind == "char_edited":
        places = [i for i, ch in enumerate(text) if ch.isalpha()]
        i = rnd.choice(places)
        pool = [ch for ch in text if ch.isalpha() and ch != text[i]] or ["x"]
        return text[:i] + rnd.choice(pool) + text[i + 1:]
    if kind == "word_added":
        word = rnd.choice(words)
        if zh:
            i = rnd.randrange(len(text) + 1)
            return text[:i] + word + text[i:]
        parts = text.split(" ")
        parts.insert(rnd.randrange(len(parts) + 1), word)
        return " ".join(parts)
    marks = PUNCT["zh" if zh else "en"]
    places = [i for i, ch in enumerate(text) if not ch.isalnum() and not ch.isspace()]
    if places:  # a mark replaced by another, or removed
        i = rnd.choice(places)
        return text[:i] + (rnd.choice([m for m in marks if m != text[i]]) if rnd.random() < 0.5 else "") + text[i + 1:]
    spaces = [i for i, ch in enumerate(text) if ch.isspace()]
    if spaces:  # a space made a mark
        i = rnd.choice(spaces)
        return text[:i] + rnd.choice(marks) + text[i + 1:]
    return text + rnd.choice(marks)  # a mark added at the end


def planted(docs: list[tuple[str, str]], per_kind: int, rnd: random.Random) -> list[tuple[str, str, str, str]]:
    """(copy id, text, original id, kind) for ``per_kind`` originals under ``SHORT`` characters each."""
    short = [(i, t) for i, t in docs if 4 <= len(squeeze(t)) < SHORT]
    words = [w for _, t in rnd.sample(docs, min(500, len(docs))) for w in t.split() if 2 <= len(w) <= 8][:5000]
    words = words or ["copy"]
    zh_words = [t[j:j + 2] for _, t in rnd.sample(docs, min(500, len(docs))) for j in range(0, 6, 2)
                if lang(t) == "zh" and len(t) > j + 2]
    out = []
    for kind in PLANTED_KINDS:
        for n, (doc_id, text) in enumerate(rnd.sample(short, min(per_kind, len(short)))):
            pool = zh_words if lang(text) == "zh" and zh_words else words
            copy = plant(text, kind, rnd, pool)
            if copy != text:
                out.append((f"copy:{kind}:{n}:{doc_id}", copy, doc_id, kind))
    return out


def run_groups(rows: list[tuple[str, str]], work: Path, groups_args: str) -> tuple[dict[str, dict], float]:
    src = work / "docs.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for doc_id, text in rows:
            f.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    out = work / "groups"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dedup_hbase", "groups", str(src), "--out", str(out),
                    *shlex.split(groups_args)], check=True, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    dropped = {}
    with (out / "dropped.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            dropped[d["id"]] = d
    with (out / "groups.jsonl").open(encoding="utf-8") as f:
        group_of = {i: g["group"] for line in f for g in [json.loads(line)] for i in g["ids"]}
    return {"dropped": dropped, "group_of": group_of}, elapsed


def measure(name: str, docs: list[tuple[str, str]], per_kind: int, seed: int, groups_args: str) -> dict:
    rnd = random.Random(seed)
    copies = planted(docs, per_kind, rnd)
    rows = docs + [(c, t) for c, t, _, _ in copies]
    texts = dict(rows)
    with tempfile.TemporaryDirectory(prefix="dedup-precision-") as work:
        found, elapsed = run_groups(rows, Path(work), groups_args)
    dropped, group_of = found["dropped"], found["group_of"]
    per_band = {name: Counter() for _, _, name in BANDS}
    examples = []
    for doc_id, d in dropped.items():
        if doc_id.startswith("copy:"):
            continue  # the planted copies count for recall; precision is the corpus's own drops
        b = band(len(squeeze(texts[doc_id])))
        j = similarity(texts[doc_id], texts[d["via"]])
        per_band[b]["dropped"] += 1
        per_band[b]["identical"] += squeeze(texts[doc_id]) == squeeze(texts[d["via"]])
        if j < NEAR_JACCARD:
            per_band[b]["unrelated"] += 1
            if len(examples) < 12:
                examples.append((texts[doc_id][:60], texts[d["via"]][:60], d["distance"], round(j, 2)))
    recall = Counter()
    for copy_id, _, original, kind in copies:
        recall[kind, "planted"] += 1
        g = group_of.get(copy_id)
        recall[kind, "found"] += g is not None and g == group_of.get(original)
    return {"corpus": name, "documents": len(docs), "planted": len(copies), "elapsed_s": round(elapsed, 1),
            "bands": {b: dict(c) for b, c in per_band.items()},
            "recall": {kind: [recall[kind, "found"], recall[kind, "planted"]] for kind in PLANTED_KINDS},
            "examples": examples}


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def markdown(results: list[dict], groups_args: str) -> str:
    head = "| corpus | docs | " + " | ".join(f"unrelated drops {name}" for _, _, name in BANDS) + \
        " | unrelated < 200 | " + " | ".join(f"recall {k}" for k in PLANTED_KINDS) + " |"
    lines = [f"`groups {groups_args}`".replace("groups ", "groups ", 1) if groups_args else "`groups` (defaults)", "",
             head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        bands = r["bands"]
        short = [sum(bands[b].get(x, 0) for b in ("<50", "50-200")) for x in ("unrelated", "dropped")]
        lines.append(f"| {r['corpus']} | {r['documents']:,} | "
                     + " | ".join(pct(bands[b].get("unrelated", 0), bands[b].get("dropped", 0)) for _, _, b in BANDS)
                     + f" | {pct(*short)} | "
                     + " | ".join(f"{f / p:.3f}" if p else "-" for f, p in r["recall"].values()) + " |")
    return "\n".join(lines) + "\n"


def main(data: str, corpora_names: str, per_kind: int, seed: int, groups_args: str, json_out: str | None,
         markdown_out: str | None) -> None:
    every = corpora(Path(data))
    results = []
    for name in corpora_names.split(","):
        r = measure(name, every[name], per_kind, seed, groups_args)
        results.append(r)
        print(f"{name}: {json.dumps({k: v for k, v in r.items() if k != 'examples'}, ensure_ascii=False)}", file=sys.stderr)
        for e in r["examples"][:6]:
            print(f"   unrelated: {e}", file=sys.stderr)
    text = markdown(results, groups_args)
    print(text)
    if json_out:
        Path(json_out).write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    if markdown_out:
        Path(markdown_out).write_text(text, encoding="utf-8")
