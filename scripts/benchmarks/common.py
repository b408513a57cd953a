"""What every sub-benchmark shares: the report (markdown to stdout, optionally JSON + files
in a folder), the header (machine, versions, command, date), percentiles and the data
generator (random fingerprints with planted near-duplicates, and the queries)."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
K = 3


# -- the report -------------------------------------------------------------------------


@dataclass
class Report:
    """Markdown written to stdout as it is produced; with ``out`` also ``bench.md``,
    ``results.json`` and any figures in that folder. ``failures`` makes the exit code."""

    out: Path | None = None
    data: dict = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    _markdown: list[str] = field(default_factory=list)

    def write(self, text: str = "") -> None:
        print(text, flush=True)
        self._markdown.append(text)

    def section(self, title: str) -> None:
        self.write(f"\n## {title}\n")

    def table(self, headers: list[str], rows: list[list], right: set[int] | None = None) -> None:
        """A markdown table; columns in ``right`` (default: all but the first) right-aligned."""
        right = set(range(1, len(headers))) if right is None else right
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        self.write("\n".join(lines) + "\n")

    def fail(self, message: str) -> None:
        """A wrong answer: said loudly now, and the run exits non-zero at the end."""
        self.failures.append(message)
        print(f"\n!!! FAILURE: {message}\n", file=sys.stderr, flush=True)
        self._markdown.append(f"\n**FAILURE: {message}**\n")

    def finish(self) -> int:
        if self.failures:
            self.write(f"\n**{len(self.failures)} failure(s)**: " + "; ".join(self.failures))
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "bench.md").write_text("\n".join(self._markdown) + "\n", encoding="utf-8")
            self.data["failures"] = self.failures
            (self.out / "results.json").write_text(json.dumps(self.data, indent=1, default=str) + "\n")
            print(f"\nwrote {self.out / 'bench.md'} and {self.out / 'results.json'}", file=sys.stderr)
        return 1 if self.failures else 0


def progress(text: str) -> None:
    """Progress notes go to stderr, so stdout stays pure markdown."""
    print(text, end="", file=sys.stderr, flush=True)


# -- the header ---------------------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    result = subprocess.run(["git", "-C", str(ROOT), *args], check=False, capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def _commit() -> str:
    """The commit of the dedup_hbase that is imported (flagged when it is not this checkout's)."""
    import dedup_hbase

    package = Path(dedup_hbase.__file__).resolve().parent
    if package != ROOT / "dedup_hbase":
        return f"imported from {package}, not this checkout"
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = _git("status", "--porcelain", "--", "dedup_hbase")
    return commit + (" + uncommitted changes in dedup_hbase/" if dirty else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def header(argv: list[str]) -> dict:
    faiss_version = _version("faiss-cpu")
    info = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(["scripts/bench", *argv]),
        "machine": {"cores": os.cpu_count(), "ram": _ram_gib(), "cpu": _cpu_model(),
                    "kernel": platform.release(), "arch": platform.machine(),
                    "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg())},
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "rocksdict": _version("rocksdict"), "faiss-cpu": faiss_version,
                     "simhash": _version("simhash"), "dedup_hbase": _commit()},
    }
    return info


def write_header(report: Report, info: dict) -> None:
    m, v = info["machine"], info["versions"]
    report.write("# dedup-hbase benchmarks\n")
    report.write(f"- command: `{info['command']}`")
    report.write(f"- date: {info['date']}")
    report.write(f"- machine: {m['cores']} cores, {m['ram']} RAM, {m['cpu']} ({m['arch']}), "
                 f"Linux {m['kernel']}; load average at start {m['load_average']}")
    report.write("- versions: " + ", ".join(f"{name} {version}" for name, version in v.items()))
    report.data["header"] = info


# -- numbers --------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> tuple[float, float]:
    """Median and 99th percentile (nearest rank)."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def parse_count(text: str) -> int:
    """``1e6``, ``1000000`` or ``1_000_000`` -> 1000000."""
    value = float(text.replace("_", ""))
    if value < 1 or value != int(value):
        raise ValueError(f"not a positive whole number: {text!r}")
    return int(value)


def fmt_n(n: int) -> str:
    """10^k for powers of ten, else with thousands separators."""
    exponent = len(str(n)) - 1
    return f"10^{exponent}" if n == 10**exponent and n >= 1000 else f"{n:,}"


def fmt_us(us: float | None) -> str:
    if us is None:
        return "—"
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}" if us >= 1 else f"{us:.2f}"


# -- data ------------------------------------------------------------------------------


def flip_bits(values: np.ndarray, distances: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each value with ``distances[i]`` (0..64) distinct random bits flipped."""
    out = values.copy()
    for start in range(0, len(values), 100_000):  # bounded memory: 64 floats per value
        d = distances[start:start + 100_000]
        order = rng.random((len(d), 64)).argsort(axis=1)  # a random permutation of the bits
        chosen = np.arange(64) < d[:, None]  # the first d of them
        masks = np.where(chosen, np.uint64(1) << order.astype(np.uint64), np.uint64(0))
        out[start:start + 100_000] ^= np.bitwise_or.reduce(masks, axis=1)
    return out


@dataclass
class Data:
    """N fingerprints (document i has id ``d{i}``) and the queries, same for every system."""

    fps: np.ndarray  # uint64, N
    queries: np.ndarray  # uint64; even positions near an indexed fingerprint, odd random
    planted: int  # the last ``planted`` fingerprints are near-duplicates of earlier ones

    def truth(self, q: int, k: int = K) -> list[tuple[int, int]]:
        """(document number, distance) of every fingerprint within k bits, by numpy brute force."""
        d = np.bitwise_count(self.fps ^ np.uint64(q))
        hits = np.flatnonzero(d <= k)
        return sorted(zip(hits.tolist(), d[hits].tolist()))


def make_data(n: int, queries: int, seed: int, planted_fraction: float = 0.01) -> Data:
    """Uniformly random 64-bit fingerprints, of which the last ``planted_fraction`` are copies
    of earlier ones with 0..3 bits flipped. Queries: half are indexed fingerprints with 0..3
    bits flipped (every other one taken among the planted copies, so that many queries have
    several answers), half uniformly random."""
    rng = np.random.default_rng(seed)
    planted = int(n * planted_fraction)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    if planted:
        sources = rng.integers(0, n - planted, size=planted)
        fps[n - planted:] = flip_bits(fps[sources], rng.integers(0, K + 1, size=planted), rng)
    near = (queries + 1) // 2
    picks = rng.integers(0, n, size=near)
    if planted:
        picks[1::2] = rng.integers(n - planted, n, size=len(picks[1::2]))
    qs = rng.integers(0, 2**64, size=queries, dtype=np.uint64)
    qs[0::2] = flip_bits(fps[picks], rng.integers(0, K + 1, size=near), rng)
    return Data(fps, qs, planted)
