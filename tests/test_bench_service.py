"""scripts/bench service: the target's verdict from its runs (best against best, and each run
against the core's pass right after it)."""

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


def test_the_best_run_against_the_fastest_core_pass_of_the_whole_run():
    line = target_line([run(8000, 15000), run(9000, 17000), run(7000, 13000)], 16000)
    assert line.startswith("**Target** (one-document `check` on the embedded store at >= 50% of the core's rate")
    assert ": met. The best of its 3 run(s), 9,000 documents per service CPU second (111 µs each), is 53% of the " \
           "core's best pass (17,000," in line
    assert line.endswith("each run against the core's pass right after it: 53% to 54%.")


def test_not_met_when_best_against_best_or_any_run_against_its_neighbour_falls_short():
    assert ": NOT met. " in target_line([run(8000, None)], 16001)
    assert ": met. " in target_line([run(8000, None)], 16000)
    assert ": NOT met. " in target_line([run(9000, 16000), run(7000, 14500)], 16000)
