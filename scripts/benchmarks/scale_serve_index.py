"""The service against an index the scale bench's data was loaded into (any store; made for
the HBase indexes of 10^8 that take most of an hour to load, which ``scripts/bench scale`` would
build again): ``dedup-hbase serve`` on STORE, then

1. every ``--every``-th of the queries posted in bodies of 100 and the answers checked against
   the brute force over the planted N fingerprints (scale.plant and make_queries of ``--n`` and
   ``--seed``: the index must hold those, and besides them only what earlier runs added, random
   fingerprints near a query by a chance of about 10^-9 each; a wrong answer exits 1);
2. for ``--seconds`` each, under wrk (service_load.load_for: 2 threads, ``--clients``
   connections): one-query ``POST /v1/check`` (each body a different query), then
   ``add?if_new=true`` of new random fingerprints (ids ``new-<seed>-<i>``, so that each run adds),
   one a request and then ``--batch`` a request.

One JSON line per leg on stdout (requests/s, docs/s, p50 and p99 µs, errors, the service's CPU).

    cd scripts && python -m benchmarks.scale_serve_index --store URL --n 1e8 --queries 1e5 --seed 7 \\
        --scale-dir DIR --seconds 20
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
from pathlib import Path

from .scale import data_files, make_queries, plant
from .scale_serve import answers
from .scale_truth import brute_force, check_answers
from .service_load import load_for, start_service

K = 3
NEW_SINGLES, NEW_BATCHES = 200_000, 2_000  # the bodies of the adds: more than 20 s of either takes


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True)
    p.add_argument("--n", type=float, required=True, help="the planted fingerprints the index holds")
    p.add_argument("--queries", type=float, default=1e5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--scale-dir", type=Path, required=True, help="the scale bench's data folder (queries file)")
    p.add_argument("--every", type=int, default=100, help="the sampled queries: every EVERY-th")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--dedup-hbase", default=str(Path(sys.executable).with_name("dedup-hbase")))
    args = p.parse_args()
    n, count = int(args.n), int(args.queries)
    _, queries_file = data_files(args.scale_dir, n, args.seed, count)
    planted = plant(n, args.seed)
    truth = brute_force(planted.fps, make_queries(planted, count, args.seed)[::args.every], K)
    del planted
    lines = queries_file.read_text(encoding="utf-8").splitlines()
    work = Path(tempfile.mkdtemp(prefix="dedup-serve-index-"))
    proc, url = start_service(args.store, work / "serve.log", command=[args.dedup_hbase])
    rng = random.Random(args.seed)
    tag = f"{rng.getrandbits(32):08x}"
    new = [json.dumps({"id": f"new-{tag}-{i}", "simhash": f"{rng.getrandbits(64):016x}"})
           for i in range(NEW_SINGLES + NEW_BATCHES * args.batch)]
    singles, batched = new[:NEW_SINGLES], new[NEW_SINGLES:]
    legs = [("check", "/v1/check", [f"[{line}]".encode() for line in lines], 1),
            ("add?if_new=true", "/v1/add?if_new=true", [f"[{d}]".encode() for d in singles], 1),
            ("add?if_new=true", "/v1/add?if_new=true",
             [("[" + ",".join(batched[i:i + args.batch]) + "]").encode()
              for i in range(0, len(batched) - args.batch + 1, args.batch)], args.batch)]
    try:
        wrong = check_answers(answers(url, lines[::args.every], work / "answers.jsonl"), truth, args.every, K)
        print(json.dumps({"sampled": len(truth), "exact": wrong is None, "wrong": wrong}), flush=True)
        if wrong:
            return 1
        for name, path, bodies, per in legs:
            r = load_for(proc.pid, url, path, bodies, args.clients, work, None, args.seconds)
            print(json.dumps({"endpoint": name, "docs_a_request": per, "docs_per_s": r["per_s"] * per, **r}),
                  flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
