#!/usr/bin/env python3
"""Write a small synthetic news corpus with planted near-duplicates, for the demo.

Documents are sentences of real Chinese words drawn from jieba's bundled dictionary
(weighted by frequency), so they segment and weigh like real text. Some documents
are copies of others made the way copies arise on the web: a repost with a new time
stamp and view counter, a site's boilerplate line added, about 1% of the characters
changed, the last sentence dropped. ``queries.jsonl`` holds more
such copies plus fresh documents, to look up with ``dedup-hbase check``; ``repost.txt``
is the text of its first repost, to look up with ``dedup-hbase query --file``.

    python scripts/make_corpus.py --docs 2000 --out demo
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

import jieba

BOILERPLATE = ["本文来源：新华网 责任编辑：王小明", "版权所有 未经授权禁止转载", "点击关注，获取更多精彩内容"]


def vocabulary() -> tuple[list[str], list[int]]:
    words, weights = [], []
    for line in (Path(jieba.__file__).parent / "dict.txt").read_text("utf-8").splitlines():
        word, freq, *_ = line.split(" ")
        if len(word) >= 2 and int(freq) >= 50:
            words.append(word)
            weights.append(int(freq))
    return words, weights


def header(rnd: random.Random) -> str:
    return f"发布时间：2025-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d} {rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d} 阅读：{rnd.randint(100, 99999)}\n"


def document(rnd: random.Random, words, weights) -> str:
    sentences = [header(rnd)]
    for _ in range(rnd.randint(6, 12)):
        sentences.append("".join(rnd.choices(words, weights, k=rnd.randint(8, 16))) + "。")
    return "".join(sentences)


def near_copy(rnd: random.Random, text: str, words, weights) -> tuple[str, str]:
    kind = rnd.choice(["repost", "repost", "boilerplate", "edit", "drop-last"])
    if kind == "repost":  # the same article, another time stamp and view counter
        text = header(rnd) + text.split("\n", 1)[1]
    if "edit" in kind:
        chars = list(text)
        for _ in range(max(1, len(chars) // 100)):  # about 1% of the characters
            chars[rnd.randrange(len(chars))] = rnd.choice(rnd.choice(words))
        text = "".join(chars)
    if kind == "drop-last":
        text = text[: text.rstrip("。").rfind("。") + 1]
    if kind == "boilerplate":
        text = text + "\n" + rnd.choice(BOILERPLATE)
    return kind, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000, help="documents in the corpus")
    parser.add_argument("--copies", type=float, default=0.1, help="share of documents that are near-copies")
    parser.add_argument("--queries", type=int, default=20, help="lookups to write to queries.jsonl")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="demo", help="output folder")
    args = parser.parse_args()

    rnd = random.Random(args.seed)
    words, weights = vocabulary()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    originals: list[tuple[str, str]] = []
    with gzip.open(out / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for i in range(args.docs):
            if originals and rnd.random() < args.copies:
                source_id, source = rnd.choice(originals)
                kind, text = near_copy(rnd, source, words, weights)
                record = {"id": f"news-{i:05d}", "text": text, "title": f"{kind} copy of {source_id}"}
            else:
                text = document(rnd, words, weights)
                originals.append((f"news-{i:05d}", text))
                record = {"id": f"news-{i:05d}", "text": text}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    reposts = []
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for n in range(args.queries):
            if n % 4 == 3:
                record = {"id": f"fresh-{n:02d}", "text": document(rnd, words, weights)}
            else:
                source_id, source = rnd.choice(originals)
                kind, text = near_copy(rnd, source, words, weights)
                record = {"id": f"copy-of-{source_id}", "text": text, "kind": kind}
                if kind == "repost":
                    reposts.append(text)
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    if reposts:
        (out / "repost.txt").write_text(reposts[0], encoding="utf-8")
    repost = f" and a repost to {out / 'repost.txt'}" if reposts else ""
    print(f"wrote {args.docs} documents to {out / 'corpus.jsonl.gz'}, {args.queries} lookups to "
          f"{out / 'queries.jsonl'}{repost}")


if __name__ == "__main__":
    main()
