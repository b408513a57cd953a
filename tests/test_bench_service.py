"""scripts/bench service: the target's verdict from its row (the service's rate over its
slices against the core's over the windows between them)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from benchmarks.service import target_line  # noqa: E402

HEAD = "**Target** (one-document `check` on the embedded store at >= 50% of the core's rate per CPU second): "


def test_the_service_over_its_slices_against_the_core_over_its_windows():
    row = {"docs_per_service_cpu_s": 8000, "core_single_after": 15000,
           "slices": [(8000, 15000), (9000, 16000), (7000, 14500), (7500, 14000)]}
    assert target_line(row, 20000) == (HEAD + "met. 8,000 documents per service CPU second (125 µs each) over 4 slices, "
                                       "against the core's 15,000 (67 µs each) over as much CPU time between them: "
                                       "53%; slice by slice 48% to 56%, at least 50% in 3 of 4.")
    assert target_line({**row, "core_single_after": 16001}, 20000).startswith(HEAD + "NOT met. ")


def test_a_row_of_one_run_against_the_best_short_pass():
    assert target_line({"docs_per_service_cpu_s": 8000}, 16000) == (
        HEAD + "met. One run, 8,000 documents per service CPU second (125 µs each), 50% of the core's best pass (16,000).")
    assert target_line({"docs_per_service_cpu_s": 8000}, 16001).startswith(HEAD + "NOT met. ")
