"""index/costs.py: a lookup's cost fitted to measured checks, and the scheme plan and init take from it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dedup_hbase.cli.commands import app
from dedup_hbase.index import costs, plan
from dedup_hbase.index.costs import MEASURED, Run, fitted
from dedup_hbase.index.layout import Scheme


def runs_of(fixed, per_scan, per_candidate):
    """Checks of both schemes at 10^5 and 10^6 that cost exactly the given µs."""
    shapes = [(s, n) for n in (10**5, 10**6) for s in ("4", "5")]
    out = []
    for scheme, n in shapes:
        row = plan.plan(Scheme.parse(scheme), n)
        out.append(Run(scheme, n, row.scans, row.candidates, 1e6 / (fixed + row.scans * per_scan + row.candidates * per_candidate)))
    return tuple(out)


def test_the_fit_finds_the_costs_the_runs_were_made_with():
    found = fitted("x", runs_of(30.0, 7.5, 0.25), "synthetic")
    assert (found.fixed, found.per_scan, found.per_candidate) == pytest.approx((30.0, 7.5, 0.25))
    assert found.lookup_us(4, 100) == pytest.approx(30 + 4 * 7.5 + 25)


def test_no_figure_of_a_fit_is_negative():
    runs = (Run("4", 10**5, 4, 6.1, 10_000.0), Run("5", 10**5, 10, 0.0, 20_000.0), Run("4", 10**6, 4, 61.0, 12_000.0))
    found = fitted("x", runs, "more scans, faster: noise")
    assert min(found.fixed, found.per_scan, found.per_candidate) >= 0


@pytest.mark.parametrize("store", ["embedded", "hbase"])
@pytest.mark.parametrize("k", [3, 5, 8])
def test_best_scheme_is_the_cheapest_by_the_measured_model(store, k):
    for docs in (10**3, 10**5, 10**6, 10**7, 10**8, 10**9, 10**10):
        cost = {s.name: MEASURED[store].lookup_us(len(s.flags), plan.plan(s, docs).candidates) for s in plan.schemes_for(k)}
        picked = plan.best_scheme(k, docs, store)
        assert cost[picked.name] <= min(cost.values()) + 0.05, (docs, cost, picked.name)


@pytest.mark.parametrize("store", ["embedded", "hbase"])
def test_few_documents_take_the_4_split_and_billions_the_5_split(store):
    """Whatever the measured figures, a scan costs something and a candidate too: the 4-split's 4
    scans win while its buckets are nearly empty, the 5-split's 10 once they hold thousands."""
    assert plan.best_scheme(3, 10**4, store).name == "4"
    assert plan.best_scheme(3, 10**9, store).name == "5"


def test_a_store_of_other_costs_picks_otherwise(monkeypatch):
    """The choice follows the figures: with scans dear and candidates free the 4-split stays."""
    monkeypatch.setitem(costs.MEASURED, "embedded", fitted("embedded", runs_of(10.0, 500.0, 0.0), "synthetic"))
    assert plan.best_scheme(3, 10**9, "embedded").name == "4"
    monkeypatch.setitem(costs.MEASURED, "embedded", fitted("embedded", runs_of(10.0, 1.0, 1.0), "synthetic"))
    assert plan.best_scheme(3, 10**5, "embedded").name == "5"  # 10 scans + 0.01 candidates < 4 + 6.1


def test_plan_prints_each_stores_cost_and_what_it_rests_on():
    human = CliRunner().invoke(app, ["plan", "--docs", "1e8"]).stdout
    assert "µs/lookup embedded" in human
    for c in MEASURED.values():
        assert f"  {c.store}: {c.fixed:,.0f} + {c.per_scan:,.1f}/scan" in human
        assert c.basis in human
    rows = [json.loads(line) for line in CliRunner().invoke(app, ["plan", "--docs", "1e8", "--json"]).stdout.splitlines()]
    five = next(r for r in rows if r["scheme"] == "5")
    assert five["embedded_us"] == pytest.approx(MEASURED["embedded"].lookup_us(10, five["candidates"]))
    assert five["hbase_us"] == pytest.approx(MEASURED["hbase"].lookup_us(10, five["candidates"]))


@pytest.mark.parametrize(("docs", "scheme"), [("1000", "4"), ("1e10", "5")])
def test_init_docs_takes_the_cheapest_scheme_at_n(tmp_path, docs, scheme):
    store = str(tmp_path / "index")
    done = CliRunner().invoke(app, ["init", "--store", store, "--docs", docs, "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["scheme"] == scheme == plan.best_scheme(3, int(float(docs)), "embedded").name


def test_init_scheme_given_wins_over_docs(tmp_path):
    done = CliRunner().invoke(app, ["init", "--store", str(tmp_path / "i"), "--docs", "1e10", "--scheme", "4", "--json"])
    assert done.exit_code == 0 and json.loads(done.stdout)["scheme"] == "4"


def test_checks_beyond_the_fit_are_shown_beside_the_model_not_fitted():
    """The runs measured at larger sizes stay out of the fit (its figures are those of the fitted
    runs alone) and ``plan`` prints each beside what the model says there: at 10^8 on one HBase
    the 5-split's 990 µs a lookup against the model's 232 (the index beyond the caches)."""
    hbase = MEASURED["hbase"]
    alone = fitted("hbase", hbase.runs, hbase.basis)
    assert (hbase.fixed, hbase.per_scan, hbase.per_candidate) == (alone.fixed, alone.per_scan, alone.per_candidate)
    assert [(b.scheme, b.docs) for b in hbase.beyond] == [("4", 10**7), ("5", 10**7), ("4", 10**8), ("5", 10**8)]
    shown = plan.table(10**8, 3, 16, plan.plans(10**8)).splitlines()
    beyond = [line for line in shown if line.startswith("    measured beyond the fit")]
    assert len(beyond) == 2  # the embedded store's, HBase's
    assert beyond[1].endswith("4-split at 10^7 1,252 (1,293), 5-split at 10^7 509 (196), 4-split at 10^8 13,514 "
                              "(11,952), 5-split at 10^8 990 (232)")
    assert shown[shown.index(beyond[1]) + 1].startswith("    (the scale bench's fingerprints")
