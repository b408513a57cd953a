"""A ``dedup-hbase serve`` process under a bounded load for a fixed time, as the benchmarks
drive it: the process started on a free port and its URL read from its first line; the load by
``wrk`` (compiled; N connections on 2 threads, each connection sending its next request when
the previous one is answered, bodies taken in turn from a file by a Lua script) where it is
installed (``apt-get install wrk``), else asyncio + httpx (the same closed loop, in Python: it
then shares the service's CPU and is slower); the service's own CPU time from /proc; its
counters from ``/v1/stats`` and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from .common import percentiles


def start_service(store: str, log: Path, port: int = 0, options: list[str] = (),
                  command: list[str] = ("dedup-hbase",)) -> tuple[subprocess.Popen, str]:
    """``dedup-hbase serve`` (``command``) on ``port`` (0: a free one) with ``options``, its stderr into
    ``log`` (a file: a pipe nobody reads would stall the service once full); the URL it serves."""
    with open(log, "w") as err:
        proc = subprocess.Popen([*command, "serve", "--store", store, "--port", str(port), *options], stderr=err,
                                text=True)
    deadline = time.monotonic() + 120
    while not (line := log.read_text().partition("\n")[0]).startswith("serving ") or not line.endswith("stops"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the service did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc, line.split(" on ", 1)[1].split(" ", 1)[0]


async def generate(url: str, path: str, bodies: list[bytes], clients: int, seconds: float, token: str | None) -> dict:
    """``clients`` loops posting ``bodies`` round robin for ``seconds`` (with ``token``, if
    given, as a bearer token); latencies in µs."""
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one_client(offset: int) -> None:
            i = offset
            while time.perf_counter() < deadline:
                body = bodies[i % len(bodies)]
                i += clients
                started = time.perf_counter_ns()
                try:
                    response = await client.post(path, content=body, headers=headers)
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


WRK_SCRIPT = """
local bodies = {}
local headers = {["Content-Type"] = "application/json"}
function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  if args[2] then headers["Authorization"] = "Bearer " .. args[2] end
  i = math.random(#bodies)
end
function request()
  i = i % #bodies + 1
  return wrk.format("POST", nil, headers, bodies[i])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %f %f\\n", summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) process ``pid`` has used so far: /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15


def settled_cpu_seconds(pid: int, quiet: float = 0.02, step: float = 0.25, most: float = 30) -> float:
    """``cpu_seconds`` once the service is idle (it used under ``quiet`` CPU seconds in ``step``):
    the requests still in flight when the generator stopped finish first, so their CPU time
    counts in the run that sent them (they are not among its requests: a conservative bias)."""
    deadline, last = time.monotonic() + most, cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(step)
        now = cpu_seconds(pid)
        if now - last < quiet:
            return now
        last = now
    return last


def fetch(url: str, token: str | None):
    """The answer of a GET of ``url`` (with ``token`` as a bearer token, if given), opened."""
    import urllib.request

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)


def server_counters(url: str, token: str | None = None) -> dict:
    """The service's own counters (``/v1/stats``: ``server``)."""
    with fetch(url + "/v1/stats", token) as response:
        return json.load(response)["server"]


def scraped_requests(url: str, token: str | None, endpoint: str) -> int:
    """``GET /metrics``, parsed by prometheus_client: the answers of ``endpoint`` counted so far."""
    from prometheus_client.parser import text_string_to_metric_families

    with fetch(url + "/metrics", token) as response:
        text = response.read().decode()
    return int(sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == "dedup_http_requests_total" and sample.labels["endpoint"] == endpoint))


def generate_wrk(url: str, path: str, bodies: list[bytes], clients: int, seconds: float, work: Path,
                 token: str | None) -> dict:
    """``generate`` with wrk: the bodies one per line in a file, sent in turn, for ``seconds``
    rounded to a whole second (wrk takes whole seconds only; at least 1)."""
    seconds = max(1, round(seconds))
    lines, script = work / f"bodies-{uuid.uuid4().hex[:6]}.txt", work / "bodies.lua"
    lines.write_bytes(b"\n".join(bodies) + b"\n")
    script.write_text(WRK_SCRIPT)
    out = subprocess.run(["wrk", "-t2", f"-c{clients}", f"-d{seconds:g}s", "--timeout", "60s", "-s", str(script),
                          url + path, "--", str(lines), *([token] if token else [])],
                         capture_output=True, text=True, check=True).stdout
    requests, status_errors, other_errors, p50, p99 = out.split("RESULT ", 1)[1].split()[:5]
    elapsed = float(seconds)
    errors = int(status_errors) + int(other_errors)
    return {"requests": int(requests), "seconds": elapsed, "per_s": int(requests) / elapsed, "p50_us": float(p50),
            "p99_us": float(p99), "errors": errors, "first_errors": [out[-500:]] if errors else [],
            "generator": "wrk"}


def load_for(pid: int, url: str, path: str, sent: list[bytes], clients: int, work: Path, token: str | None,
             seconds: float) -> dict:
    """The generator's result of ``seconds`` of load on ``url`` + ``path`` with the service's
    (``pid``) CPU time in it (``service_cpu_s``)."""
    cpu_before = cpu_seconds(pid)
    if shutil.which("wrk"):
        result = generate_wrk(url, path, sent, clients, seconds, work, token)
    else:
        result = asyncio.run(generate(url, path, sent, clients, seconds, token))
    result["service_cpu_s"] = settled_cpu_seconds(pid) - cpu_before
    return result
