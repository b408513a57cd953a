"""dedup-hbase tune on the shared news corpus: recall that never falls as k grows, counts
exact against a brute-force check of the tuning's own index (every copy against every
sampled fingerprint by XOR), the same numbers for the same seed, and an offline HTML page."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.report.copies import KINDS
from dedup_hbase.report.tune import MAX_K, tune
from dedup_hbase.text.fingerprint import make_fingerprinter


@pytest.fixture(scope="module")
def tuned(xwlb_path):
    return tune([str(xwlb_path)], make_fingerprinter(), sample=300, seed=5)


def test_recall_never_falls_as_k_grows(tuned):
    assert (tuned.read, tuned.sample, tuned.originals) == (19_339, 300, 60)
    assert tuned.kinds == KINDS and all(tuned.lookups[x] == 60 for x in KINDS)
    for kind in KINDS:
        found = tuned.found[kind]
        assert all(a <= b for a, b in zip(found, found[1:])) and found[-1] <= tuned.lookups[kind]
        assert all(a <= b for a, b in zip(tuned.false[kind], tuned.false[kind][1:]))
    recall = [tuned.recall(k) for k in range(MAX_K + 1)]
    assert recall == sorted(recall) and recall[-1] > recall[0]
    assert tuned.found["counters"][3] == 60  # time-stamp and counter lines are boilerplate: found at k=3


def test_counts_equal_brute_force_over_the_sample(tuned):
    checks = tuned.checks
    docs = np.array([int(checks["doc_fps"][i]) for i in checks["usable"]], dtype=np.uint64)
    position = {d: n for n, d in enumerate(checks["usable"])}
    found = {x: [0] * (MAX_K + 1) for x in KINDS}
    others = {x: [0] * (MAX_K + 1) for x in KINDS}
    for j in checks["valid"]:
        kind, original = checks["variants"][j]
        d = np.bitwise_count(docs ^ np.uint64(int(checks["var_fps"][j])))
        own = int(d[position[original]])
        d[position[original]] = 99
        for k in range(MAX_K + 1):
            found[kind][k] += own <= k
            others[kind][k] += int((d <= k).sum())
    assert found == tuned.found
    assert others == {x: [a + b for a, b in zip(tuned.false[x], tuned.natural[x])] for x in KINDS}


def test_same_seed_same_numbers(tuned, xwlb_path):
    again = tune([str(xwlb_path)], make_fingerprinter(), sample=300, seed=5)
    assert again.to_dict() == tuned.to_dict()
    other = tune([str(xwlb_path)], make_fingerprinter(), sample=300, seed=6)
    assert other.to_dict()["found"] != tuned.to_dict()["found"]


def test_cli_json_and_html(tmp_path, xwlb_path):
    html = tmp_path / "tune.html"
    runner = CliRunner()
    result = runner.invoke(app, ["tune", str(xwlb_path), "--sample", "100", "--sample-seed", "2", "--docs", "1000000",
                                 "--kinds", "edit1,droplast", "--json", "--html", str(html)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["kinds"] == ["edit1", "droplast"] and summary["docs"] == 1_000_000
    assert [r["k"] for r in summary["by_k"]] == list(range(MAX_K + 1))
    k = summary["suggested_k"]
    assert k is None or (summary["by_k"][k]["false_per_lookup"] <= 0.005 and summary["why"].startswith(f"k={k}:"))
    refs = []

    class Refs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            refs.extend(v for n, v in attrs if n in ("src", "href"))

    page = html.read_text(encoding="utf-8")
    Refs().feed(page)
    assert refs == [] and "<svg" in page and summary["why"].split(":")[0] in page
    bad = runner.invoke(app, ["tune", str(xwlb_path), "--kinds", "typo"])
    assert bad.exit_code == 1 and "unknown kind 'typo'" in bad.stderr
