"""Scale through the service: ``scripts/bench scale --scale-serve SECONDS`` runs, after each
size's embedded ``check``, ``dedup-hbase serve`` on that store and sends it single-document
``POST /v1/check`` requests of the check's queries (``{"id", "simhash"}``, each body a different
query, round robin) for SECONDS with wrk (compiled: 2 threads, ``--scale-serve-clients``
connections) where it is installed, else the asyncio generator of the service bench. Reported:
requests/s, p50 and p99 latency (µs) and the service's CPU seconds per request. Before the load,
the sampled queries are sent in bodies of 100 and their answers checked against the brute force
as the check command's are (a wrong one fails the run).
"""

from __future__ import annotations

import json
import signal
import urllib.request
from pathlib import Path

from .service_load import load_for, start_service

BODY_DOCS = 100  # queries per request of the exactness pass


def answers(url: str, lines: list[str], out: Path) -> Path:
    """``lines`` (JSON documents) posted to ``url``/v1/check in bodies of ``BODY_DOCS``; the
    answers as JSON lines in ``out`` (the check command's output form)."""
    with open(out, "w", encoding="utf-8") as f:
        for start in range(0, len(lines), BODY_DOCS):
            body = ("[" + ",".join(lines[start:start + BODY_DOCS]) + "]").encode()
            request = urllib.request.Request(url + "/v1/check", data=body, method="POST",
                                             headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as response:
                for record in json.load(response):
                    f.write(json.dumps(record) + "\n")
    return out


def run_serve(args, dh: list[str], store: Path, queries_file: Path, every: int, work: Path, check_answers) -> dict:
    """The service leg of one size and scheme (see the module's docstring); ``check_answers(path)``
    says what is wrong with the answers in ``path`` (None: exact)."""
    with open(queries_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    sampled = lines[::every]
    log = work / "serve.log"
    proc, url = start_service(str(store), log, command=dh)
    try:
        wrong = check_answers(answers(url, sampled, work / "serve-answers.jsonl"))
        bodies = [f"[{line}]".encode() for line in lines]
        result = load_for(proc.pid, url, "/v1/check", bodies, args.scale_serve_clients, work, None,
                          args.scale_serve)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    result["wrong"] = wrong
    result["sampled"] = len(sampled)
    result["service_cpu_us_per_request"] = (result["service_cpu_s"] / result["requests"] * 1e6
                                            if result["requests"] else None)
    return result
