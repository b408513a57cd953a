#!/usr/bin/env python3
"""Seeded samples of text pairs to be read by eye (docs/quality.md, "Precision read by eye").

A text measure (character-bigram Jaccard) cannot tell a copy reworded from another news item
cut from the same template (李希在湖南调研 / 李希在河南调研: Jaccard 0.50, one character apart).
This prints pairs for a person to judge, one per line: number, bigram Jaccard, bits apart (drops
only), the dropped text, the text of its via.

    python scripts/quality_eye.py drops [--field title] [--n 40] [--seed 44] [-- GROUPS OPTIONS]
        the non-identical drops of a whole `dedup-hbase groups` run on the shared news corpus's
        field: texts that differ beyond case, white space and punctuation from their via
    python scripts/quality_eye.py jaccard --low 0.5 --high 0.6 [--field title] [--n 40] [--seed 44]
        pairs of distinct texts of that field whose bigram Jaccard is in [low, high): what a
        candidate search confirmed by Jaccard >= low would join

The judgement itself is the reader's; docs/quality.md records it with the command.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import tempfile
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dedup_hbase.text.shorts import bigrams, jaccard, similarity  # noqa: E402

CORPUS = ROOT.parent / "shared" / "data" / "xwlb_zh.jsonl.gz"


def texts(field: str) -> list[tuple[str, str]]:
    """(id, text) of every record of the news corpus with a non-empty ``field``."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        rows = (json.loads(line) for line in f)
        return [(f"r{i}", row[field]) for i, row in enumerate(rows) if row.get(field)]


def core(text: str) -> str:
    """The text without case, white space and punctuation (NFKC): what 'identical' means here."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text)).lower()


def drops(field: str, groups_args: list[str]) -> list[tuple[float, int, str, str]]:
    """(Jaccard, bits, text, via's text) of every drop of `groups` whose text differs from its via's
    beyond ``core``."""
    docs = dict(texts(field))
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "in.jsonl"
        path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in docs.items()),
                        encoding="utf-8")
        subprocess.run([sys.executable, "-m", "dedup_hbase", "groups", "--out", f"{work}/out", *groups_args, str(path)],
                       check=True, capture_output=True, cwd=ROOT)
        with open(f"{work}/out/dropped.jsonl", encoding="utf-8") as f:
            dropped = [json.loads(line) for line in f]
    print(f"# {len(dropped):,} drops of {len(docs):,} texts", file=sys.stderr)
    return [(similarity(docs[d["id"]], docs[d["via"]]), d["distance"], docs[d["id"]], docs[d["via"]])
            for d in dropped if core(docs[d["id"]]) != core(docs[d["via"]])]


def jaccard_pairs(field: str, low: float, high: float) -> list[tuple[float, int, str, str]]:
    """Every pair of distinct texts of ``field`` with bigram Jaccard in [low, high) (bits: -1)."""
    distinct = sorted({t for _, t in texts(field)})
    sets = [bigrams(t) for t in distinct]
    holders = defaultdict(list)
    for i, grams in enumerate(sets):
        for g in grams:
            holders[g].append(i)
    found = []
    for i, grams in enumerate(sets):
        others = {j for g in grams for j in holders[g] if j > i}
        found += [(j_, -1, distinct[i], distinct[j]) for j in sorted(others)
                  if low <= (j_ := jaccard(grams, sets[j])) < high]
    print(f"# {len(distinct):,} distinct texts", file=sys.stderr)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("drops", "jaccard"))
    parser.add_argument("--field", default="title", help="the corpus field read (default title)")
    parser.add_argument("--n", type=int, default=40, help="pairs sampled (default 40)")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--low", type=float, default=0.5)
    parser.add_argument("--high", type=float, default=0.6)
    parser.epilog = "After --: options of `dedup-hbase groups` (drops), as `drops -- --short-texts off`."
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, groups_args = parser.parse_args(argv[:cut]), argv[cut + 1:]
    pairs = drops(args.field, groups_args) if args.what == "drops" else jaccard_pairs(args.field, args.low, args.high)
    print(f"# {len(pairs):,} pairs; {min(args.n, len(pairs))} sampled with seed {args.seed}", file=sys.stderr)
    for n, (j, bits, a, b) in enumerate(random.Random(args.seed).sample(pairs, min(args.n, len(pairs))), 1):
        print(f"{n}\t{j:.2f}\t{bits}\t{a}\t{b}")


if __name__ == "__main__":
    main()
