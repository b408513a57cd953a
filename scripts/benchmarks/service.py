"""The dedup service under load: a real ``dedup-hbase serve`` process on loopback, driven for a
fixed time by wrk or its Python stand-in (service_load.py).

Per store (embedded, and HBase when one runs): half of the shared news corpus is loaded first;
then ``check`` (texts of the corpus) and ``add?if_new=true`` (texts of the other half under new
ids, so about half of them are added), with one and with 100 documents per request, each run
for ``--service-seconds``; on HBase also ``add?if_new=true`` with ``fleet_locks=false``. Reported: requests/s, p50/p99 latency as the client sees
it, errors (any non-200 answer counts; there must be none), and the service process's own CPU
time during the run (user + system of all its threads, from /proc/PID/stat): documents per
service CPU second, next to the core's fingerprint rate per CPU second measured in the same run,
is what the service costs per document whatever else shares the machine. The target's row (one
document per ``check`` on the embedded store) is measured in slices alternating with the core
(``target_slices``), so that both rates see the same machine. The generator shares the
machine's cores with the service (and HBase): the rates are lower bounds of what a separate
client machine would see.

``--service-production`` serves as in production (docs/service.md): a tokens file, every
request with its bearer token (the scope checked), the access log written to a file, and
``/metrics`` scraped after each endpoint's run (its count of that endpoint's answers is the
row's ``service counted``); the metrics are counted whether or not. ``--service-target-only``
measures the target's row alone (one-document checks on the embedded store), for runs of the
two settings one after the other.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path

from .common import Report, progress
from .load import texts
from .service_load import load_for, scraped_requests, server_counters, start_service

TOKEN = "bench-token-0123456789abcdef"  # --service-production's one token (scopes read, write)


def production_options(work: Path) -> list[str]:
    """``serve``'s options of ``--service-production``: a tokens file and an access log in ``work``."""
    tokens = work / "tokens"
    tokens.write_text(f"{TOKEN} read,write\n")
    return ["--tokens", str(tokens), "--access-log", str(work / "access.log")]


def measure_store(store: str, args, corpus: list[dict], work: Path) -> list[dict]:
    half = len(corpus) // 2
    indexed = work / "indexed.jsonl"
    indexed.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus[:half]), encoding="utf-8")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    subprocess.run(["dedup-hbase", "load", "--store", store, str(indexed), "-q"], check=True, capture_output=True)
    def bodies(docs: list[dict], per: int, tag: str | None = None) -> list[bytes]:
        docs = [{"id": d["id"] if tag is None else f"{d['id']}@{tag}", "text": d["text"]} for d in docs]
        return [json.dumps(docs[i:i + per], ensure_ascii=False).encode() for i in range(0, len(docs) - per + 1, per)]

    def endpoints(tag: str, suffix: str = "") -> list:
        return [(f"add?if_new=true{suffix}", "/v1/add?if_new=true", bodies(corpus[half:], 1, tag + "1"), 1),
                (f"add?if_new=true{suffix}", "/v1/add?if_new=true", bodies(corpus[half:], 100, tag + "100"), 100)]

    # the target's row (one-document checks on the embedded store) is measured in slices, each
    # followed by the core for as long (target_slices); elsewhere that row is one run like the others
    slices = max(args.target_slices, 1) if not store.startswith("hbase://") else 1
    runs = [(store, [("check", "/v1/check", bodies(corpus, 1), 1), ("check", "/v1/check", bodies(corpus, 100), 100),
                     *endpoints("a")])]
    if args.service_target_only:
        runs = [(store, runs[0][1][:1])]
    elif store.startswith("hbase://"):  # the cost of exactness across servers: the same adds without fleet locks
        runs.append((store + "&fleet_locks=false", endpoints("b", ", fleet_locks=false")))
    token = TOKEN if args.service_production else None
    options = production_options(work) if args.service_production else []
    rows = []
    for served, endpoints in runs:
        log = work / f"serve-{uuid.uuid4().hex[:6]}.log"
        proc, url = start_service(served, log, args.service_port, options)
        try:
            for name, path, sent, per in endpoints:
                progress(f"  {served}: {name}, {per} per request, {args.service_clients} clients, "
                         f"{args.service_seconds} s{', production settings' if token else ''} ...\n")
                counters_before = server_counters(url, token)
                scraped_before = scraped_requests(url, token, name.split("?")[0]) if token else 0
                measured = partial(load_for, proc.pid, url, path, sent, args.service_clients, work, token)
                if name == "check" and per == 1 and slices > 1:
                    result = target_slices(measured, CoreWindow([d["text"] for d in corpus]), args.service_seconds,
                                           slices)
                else:
                    result = measured(args.service_seconds)
                counters = server_counters(url, token)
                if token:
                    result["service_counted"] = scraped_requests(url, token, name.split("?")[0]) - scraped_before
                calls = counters.get("check_calls", 0) - counters_before.get("check_calls", 0)
                checked = counters.get("documents_checked", 0) - counters_before.get("documents_checked", 0)
                result["docs_per_check_call"] = checked / calls if calls and name == "check" else None
                if result["errors"]:
                    progress(f"  errors; the service {'runs' if proc.poll() is None else f'exited {proc.returncode}'}"
                             f", its log ends:\n{log.read_text()[-3000:]}\n")
                rows.append({"endpoint": name, "docs_per_request": per, **result})
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
        if hbase_url and not args.service_target_only:
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
    generator = "wrk -t2" if shutil.which("wrk") else "asyncio + httpx"
    batched, single = core_rate([d["text"] for d in corpus])
    settings = ("production settings (`--tokens`, every request with its bearer token; `--access-log` into a file; "
                "`/metrics` scraped after each run)" if args.service_production else "no tokens, no access log")
    report.write(f"`dedup-hbase serve` on loopback, {settings}; {args.service_clients} concurrent connections ({generator}, each "
                 f"sends its next request when the last is answered) for {args.service_seconds} s per endpoint; "
                 f"{len(corpus) // 2:,} shared-corpus documents indexed first. `check`: texts of the whole corpus; "
                 "`add?if_new=true`: the other half under new ids (about half get added; bodies repeat once used up, "
                 f"then adding nothing). The generator runs on the same {os.cpu_count()} cores as the service. The "
                 f"core's own rate in this run, on the corpus's {len(corpus):,} texts (the check requests' texts), "
                 f"the best of 3 passes: {batched:,.0f} documents per CPU second in one batch, {single:,.0f} one "
                 "call per document. *service CPU s*: the service process's own CPU time (user + system, all "
                 "its threads, from /proc) during the endpoint's run; *docs per service CPU s* against the core's "
                 "rate one call per document is the target metric (>= 50% for one-document `check` on the embedded "
                 "store). *docs per index call*: concurrent checks are joined into one call of the index; how many "
                 "documents such a call held on average. The one-document check on the embedded store (the target's "
                 f"row) is measured in {max(args.target_slices, 1)} slices of the endpoint's time, each followed by the "
                 "core, one call per document over the same texts, for as much CPU time as the service used in the "
                 "slice (*of the core's rate right after*: the ratio to the core's rate over those windows; on a "
                 "machine whose speed wanders over seconds, the two sums see the same machine).\n")
    rows = []
    for store, endpoint_rows in results.items():
        for r in endpoint_rows:
            docs = r["requests"] * r["docs_per_request"]
            per_cpu = docs / r["service_cpu_s"] if r["service_cpu_s"] > 0 else float("nan")
            r["docs_per_service_cpu_s"], r["of_core_single"] = per_cpu, per_cpu / single
            after = r.get("core_single_after")
            if after:
                r["of_core_after"] = per_cpu / after
            rows.append([store, r["endpoint"], r["docs_per_request"], f"{r['requests']:,}", f"{r['per_s']:,.0f}",
                         f"{r['per_s'] * r['docs_per_request']:,.0f}", f"{r['p50_us'] / 1000:.1f}",
                         f"{r['p99_us'] / 1000:.1f}", r["errors"], f"{r['service_cpu_s']:.1f}", f"{per_cpu:,.0f}",
                         f"{1e6 / per_cpu:.0f}" if per_cpu == per_cpu else "", f"{per_cpu / single:.0%}",
                         f"{per_cpu / after:.0%} of {after:,.0f}" if after else "",
                         "" if r.get("docs_per_check_call") is None else f"{r['docs_per_check_call']:.1f}"])
            if r["errors"]:
                report.fail(f"service benchmark, {store} {r['endpoint']}: {r['errors']} errors: {r['first_errors']}")
    report.table(["store", "endpoint", "docs/request", "requests", "requests/s", "docs/s", "p50 ms", "p99 ms",
                  "errors", "service CPU s", "docs per service CPU s", "service CPU µs per doc", "of the core's rate",
                  "of the core's rate right after", "docs per index call"],
                 rows, right=set(range(2, 15)))
    counted = [f"{store} {r['endpoint']} x{r['docs_per_request']}: {r['service_counted']:,}"
               for store, endpoint_rows in results.items() for r in endpoint_rows if "service_counted" in r]
    if counted:
        report.write("Answers counted by the service's `/metrics` in each run (the generator's count leaves out the "
                     "requests in flight when it stopped): " + "; ".join(counted) + ".\n")
    target = [r for r in results.get("embedded", []) if r["endpoint"] == "check" and r["docs_per_request"] == 1]
    if target:
        report.write(target_line(target[0], single) + "\n")
    report.data["service"] = {"results": results, "core_docs_per_cpu_s": {"batched": batched, "single": single}}


def target_line(row: dict, single: float) -> str:
    """The target's verdict from its row (one-document checks on the embedded store): the
    service's documents per CPU second over its slices against the core's over its windows
    between them (``target_slices``); each slice's pair shown as a range. A row of one run
    (no slices) is compared with ``single``, the best short pass of the core."""
    head = "**Target** (one-document `check` on the embedded store at >= 50% of the core's rate per CPU second): "
    rate = row["docs_per_service_cpu_s"]
    if not row.get("slices"):
        ratio = rate / single
        return (f"{head}{'met' if ratio >= 0.5 else 'NOT met'}. One run, {rate:,.0f} documents per service CPU "
                f"second ({1e6 / rate:.0f} µs each), {ratio:.0%} of the core's best pass ({single:,.0f}).")
    ratio, core = rate / row["core_single_after"], row["core_single_after"]
    pairs = sorted(service / core_rate for service, core_rate in row["slices"])
    return (f"{head}{'met' if ratio >= 0.5 else 'NOT met'}. {rate:,.0f} documents per service CPU second "
            f"({1e6 / rate:.0f} µs each) over {len(pairs)} slices, against the core's {core:,.0f} ({1e6 / core:.0f} µs "
            f"each) over as much CPU time between them: {ratio:.0%}; slice by slice {pairs[0]:.0%} to "
            f"{pairs[-1]:.0%}, at least 50% in {sum(p >= 0.5 for p in pairs)} of {len(pairs)}.")


def core_rate(texts: list[str], rounds: int = 3, batched: bool = True) -> tuple[float, float]:
    """Documents per CPU second of the fingerprinter the service uses, on ``texts`` (the texts
    the check requests carry): in one batch, and one call each; the best of ``rounds`` passes
    over all of them (the machine is shared: the fastest pass is the core's own rate). Each
    pass gets the texts as new str objects, as the service gets them from a request (a str
    keeps its UTF-8 form once made: a pass over the same objects again would not pay it).
    ``batched`` False: the batch rate is not measured (nan)."""
    from dedup_hbase.text.fingerprint import make_fingerprinter

    fingerprinter = make_fingerprinter()
    fingerprinter.fingerprint_many(texts[:10])  # the dictionary loaded
    for text in texts[:200]:  # and a few texts, so that no timed pass pays a first call's costs
        fingerprinter.fingerprint(text)
    encoded = [text.encode("utf-8", "surrogatepass") for text in texts]

    def fresh() -> list[str]:
        return [raw.decode("utf-8", "surrogatepass") for raw in encoded]

    batch, single = [], []
    for _ in range(rounds):
        if batched:
            given = fresh()
            started = time.process_time()
            fingerprinter.fingerprint_many(given)
            batch.append(time.process_time() - started)
        given = fresh()
        started = time.process_time()
        for text in given:
            fingerprinter.fingerprint(text)
        single.append(time.process_time() - started)
    return len(texts) / min(batch) if batch else float("nan"), len(texts) / min(single)


class CoreWindow:
    """The core fingerprinting ``texts`` one call per document, as the service does, for a
    given CPU time: each pass over new str objects (a str keeps its UTF-8 once made), from
    where the last window stopped, so windows of any length go round the whole corpus."""

    def __init__(self, texts: list[str]) -> None:
        from dedup_hbase.text.fingerprint import make_fingerprinter

        self.fingerprinter = make_fingerprinter()
        for text in texts[:200]:  # the dictionary loaded, first calls paid
            self.fingerprinter.fingerprint(text)
        self.encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        self.at = 0

    def __call__(self, seconds: float) -> tuple[int, float]:
        """(documents, CPU seconds) of at least ``seconds`` of CPU time, in chunks of 500 texts."""
        done, spent, fingerprint = 0, 0.0, self.fingerprinter.fingerprint
        while spent < seconds:
            chunk = self.encoded[self.at:self.at + 500]
            self.at = (self.at + 500) % len(self.encoded)
            given = [raw.decode("utf-8", "surrogatepass") for raw in chunk]
            started = time.process_time()
            for text in given:
                fingerprint(text)
            spent += time.process_time() - started
            done += len(given)
        return done, spent


def target_slices(measured, core: CoreWindow, seconds: float, slices: int) -> dict:
    """The target's row in ``slices`` alternations of the service under load for ``seconds /
    slices`` (``measured``) and the core for as much CPU time as the service used in it: on a
    machine whose speed wanders over seconds, the two sums see the same machine. The row holds
    the sums (p50: the slices' median, p99: their highest), ``core_single_after`` the core's
    rate over its windows, and each slice's pair of rates."""
    parts = []
    for _ in range(slices):
        result = measured(seconds / slices)
        result["core"] = core(result["service_cpu_s"])
        parts.append(result)
    requests, cpu = sum(r["requests"] for r in parts), sum(r["service_cpu_s"] for r in parts)
    seconds = sum(r["seconds"] for r in parts)  # as each slice ran (wrk's: whole seconds)
    core_docs, core_cpu = sum(r["core"][0] for r in parts), sum(r["core"][1] for r in parts)
    return {"requests": requests, "seconds": seconds, "per_s": requests / seconds,
            "p50_us": sorted(r["p50_us"] for r in parts)[len(parts) // 2], "p99_us": max(r["p99_us"] for r in parts),
            "errors": sum(r["errors"] for r in parts), "first_errors": [e for r in parts for e in r["first_errors"]][:3],
            "generator": parts[0]["generator"], "service_cpu_s": cpu, "core_single_after": core_docs / core_cpu,
            "slices": [(r["requests"] / r["service_cpu_s"], r["core"][0] / r["core"][1]) for r in parts]}


FLEET_SETTINGS = ("fleet_locks=true&lock_stripes=0", "fleet_locks=true&lock_stripes=64",
                  "fleet_locks=true&lock_stripes=256", "fleet_locks=false")


def fleet_cost(hbase_url: str, docs: int = 3000, sizes: tuple[int, ...] = (1, 100), seed: int = 7,
               settings: tuple[str, ...] = FLEET_SETTINGS) -> list[dict]:
    """The cost of exactness across servers, without HTTP: ``OnlineIndex.add(if_new=True)``
    of ``docs`` random fingerprints, ``size`` a call, calls in a row, under each of
    ``settings`` (store URL options: a lock per scan prefix, per stripe of 64 or 256, none),
    each on fresh tables of ``hbase_url``; the settings alternate per size."""
    import random

    from dedup_hbase import Document, Index, open_store
    from dedup_hbase.service.online import OnlineIndex

    rows = []
    for size in sizes:
        for setting in settings:
            sep = "&" if "?" in hbase_url else "?"
            store = open_store(f"{hbase_url}{sep}table_prefix=cost{uuid.uuid4().hex[:8]}&{setting}")
            try:
                online = OnlineIndex(Index.create(store, 4, 3))
                rnd = random.Random(seed)
                batch = [Document(f"d{i}", rnd.getrandbits(64)) for i in range(docs)]
                online.add(batch[:5], if_new=True)  # connections opened, regions cached
                calls = [batch[i:i + size] for i in range(5, docs, size)]
                started, cpu = time.perf_counter(), time.process_time()
                for call in calls:
                    online.add(call, if_new=True)
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
                added = sum(len(c) for c in calls)
                rows.append({"setting": setting, "docs_per_call": size, "calls": len(calls),
                             "docs_per_s": added / seconds, "ms_per_call": seconds * 1000 / len(calls),
                             "client_cpu_ms_per_call": cpu * 1000 / len(calls)})
            finally:
                store.drop()
                store.close()
    return rows


def production_overhead(rounds: int = 7, calls: int = 200_000, tokens: int = 10) -> dict:
    """CPU µs per request of what the production settings add to an answer, in process: the
    metrics' count (always on), the token check (``tokens`` tokens in the file, the request's
    the last), and the access log's line (into a file, flushed at each loop turn's end as the
    service does, every 20 lines here: a turn's worth under load). The best of ``rounds``
    passes of ``calls`` calls each (the machine is shared: the fastest pass is the code's own
    cost); ``time.process_time``."""
    import asyncio
    import tempfile

    from dedup_hbase.service.access import Access
    from dedup_hbase.service.metrics import AccessLog, Metrics

    folder = Path(tempfile.mkdtemp(prefix="dedup-bench-overhead-"))
    names = [f"token-{i:02d}-0123456789abcdef" for i in range(tokens)]
    (folder / "tokens").write_text("".join(f"{name} read,write\n" for name in names))
    access, metrics = Access(folder / "tokens"), Metrics()
    headers = [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"), (b"content-length", b"120"),
               (b"authorization", b"Bearer " + names[-1].encode())]

    def best(step) -> float:
        times = []
        for _ in range(rounds):
            started = time.process_time()
            step()
            times.append(time.process_time() - started)
        return min(times) / calls * 1e6

    def counting() -> None:
        request = metrics.request
        for _ in range(calls):
            request("check", 200, 1, 0.002)

    def checking() -> None:
        refusal = access.refusal
        for _ in range(calls):
            refusal(headers, "read")

    async def logging_lines(write: bool) -> float:
        log = AccessLog(str(folder / "access.log"))
        line, remote = log.write, ("127.0.0.1", 50312)
        started = time.process_time()
        for i in range(calls):
            if write:
                line("check", "POST", 200, 1, 0.002, remote)
            if i % 20 == 19:
                await asyncio.sleep(0)  # the loop's turn ends: the flush scheduled runs
        spent = time.process_time() - started
        log.close()
        return spent

    def log_pass() -> float:  # the loop's turns alone subtracted
        return asyncio.run(logging_lines(True)) - asyncio.run(logging_lines(False))

    out = {"metrics_us": best(counting), "tokens_us": best(checking),
           "access_log_us": min(log_pass() for _ in range(rounds)) / calls * 1e6, "tokens_in_file": tokens}
    shutil.rmtree(folder, ignore_errors=True)
    return out


if __name__ == "__main__":  # cd scripts && python -m benchmarks.service HBASE_URL | overhead
    import sys

    if sys.argv[1] == "overhead":
        for count in (1, 10, 100):
            print(json.dumps(production_overhead(tokens=count)))
    else:
        for row in fleet_cost(sys.argv[1]):
            print(json.dumps(row))
