"""scripts/bench service: the target's verdict from its runs (each against the core's window
right after it, and the best run against the best window)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from benchmarks.service import target_line  # noqa: E402


def run(per_cpu: float, after: float | None) -> dict:
    out = {"docs_per_service_cpu_s": per_cpu}
    if after is not None:
        out.update(core_single_after=after, of_core_after=per_cpu / after)
    return out


def test_each_run_against_its_window_and_the_best_run_against_the_best_window():
    line = target_line([run(8000, 15000), run(9000, 17000), run(7000, 13000)], 20000)
    assert line == ("**Target** (one-document `check` on the embedded store at >= 50% of the core's rate per CPU "
                    "second): met. Each of its 3 runs against the core for as long right after it: 53% to 54%; its "
                    "best run, 9,000 documents per service CPU second (111 µs each), against the core's best window "
                    "(17,000): 53%.")


def test_not_met_when_any_run_falls_short_of_half_its_window():
    assert ": NOT met. " in target_line([run(9000, 16000), run(7000, 14500)], 16000)  # 48% for the second
    assert ": met. " in target_line([run(9000, 17000), run(8000, 16000)], 16000)


def test_one_run_against_the_best_short_pass():
    assert target_line([run(8000, None)], 16000).endswith(": met. One run, 8,000 documents per service CPU second "
                                                          "(125 µs each), 50% of the core's best pass (16,000).")
    assert ": NOT met. " in target_line([run(8000, None)], 16001)
