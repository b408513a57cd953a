"""The dedup service under load: a real ``dedup-hbase serve`` process on loopback, and a
bounded load generator (asyncio + httpx, N concurrent clients, each sending its next request
when the previous one is answered) for a fixed time.

Per store (embedded, and HBase when one runs): half of the shared news corpus is loaded first;
then ``check`` (one document per request, texts of the corpus) and ``add?if_new=true`` (one
document per request, texts of the other half under new ids, so about half of them are added)
each run for ``--service-seconds``. Reported: requests/s, p50/p99 latency as the client sees
it, and errors (any non-200 answer counts; there must be none). The generator shares the
machine's cores with the service (and HBase): the rates are lower bounds of what a separate
client machine would see.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from .common import Report, percentiles, progress
from .load import texts


def start_service(store: str, log: Path) -> tuple[subprocess.Popen, str]:
    """``dedup-hbase serve`` on a free port, its stderr into ``log`` (a file: a pipe nobody
    reads would stall the service once full); the URL it serves."""
    with open(log, "w") as err:
        proc = subprocess.Popen(["dedup-hbase", "serve", "--store", store, "--port", "0"], stderr=err, text=True)
    deadline = time.monotonic() + 120
    while not (line := log.read_text().partition("\n")[0]).startswith("serving ") or not line.endswith("stops"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the service did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc, line.split(" on ", 1)[1].split(" ", 1)[0]


async def generate(url: str, path: str, bodies: list[bytes], clients: int, seconds: float) -> dict:
    """``clients`` loops posting ``bodies`` round robin for ``seconds``; latencies in µs."""
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one_client(offset: int) -> None:
            i = offset
            while time.perf_counter() < deadline:
                body = bodies[i % len(bodies)]
                i += clients
                started = time.perf_counter_ns()
                try:
                    response = await client.post(path, content=body, headers={"content-type": "application/json"})
                except httpx.TransportError as e:  # counted, and the run goes on: the report names it
                    errors.append(f"{type(e).__name__}: {e}")
                    continue
                latencies.append((time.perf_counter_ns() - started) / 1000)
                if response.status_code != 200:
                    errors.append(f"{response.status_code} {response.text[:200]}")

        started = time.perf_counter()
        await asyncio.gather(*(one_client(c) for c in range(clients)))
        elapsed = time.perf_counter() - started
    p50, p99 = percentiles(latencies) if latencies else (None, None)
    return {"requests": len(latencies), "seconds": elapsed, "per_s": len(latencies) / elapsed, "p50_us": p50,
            "p99_us": p99, "errors": len(errors), "first_errors": errors[:3]}


def measure_store(store: str, args, corpus: list[dict], work: Path) -> list[dict]:
    half = len(corpus) // 2
    indexed = work / "indexed.jsonl"
    indexed.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus[:half]), encoding="utf-8")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    subprocess.run(["dedup-hbase", "load", "--store", store, str(indexed), "-q"], check=True, capture_output=True)
    check_bodies = [json.dumps([{"id": d["id"], "text": d["text"]}], ensure_ascii=False).encode() for d in corpus]
    add_bodies = [json.dumps([{"id": f"{d['id']}@{uuid.uuid4().hex[:6]}", "text": d["text"]}],
                             ensure_ascii=False).encode() for d in corpus[half:]]
    runs = [(store, [("check", "/v1/check", check_bodies), ("add?if_new=true", "/v1/add?if_new=true", add_bodies)])]
    if store.startswith("hbase://"):  # the cost of exactness across servers: the same adds without fleet locks
        fresh = [body.replace(b'@', b'@n', 1) for body in add_bodies]
        runs.append((store + "&fleet_locks=false", [("add?if_new=true, fleet_locks=false", "/v1/add?if_new=true", fresh)]))
    rows = []
    for served, endpoints in runs:
        log = work / f"serve-{uuid.uuid4().hex[:6]}.log"
        proc, url = start_service(served, log)
        try:
            for name, path, bodies in endpoints:
                progress(f"  {served}: {name}, {args.service_clients} clients, {args.service_seconds} s ...\n")
                result = asyncio.run(generate(url, path, bodies, args.service_clients, args.service_seconds))
                if result["errors"]:
                    progress(f"  errors; the service {'runs' if proc.poll() is None else f'exited {proc.returncode}'}"
                             f", its log ends:\n{log.read_text()[-3000:]}\n")
                rows.append({"endpoint": name, **result})
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    return rows


def run(report: Report, args, hbase_url: str | None) -> None:
    report.section("The dedup service under load")
    corpus = texts()
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-service-"))
    results = {}
    try:
        stores = [("embedded", str(work / "index"))]
        if hbase_url:
            sep = "&" if "?" in hbase_url else "?"
            stores.append(("HBase", f"{hbase_url}{sep}table_prefix=svc{uuid.uuid4().hex[:8]}"))
        for name, store in stores:
            try:
                results[name] = measure_store(store, args, corpus, work)
            finally:
                if store.startswith("hbase://"):
                    from dedup_hbase import open_store

                    with open_store(store) as s:
                        s.drop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.write(f"`dedup-hbase serve` on loopback; {args.service_clients} concurrent clients (asyncio + httpx, each "
                 f"sends its next request when the last is answered) for {args.service_seconds} s per endpoint, one "
                 f"document per request; {len(corpus) // 2:,} shared-corpus documents indexed first. `check`: texts of "
                 "the whole corpus; `add?if_new=true`: the other half under new ids (about half get added). The "
                 f"generator runs on the same {os.cpu_count()} cores as the service.\n")
    rows = []
    for store, endpoint_rows in results.items():
        for r in endpoint_rows:
            rows.append([store, r["endpoint"], f"{r['requests']:,}", f"{r['per_s']:,.0f}",
                         f"{r['p50_us'] / 1000:.1f}", f"{r['p99_us'] / 1000:.1f}", r["errors"]])
            if r["errors"]:
                report.fail(f"service benchmark, {store} {r['endpoint']}: {r['errors']} errors: {r['first_errors']}")
    report.table(["store", "endpoint", "requests", "requests/s", "p50 ms", "p99 ms", "errors"], rows,
                 right={2, 3, 4, 5, 6})
    report.data["service"] = results


def fleet_cost(hbase_url: str, adds: int = 300, seed: int = 7) -> list[dict]:
    """The cost of exactness across servers, without HTTP: ``OnlineIndex.add(if_new=True)``
    of one random fingerprint per call, ``adds`` calls in a row, with the fleet locks (the
    default) and without (``fleet_locks=false``), each on fresh tables of ``hbase_url``."""
    import random

    from dedup_hbase import Document, Index, open_store
    from dedup_hbase.online import OnlineIndex

    rows = []
    for locks in ("true", "false"):
        sep = "&" if "?" in hbase_url else "?"
        store = open_store(f"{hbase_url}{sep}table_prefix=cost{uuid.uuid4().hex[:8]}&fleet_locks={locks}")
        try:
            online = OnlineIndex(Index.create(store, 4, 3))
            rnd = random.Random(seed)
            docs = [Document(f"d{i}", rnd.getrandbits(64)) for i in range(adds)]
            online.add(docs[:5], if_new=True)  # connections opened, regions cached
            started = time.perf_counter()
            for doc in docs[5:]:
                online.add([doc], if_new=True)
            seconds = time.perf_counter() - started
            rows.append({"fleet_locks": locks, "adds": adds - 5, "adds_per_s": (adds - 5) / seconds,
                         "ms_per_add": seconds * 1000 / (adds - 5)})
        finally:
            store.drop()
            store.close()
    return rows


if __name__ == "__main__":  # cd scripts && python -m benchmarks.service HBASE_URL
    import sys

    for row in fleet_cost(sys.argv[1]):
        print(json.dumps(row))
