#!/usr/bin/env python3
"""Near-duplicate quality harness: does a fingerprint find the copies real copies make?

For a sample of real documents ("originals") it makes near-duplicate variants the ways
copies arise on the web, indexes the originals together with every other document of
the corpus ("distractors"), looks every variant up, and reports per kind of variant:

* recall: the variant finds its own original within k bits;
* false positives per lookup: matches that are clearly other documents, i.e. not the
  original and with a character 4-gram Jaccard below 0.3 with both the variant and its
  original (so natural near-duplicates in the corpus, such as recurring news briefs,
  are not counted as false).

Every fingerprint method runs on the same documents and variants in the same run:
dedup-hbase's featurizers as shipped (``jieba``; ``shingles`` of 4 and 3 characters), and
the ``simhash`` package (leonsim) with its default features and with jieba words. The
fingerprints come from dedup_hbase's public API (``make_fingerprinter``, ``Index``): it
measures what ships, no featurizer of its own. Two helpers of the package's modules serve
the report, not the measurement: ``report.tune``'s 4-gram Jaccard (the one ``dedup-hbase tune``
uses) that tells a false match from a natural near-duplicate, and ``boilerplate.boilerplate_reason`` /
``logical_lines`` for ``--show-boilerplate`` (what the rules drop). The ablations that chose
jieba version 2 ran in this harness's earlier revisions (up to commit 41904de);
docs/history/quality-ablation-2026-11-22.md keeps their results.

Lookups are brute force (numpy XOR + popcount over all indexed fingerprints), which
gives exactly the answers of dedup-hbase's index (proven exact in tests/); pass
``--verify-index`` to check that on the real ``Index`` for one method and k.

    python scripts/quality.py --data ../shared/data/xwlb_zh.jsonl.gz
    python scripts/quality.py --data ../shared/data/jargon_en.jsonl.gz --markdown /tmp/jargon.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from dedup_hbase.index.confirm import kept_of
from dedup_hbase.report.copies import KINDS, Copier, detect_lang, edit_characters
from dedup_hbase.text.boilerplate import boilerplate_reason, logical_lines
from dedup_hbase.text.features import normalize
from dedup_hbase.text.units import text_sketches

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the harness's modules beside it

from quality_eval import FP_BUDGET, Result, background, evaluate, verify_index
from quality_methods import ALL_METHODS, KEPT, METHOD_DOC, SHORT, fingerprint_all

# The variants: copies made the ways copies arise (dedup_hbase.report.copies, which the
# `dedup-hbase tune` command uses too); the methods and their fingerprints: quality_methods.py;
# the lookups and their counts: quality_eval.py; here the command and its report.


def fmt_pair(r: Result, kind, k):
    if kind == "overall":
        rec, fp = r.overall(k)
    else:
        rec, fp = r.recall(kind, k), r.fp_rate(kind, k)
    if fp == float("inf"):
        return f"{rec:.3f} / **>2**"
    return f"{rec:.3f} / {fp:.4f}" if fp < 0.1 else f"{rec:.3f} / **{fp:.3f}**"


def markdown(results: dict[str, Result], kinds, main_methods, ks_show, bg=None, best_kmax=8) -> str:
    out = []
    # summary: method x k
    out.append("Overall (mean recall over kinds / false positives per lookup), by k; "
               f"best k = the k in 3..{best_kmax} with the highest recall at <= {FP_BUDGET} FP/lookup:\n")
    ks = list(range(ks_show[0], ks_show[1] + 1))
    out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " | best k |")
    out.append("|---|" + "---|" * (len(ks) + 1))
    for m, r in results.items():
        bk = r.best_k(kmax=best_kmax)
        out.append(f"| {m} | " + " | ".join(fmt_pair(r, 'overall', k) for k in ks) + f" | {bk if bk is not None else '-'} |")
    out.append("")
    if bg:
        out.append("Background: clearly different indexed documents (4-gram Jaccard < 0.3) within k bits of an indexed "
                   "document, per document, over all pairs of the index (a steadier estimate of the false-positive rate "
                   "than the lookups, which rest on the sampled originals):\n")
        out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " |")
        out.append("|---|" + "---|" * len(ks))
        for m, rates in bg.items():
            out.append(f"| {m} | " + " | ".join("**>1**" if rates[k] is None else f"{rates[k]:.4f}" for k in ks) + " |")
        out.append("")
    # per kind at k = 3, then at each method's best k
    out.append("Per kind at k = 3, recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(main_methods) + " |")
    out.append("|---|" + "---|" * len(main_methods))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, 3) for m in main_methods) + " |")
    out.append("")
    cols = [(m, results[m].best_k(kmax=best_kmax)) for m in main_methods]
    cols = [(m, k) for m, k in cols if k is not None]
    out.append(f"Per kind at each method's best k (<= {best_kmax}), recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(f"{m} k={k}" for m, k in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, k) for m, k in cols) + " |")
    out.append("")
    return "\n".join(out)


def read_corpus(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="JSONL(.gz) with id and text (title optional); with --precision the folder "
                                       "holding xwlb_zh.jsonl.gz and jargon_en.jsonl.gz (default ../shared/data)")
    parser.add_argument("--originals", type=int, default=1000, help="documents sampled as originals")
    parser.add_argument("--distractors", default="all", help="other documents indexed with them: a number or 'all'")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"variant kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--methods", default="all", help=f"comma-separated methods (default all: {', '.join(ALL_METHODS)})")
    parser.add_argument("--kmax", type=int, default=10, help="largest k evaluated and shown (k = 0..kmax)")
    parser.add_argument("--best-kmax", type=int, default=8,
                        help="largest k considered for a method's best k (schemes beyond 8 cost 66+ index rows per document)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="write every count to this JSON file")
    parser.add_argument("--verify-index", metavar="METHOD:K",
                        help="check brute force against dedup-hbase's Index for one method at one k "
                             "(e.g. dedup-hbase:jieba:8)")
    parser.add_argument("--no-background", action="store_true", help="skip the all-pairs background false-match rate")
    parser.add_argument("--dump-fp", metavar="METHOD:K", help="print the false positives of one method at one k")
    parser.add_argument("--show-boilerplate", action="store_true",
                        help="print what the boilerplate rules drop from the originals and the variants")
    parser.add_argument("--precision", action="store_true",
                        help="instead: the precision of whole groups runs and the recall of planted short copies "
                             "(scripts/quality_precision.py)")
    parser.add_argument("--corpora", default="titles,glossary,news,mixed,docstrings",
                        help="with --precision: the corpora")
    parser.add_argument("--per-kind", type=int, default=300, help="with --precision: planted copies per kind")
    parser.add_argument("--groups-args", default="", help="with --precision: options given to dedup-hbase groups")
    parser.add_argument("--short-recall", action="store_true",
                        help="instead: recall of planted short copies by the way candidates are found, all pairs "
                             "compared (scripts/quality_short_recall.py; the first of --corpora)")
    parser.add_argument("--short-texts", default="12,16,18,20",
                        help="with --short-recall: the rules measured: T (the sketch within T bits), J (bigram "
                             "Jaccard >= 0.5), WN (a 256-bit sketch within N), SN (the sketch within N and "
                             "insertions only), CN (the sketch within N and units.near: the same numbers, the words "
                             "of one among the other's), UC:H (units.near on a C-bit bitmap and an H-bit hash)")
    parser.add_argument("--eye", nargs=2, metavar=("RULE", "VARIANT"),
                        help="with --short-recall: print a seeded sample of that rule's non-identical drops under "
                             "200 characters with that variant's candidates, to be read by eye (as --eye S12 "
                             "simhash<=3); --eye-n pairs, --eye-seed")
    parser.add_argument("--eye-n", type=int, default=40)
    parser.add_argument("--eye-seed", type=int, default=44)
    args = parser.parse_args()
    t_start = time.time()
    if args.short_recall:
        import quality_short_recall

        quality_short_recall.main(args.data or str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"),
                                  args.corpora.split(",")[0], args.per_kind, args.seed, args.short_texts, args.json,
                                  (*args.eye, args.eye_n, args.eye_seed) if args.eye else None)
        return
    if args.precision:
        import quality_precision

        quality_precision.main(args.data or str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"),
                               args.corpora, args.per_kind, args.seed, args.groups_args, args.json, args.markdown)
        return
    if not args.data:
        parser.error("--data is required")

    methods = ALL_METHODS if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            parser.error(f"unknown kind {k!r}")

    rows = read_corpus(args.data)
    texts_all = [r["text"] for r in rows]
    lang = detect_lang(texts_all)
    rnd = random.Random(args.seed)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    n_orig = min(args.originals, len(rows))
    orig_rows = order[:n_orig]
    others = order[n_orig:]
    if args.distractors != "all":
        others = others[: int(args.distractors)]
    doc_rows = sorted(orig_rows + others)
    pos = {row: i for i, row in enumerate(doc_rows)}
    doc_texts = [texts_all[r] for r in doc_rows]

    copier = Copier(lang, edit_characters(texts_all, rnd))  # typo characters: the corpus's own letters
    variants = []
    for kind in kinds:
        krnd = random.Random(f"{args.seed}:{kind}")
        for row in orig_rows:
            text = getattr(copier, kind)(krnd, texts_all[row], rows[row].get("title"))
            variants.append({"kind": kind, "orig": pos[row], "text": text, "id": rows[row]["id"]})
    print(f"{args.data}: {len(rows):,} documents ({lang}); indexed {len(doc_texts):,} = {n_orig:,} originals + "
          f"{len(others):,} distractors; {len(variants):,} lookups ({len(kinds)} kinds x {n_orig}); "
          f"{len(methods)} methods; {args.jobs} jobs", file=sys.stderr)

    if args.show_boilerplate:
        show_boilerplate(doc_texts, variants)

    t0 = time.time()
    doc_fps, doc_valid, doc_masks, doc_sketches = fingerprint_all(doc_texts, methods, args.jobs)
    var_fps, var_valid, var_masks, var_sketches = fingerprint_all([v["text"] for v in variants], methods, args.jobs)
    if SHORT.keys() & set(methods):  # the kept texts of the short ones, what the rule decides a pair by
        KEPT.update(kept_of(*text_sketches(doc_texts + [v["text"] for v in variants])))
    t_fp = time.time() - t0
    print(f"  fingerprints in {t_fp:.0f} s", file=sys.stderr)

    t0 = time.time()
    results, sim = evaluate(methods, doc_fps, doc_valid, var_fps, var_valid, var_masks, variants, doc_texts, args.kmax,
                            doc_sketches=doc_sketches, var_sketches=var_sketches)
    print(f"  lookups + Jaccard of {len(sim):,} matched pairs in {time.time() - t0:.0f} s", file=sys.stderr)
    if args.dump_fp:
        name, _, k = args.dump_fp.rpartition(":")
        dump_fp(results[name], int(k), variants, doc_texts, [rows[r].get("title") for r in doc_rows], sim)

    bg = None
    if not args.no_background:
        t0 = time.time()
        bg = background(methods, doc_fps, doc_valid, doc_masks, doc_texts, args.kmax, doc_sketches=doc_sketches)
        print(f"  background pairs in {time.time() - t0:.0f} s", file=sys.stderr)

    if args.verify_index:
        name, _, k = args.verify_index.rpartition(":")
        scheme, n = verify_index(name, methods.index(name), doc_fps, doc_valid, var_fps, var_valid, var_masks, int(k),
                                 500, args.seed, doc_sketches, var_sketches)
        print(f"  --verify-index: dedup-hbase Index ({scheme}, k={k}) = brute force on {n} lookups", file=sys.stderr)

    main_methods = methods
    total = time.time() - t_start
    header = (f"Data {args.data}: {len(doc_texts):,} documents indexed ({n_orig:,} originals + {len(others):,} "
              f"distractors), {len(variants):,} lookups ({len(kinds)} kinds x {n_orig:,}), seed {args.seed}; "
              f"Python {platform.python_version()}, {args.jobs} jobs on {os.cpu_count()} cores, {total:.0f} s in all "
              f"({t_fp:.0f} s fingerprinting).\n")
    empties = {m: r.empty for m, r in results.items() if r.empty}
    if empties:
        header += f"\nLookups with no features (count as misses): {empties}\n"
    text = header + "\n" + markdown(results, kinds, main_methods, (3, args.kmax), bg, args.best_kmax)
    text += "\nMethods:\n\n" + "\n".join(f"* `{m}`: {METHOD_DOC.get(m, '')}" for m in methods) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, "utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "data": args.data, "seed": args.seed, "originals": n_orig, "distractors": len(others),
            "kinds": kinds, "seconds": total,
            "methods": {m: {"lookups": r.lookups, "found": r.found, "fp": r.fp, "near_dup": r.dup, "empty": r.empty,
                            "best_k": r.best_k(kmax=args.best_kmax), "background": bg and bg[m]} for m, r in results.items()}},
                      indent=1), "utf-8")


def dump_fp(r: Result, k, variants, doc_texts, titles, sim):
    vi, di, ds = r.pairs
    sel = np.nonzero(r.is_fp & (ds <= k))[0] if len(ds) else []
    print(f"{r.method}: {len(sel)} false positives at k <= {k}", file=sys.stderr)
    for i in sel[:40]:
        v = variants[vi[i]]
        o, d = v["orig"], di[i]
        print(f"  [{v['kind']}] d={ds[i]} J={sim[vi[i], d]:.2f} len {len(doc_texts[o])}/{len(doc_texts[d])}\n"
              f"     orig : {titles[o]} | {doc_texts[o][:70]!r}\n     match: {titles[d]} | {doc_texts[d][:70]!r}", file=sys.stderr)


def show_boilerplate(doc_texts, variants):
    reasons, dropped_lines, lines, dropped_chars, chars = Counter(), Counter(), 0, 0, 0
    examples = defaultdict(list)
    for t in doc_texts:
        for line in logical_lines(normalize(t)):
            lines += 1
            chars += len(line)
            why = boilerplate_reason(line)
            if why:
                reasons[why] += 1
                dropped_chars += len(line)
                if len(examples[why]) < 8:
                    examples[why].append(line[:100])
    print(f"originals+distractors: {sum(reasons.values()):,} of {lines:,} lines dropped "
          f"({dropped_chars / max(chars, 1):.2%} of characters): {dict(reasons)}", file=sys.stderr)
    for why, ex in examples.items():
        for e in ex:
            print(f"    [{why}] {e}", file=sys.stderr)
    kept = Counter()
    for v in variants:
        if v["kind"] not in ("mirror", "ads", "counters"):
            continue
        orig_lines = set(logical_lines(normalize(doc_texts[v["orig"]])))
        for line in logical_lines(normalize(v["text"])):
            if line not in orig_lines:
                dropped_lines[boilerplate_reason(line) or "KEPT"] += 1
                if boilerplate_reason(line) is None and kept[v["kind"]] < 15:
                    kept[v["kind"]] += 1
                    print(f"    kept ({v['kind']}): {line[:100]}", file=sys.stderr)
    print(f"added lines in mirror/ads/counters variants: {dict(dropped_lines)}", file=sys.stderr)


if __name__ == "__main__":
    main()
