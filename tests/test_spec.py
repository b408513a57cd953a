"""The index-options spec (index/spec.py): one table of refused combinations, presets, what each
path asks of it. The CLI's init, plan and stats show it."""

import itertools
import json
import subprocess
from types import SimpleNamespace

import pytest

from dedup_hbase.errors import InvalidInput
from dedup_hbase.index import spec as specs
from dedup_hbase.index.layout import Scheme
from dedup_hbase.index.spec import PRESETS, RULES, IndexSpec, preset_options
from dedup_hbase.text.signatures import Signatures
from dedup_hbase.text.units import WORDS


def run(*args, check=True):
    return subprocess.run(["dedup-hbase", *args], capture_output=True, text=True, check=check)


# per rule of RULES, a combination it refuses and the start of its message: a new rule without
# an example here fails test_every_rule_refuses_its_example
REFUSED = {
    "_confirm_needs_beyond_3": (dict(k=3, confirm=14), "confirm= confirms matches beyond 3 bits"),
    "_short_rule": (dict(short=12), "short=12: the short-text rule by character sketches within 12 bits is gone"),
    "_ttl_positive": (dict(ttl=0), "ttl is a whole number of seconds >= 1, not 0"),
    "_signatures_fit_the_scheme": (dict(scheme="11/3", k=8, signatures="body,lead150"), "scheme 11/3 has 165 flags"),
}


def test_every_rule_refuses_its_example():
    assert sorted(rule.__name__ for rule in RULES) == sorted(REFUSED)
    for name, (options, message) in REFUSED.items():
        with pytest.raises(InvalidInput) as refused:
            IndexSpec.make(**options)
        assert str(refused.value).startswith(message), (name, str(refused.value))
        assert "\n" not in str(refused.value)
        # the same options pass once the rule's own part is taken away
        rule = getattr(specs, name)
        allowed = {**options, **{"confirm": None, "ttl": None, "signatures": None, "short": None}}
        rule(IndexSpec.make(**allowed))


COMBINATIONS = [dict(signatures=s, probes=p, confirm=c, ttl=t, short=x)
                for s, p, c, t, x in itertools.product((None, "body,lead150"), (None, "8", "8,1"), (None, 10),
                                                       (None, 3600), (None, WORDS))
                if not (p == "8,1" and s is None) and not (c is not None and p is None)]


@pytest.mark.parametrize("options", COMBINATIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items() if v))
def test_every_allowed_combination_round_trips_through_the_metadata(options):
    spec = IndexSpec.make(None, 3, **options)
    assert IndexSpec.from_config(json.loads(json.dumps(spec.config()))) == spec
    assert spec.several == (options["signatures"] is not None)
    assert spec.probed == (options["probes"] is not None)
    assert spec.confirmed == (options["confirm"] is not None)
    assert spec.rows_per_document == 4 * (2 if spec.several else 1)
    assert spec.sketched == (options["confirm"] is not None or options["short"] is not None)
    assert spec.head == 8 * (len(spec.signatures) + spec.sketched)
    items = [SimpleNamespace(more=(7,), masks=((1,),), sketch=5, kept="")] * 2
    more, probes, sketches, kepts = spec.lookup_args(items)
    assert (more is not None, probes is not None, sketches is not None) == (spec.several, spec.probed, spec.sketched)
    assert (kepts is not None) == (options["short"] is not None)
    needs = spec.needs_texts()
    assert (needs is None) == (not (spec.several or spec.probed or spec.sketched))


def test_what_precomputed_fingerprints_cannot_give():
    assert IndexSpec.make(probes="8").needs_texts(lookups=False) is None  # a load writes the body's rows
    assert IndexSpec.make(probes="8").needs_texts() == "probes"
    with pytest.raises(InvalidInput, match=r"^an index with signatures body,lead150 fingerprints the texts themselves"):
        IndexSpec.make(signatures="body,lead150").check_inputs(True)
    IndexSpec.make(signatures="body,lead150").check_inputs(False)
    with pytest.raises(InvalidInput, match=r"^an index with the short-text rule \(short texts near by their words\) fing"):
        IndexSpec.make(short=WORDS).check_inputs(True)


def test_presets_are_options_and_given_options_win():
    assert preset_options(None) == {}
    assert preset_options("recall") == {"signatures": "body,lead150", "probes": "8,1", "confirm": 14}
    assert preset_options("recall", confirm=10, probes=None)["confirm"] == 10
    with pytest.raises(InvalidInput, match=r"^unknown preset 'fast': choose one of default, recall$"):
        preset_options("fast")
    for name, (options, _) in PRESETS.items():
        assert IndexSpec.make(None, 3, **options).preset == name
    assert IndexSpec.make(None, 3, confirm=10, probes="8").preset is None
    assert IndexSpec.make(Scheme(5, 2), 3, ttl=60, **PRESETS["recall"][0]).preset == "recall"
    assert IndexSpec.make(None, 3, signatures=Signatures.parse("body")).preset == "default"


def test_init_preset_recall_is_the_measured_setting_in_one_flag(tmp_path):
    store = str(tmp_path / "ix")
    said = run("--store", store, "init", "--preset", "recall").stdout
    assert said.strip() == (f"created index at {store}: scheme 4 (4 blocks taken 1 at a time, 4 rows per document, finds every match "
                            "within 3 bits), k=3, featurizer jieba, signatures body,lead150, probes [8, 1], "
                            "matches beyond 3 bits confirmed within 14 bits, short texts near only by their words "
                            "(preset recall)")
    stats = json.loads(run("--store", store, "stats", "--json").stdout)
    assert (stats["signatures"], stats["probes"], stats["confirm"], stats["short"], stats["preset"]) == (
        ["body", "lead150"], [8, 1], 14, WORDS, "recall")
    typed = str(tmp_path / "typed")
    run("--store", typed, "init", "--signatures", "body,lead150", "--probes", "8,1", "--confirm", "14")
    assert json.loads(run("--store", typed, "stats", "--json").stdout)["preset"] == "recall"
    own = str(tmp_path / "own")
    run("--store", own, "init", "--preset", "recall", "--confirm", "10")
    mine = json.loads(run("--store", own, "stats", "--json").stdout)
    assert mine["confirm"] == 10 and "preset" not in mine
    plain = str(tmp_path / "plain")
    run("--store", plain, "init")
    assert "preset" not in json.loads(run("--store", plain, "stats", "--json").stdout)  # the README's stats
    refused = run("--store", str(tmp_path / "no"), "init", "--preset", "fast", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].endswith("unknown preset 'fast': choose one of default, recall")


def test_plan_preset_is_plan_of_its_options():
    named = run("plan", "--docs", "1000000", "--preset", "recall").stdout
    typed = run("plan", "--docs", "1000000", "--signatures", "body,lead150", "--probes", "8,1",
                "--confirm", "14").stdout
    assert named == typed and "signatures body,lead150" in named and "9 probes a lookup" in named
    assert run("plan", "--docs", "1000000", "--preset", "default").stdout == run("plan", "--docs", "1000000").stdout
