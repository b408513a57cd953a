"""The commands that show outputs to a person: ``explain`` (a pair or a group in the terminal)
and ``report`` (one HTML file). Each is a thin shell over the report package; commands.py
registers them (as ``fn(ctx, ...)`` commands, command.py).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Annotated

import typer

from ..errors import InvalidInput
from ..index.confirm import parse_short
from ..jobs.corpus import FORMATS, Fields
from ..text.fingerprint import make_fingerprinter
from .command import EncodingOption, out, whole_count

Inputs = Annotated[list[str], typer.Argument(help="The inputs the documents were read from (files or folders), as given to groups.")]
IdField = Annotated[str, typer.Option(help="Input field holding the document id.")]
TextField = Annotated[str, typer.Option(help="Input field holding the text.")]
InputFormat = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}.")]
FeaturizerName = Annotated[str | None, typer.Option("--featurizer", help="jieba (default) or shingles: the one groups used.")]
Shingles = Annotated[int | None, typer.Option("--shingle-size", help="Characters per shingle (shingles featurizer).")]
HashSeed = Annotated[int | None, typer.Option("--seed", help="mmh3 seed of the feature hashes (default 0).")]
SampleSeed = Annotated[int, typer.Option("--sample-seed", help="Seed of the random sample (not the hash seed: that is --seed).")]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON).")]


def explain(ctx: typer.Context, files: Inputs,
            ids: Annotated[list[str], typer.Option("--id", help="A document id: one for that document; two for a pair; one with --groups-dir for its group.")],
            groups_dir: Annotated[str | None, typer.Option("--groups-dir", help="A groups output folder (the --out of groups): show the id's group, each dropped document beside its via.")] = None,
            top: Annotated[int, typer.Option(help="Terms shown per document, the weightiest first.")] = 10,
            max_pairs: Annotated[int, typer.Option(help="A group: at most this many pairs shown.")] = 10,
            width: Annotated[int | None, typer.Option(help="Columns of the output (default: the terminal's). Below 83, the texts one above the other.")] = None,
            no_color: Annotated[bool, typer.Option("--no-color", help="Mark differences as [-a's-] {+b's+}, not in colour (also when not a terminal, or NO_COLOR is set).")] = False,
            short_texts: Annotated[str | None, typer.Option("--short-texts", metavar="on|off", help="Judge the pairs with the short-text rule on or off, as groups/init --short-texts (default: the --groups-dir run's, else off).")] = None,
            id_field: IdField = "id", text_field: TextField = "text", fmt: InputFormat = "auto", encoding: EncodingOption = "utf-8",
            featurizer: FeaturizerName = None, shingle_size: Shingles = None, seed: HashSeed = None,
            json_: AsJson = False) -> None:
    """Why two documents are near-duplicates (or what one document's fingerprint and the
    short-text rule make of it): their texts side by side with the differences
    marked, the distance beside the character-bigram Jaccard of the texts, the short-text rule
    (each text's body length against 200, and, with the rule on, the pair's decision and why),
    and the terms that weigh most in each fingerprint.

    Needs no --store: the texts come from the inputs."""
    from ..report.terminal import explain as explained
    from ..report.terminal import render

    fp = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed)
    shown = explained(files, ids, fp, groups_dir, fmt, Fields(id=id_field, text=text_field, encoding=encoding), top, max_pairs,
                      parse_short(short_texts, None))
    if json_:
        out(shown.to_dict())
        return
    color = not no_color and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    for line in render(shown, width or shutil.get_terminal_size((100, 24)).columns, color):
        typer.echo(line)


def report(ctx: typer.Context,
           groups_out: Annotated[str, typer.Argument(help="A groups output folder (the --out of groups).")],
           files: Annotated[list[str] | None, typer.Argument(help="The inputs groups read, for the texts (files or folders). Without them the page has no texts.")] = None,
           out_html: Annotated[str, typer.Option("--out", "-o", help="The HTML file to write.")] = "report.html",
           check: Annotated[str | None, typer.Option(help="A check output too: a file of check --json lines, or a check --engine spark --out folder.")] = None,
           sample: Annotated[int, typer.Option(help="Groups of two or more shown with their texts (a seeded random sample).")] = 50,
           sample_seed: SampleSeed = 0,
           pairs: Annotated[int, typer.Option(help="Dropped documents shown per sampled group, beside their vias.")] = 5,
           largest: Annotated[int, typer.Option(help="Largest groups listed.")] = 20,
           searchable: Annotated[int, typer.Option(help="Documents of groups of two or more the page's search box knows (the first, in input order).")] = 50_000,
           id_field: IdField = "id", text_field: TextField = "text", fmt: InputFormat = "auto", encoding: EncodingOption = "utf-8",
           json_: AsJson = False) -> None:
    """One self-contained HTML page (works offline) of a groups output: the counts, histograms
    of group sizes and distances, the largest groups, a seeded sample of groups with each
    dropped document's text beside its via's, and a search by id.

    Needs no --store."""
    from ..report.page import ReportOptions, build

    options = ReportOptions(sample=sample, seed=sample_seed, pairs=pairs, largest=largest, searchable=searchable)
    shown = build(groups_out, files or [], out_html, options, check, fmt, Fields(id=id_field, text=text_field, encoding=encoding))
    if json_:
        out({"out": out_html, **shown})
    else:
        c = shown["counts"]
        typer.echo(f"wrote {out_html}: {c['documents']:,} documents in {c['groups']:,} groups, "
                   f"{shown['sample']} sampled (sample seed {sample_seed}) with {shown['pairs']} pairs of texts", err=True)


def tune(ctx: typer.Context,
         files: Annotated[list[str], typer.Argument(help="Your corpus: files or folders (JSONL, CSV, TSV, text, Parquet; gz/bz2/xz/zst).")],
         sample: Annotated[int, typer.Option(help="Documents sampled from the inputs and indexed; a fifth of them are copied.")] = 1000,
         sample_seed: Annotated[int, typer.Option("--sample-seed", help="Seed of the sample and of the copies (not the hash seed: that is --seed).")] = 1,
         docs: Annotated[int | None, typer.Option(metavar="N", parser=whole_count, help="The corpus size the cost of each k is given for, such as 1e8 (default: the records read).")] = None,
         kinds: Annotated[str | None, typer.Option(help="Kinds of copies, comma-separated (default: all).")] = None,
         html: Annotated[str | None, typer.Option(help="Also write the results as an HTML page (tables and a chart, offline).")] = None,
         id_field: IdField = "id", text_field: TextField = "text", fmt: InputFormat = "auto", encoding: EncodingOption = "utf-8",
         featurizer: Annotated[str | None, typer.Option("--featurizer", help="The featurizer to measure: jieba (default) or shingles.")] = None,
         shingle_size: Shingles = None,
         seed: HashSeed = None,
         json_: AsJson = False) -> None:
    """Choose k on your own corpus: near-copies of a sample of it, made the ways copies arise,
    looked up among the sample; recall and false matches per kind of copy for k = 0 to 8,
    the cost of each k, and the k to use.

    Needs no --store."""
    from ..report.copies import KINDS
    from ..report.tune import lines, write_html
    from ..report.tune import tune as measure

    chosen = [x.strip() for x in kinds.split(",")] if kinds else list(KINDS)
    unknown = [x for x in chosen if x not in KINDS]
    if unknown:
        raise InvalidInput(f"unknown kind {unknown[0]!r}: choose from {', '.join(KINDS)}")
    if sample < 2:
        raise InvalidInput(f"--sample must be at least 2, not {sample}")
    fp = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed)
    result = measure(files, fp, sample, sample_seed, docs, chosen, fmt, Fields(id=id_field, text=text_field, encoding=encoding))
    if html:
        write_html(result, html)
    if json_:
        out(result.to_dict())
    else:
        for line in lines(result):
            typer.echo(line)
