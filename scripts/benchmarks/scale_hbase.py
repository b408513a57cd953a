"""Scale on HBase: ``scripts/bench scale --scale-hbase URL`` runs, after the embedded store's, the
same whole commands against an HBase: ``init --store URL&table_prefix=P --scheme S`` (not timed; the
default 16 regions), ``load --fingerprints --json -q`` (wall, CPU of the command's process tree,
index rows/s) and ``check --fingerprints --json`` of the same queries (lookups/s; the sampled
answers against the brute force, as the embedded store's). Where the HBase is this machine's
``scripts/hbase-local`` (``--scale-hbase-dir``: its folder; the URL's port must be its Thrift
port), also the HBase processes' CPU during the load, and the tables' bytes on disk per
fingerprint after a flush and a major compaction (HBase shell). The tables are dropped afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

from .common import ROOT, progress
from .hbase import cpu_seconds
from .measured import measure

COMPACTION_WAIT = 1800  # s: the longest the bench waits for a major compaction to end


def local_dir(url: str, folder: str | None) -> Path | None:
    """scripts/hbase-local's folder when ``url`` is that instance (its ports file names the URL's
    Thrift port), else None."""
    if not folder:
        return None
    path = Path(folder).resolve()
    try:
        ports = (path / "ports").read_text().split()
    except OSError:
        raise SystemExit(f"--scale-hbase-dir {folder}: no scripts/hbase-local instance there (no ports file)") from None
    port = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[-1]
    if port not in ports[1:2]:
        raise SystemExit(f"--scale-hbase-dir {folder}: its Thrift port is {ports[1]}, the URL's {port}")
    return path


def pids(folder: Path) -> dict[str, int]:
    """The instance's processes (master with its region server, both gateways)."""
    out = {}
    for name in ("master", "thrift", "thrift2"):
        try:
            out[name] = int((folder / "pids" / f"{name}.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def table_dirs(folder: Path, prefix: str) -> list[Path]:
    return [folder / "data" / "hbase" / "data" / "default" / f"{prefix}_{t}" for t in ("index", "docs")]


def hfiles(dirs: list[Path]) -> list[Path]:
    """The HFiles of every region and family of ``dirs`` (not the region's metadata or edits)."""
    return [f for d in dirs for f in d.glob("*/d/*") if f.is_file() and not f.name.startswith(".")]


def compacted_bytes(folder: Path, prefix: str) -> int:
    """Flush and major-compact the prefix's index and docs tables (HBase shell), wait until each
    region's family holds one file, and count their bytes."""
    names = [f"{prefix}_{t}" for t in ("index", "docs")]
    script = "".join(f"flush '{n}'\nmajor_compact '{n}'\n" for n in names)
    env = {**os.environ, "DEDUP_HBASE_LOCAL_DIR": str(folder)}
    subprocess.run([str(ROOT / "scripts" / "hbase-local"), "shell"], input=script, text=True, env=env,
                   capture_output=True, check=True, timeout=600)
    dirs = table_dirs(folder, prefix)
    deadline = time.monotonic() + COMPACTION_WAIT
    while True:
        regions = [r for d in dirs for r in d.glob("*/d")]
        if regions and all(len([f for f in r.iterdir() if f.is_file()]) <= 1 for r in regions):
            return sum(f.stat().st_size for f in hfiles(dirs))
        if time.monotonic() > deadline:
            raise RuntimeError(f"the major compaction of {names} did not end within {COMPACTION_WAIT} s")
        time.sleep(2)


def run_scheme(args, dh: list[str], n: int, scheme: str, fps_file: Path, queries_file: Path, work: Path,
               check_answers) -> dict:
    """One scheme on HBase: its load and check measured; ``check_answers(stdout path)``: what is
    wrong with the check's sampled answers, or None."""
    url, folder = args.scale_hbase, local_dir(args.scale_hbase, args.scale_hbase_dir)
    prefix = f"scale{n}s{scheme}{uuid.uuid4().hex[:6]}"
    store = f"{url}{'&' if '?' in url else '?'}table_prefix={prefix}"
    (work / "hbase-load").mkdir(parents=True, exist_ok=True)
    (work / "hbase-check").mkdir(exist_ok=True)
    subprocess.run([*dh, "init", "--store", store, "--scheme", scheme, "--k", "3", "--short-texts", "off"],
                   check=True, capture_output=True)
    r: dict = {"url": url, "local": folder is not None}
    try:
        progress(f"  N = {n:,}, scheme {scheme}: HBase load ...")
        before = cpu_seconds(pids(folder)) if folder else {}
        load = measure([*dh, "load", "--store", store, "--fingerprints", "--json", "-q", str(fps_file)],
                       work / "hbase-load")
        load["summary"] = json.loads(load.pop("stdout").strip().splitlines()[-1])
        if folder:
            after = cpu_seconds(pids(folder))
            load["hbase_cpu_s"] = round(sum(after[k] - before.get(k, 0.0) for k in after if k != "client"), 1)
        r["load"] = load
        progress(f" {load['wall_s']:.1f} s; check ...")
        check = measure([*dh, "check", "--store", store, "--fingerprints", "--json", str(queries_file)],
                        work / "hbase-check")
        check.pop("stdout")
        r["check"] = {**check, "wrong": check_answers(work / "hbase-check" / "stdout")}
        progress(f" {check['wall_s']:.1f} s")
        if folder:
            progress("; flush and major compaction ...")
            t0 = time.monotonic()
            r["bytes_compacted"] = compacted_bytes(folder, prefix)
            progress(f" {time.monotonic() - t0:.0f} s")
        progress("\n")
    finally:
        from dedup_hbase import open_store

        with open_store(store) as s:
            s.drop()
    for part in ("load", "check"):
        if part in r:
            r[part]["stderr"] = r[part]["stderr"][-1000:]
    return r
