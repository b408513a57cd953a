"""Hostile JSON lines and request bodies (nesting depth, size, types, escapes): every malformed
record is a reject with file, line and reason, never a traceback or the end of the command; the
service answers a JSON 400."""

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup_hbase.jobs.corpus import read_records

ROOT = Path(__file__).resolve().parent.parent

DEEP = '{"id": "deep", "text": ' + "[" * 5000 + "]" * 5000 + "}"
FIXED = [DEEP, '{"id": "n", "text": "x"' + ', "a": {' * 3000 + "}" * 3000 + "}", '{"id": ' + "9" * 5000 + ', "text": "x"}',
         '{"id": "s", "text": "\\ud800 lone"}', '{"id": 1e400, "text": "x"}', '{"id": "t", "text": NaN}',
         '{"id": "' + "x" * 2000 + '", "text": "x"}', '[1, 2]', '"just a string"', '{"id": "u", "simhash": "zz"}',
         '{"text": "no id"}', "{bad json", '{"id": true, "text": "x"}', '{"id": "v", "text": 12}']

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                           max_leaves=12)
hostile_objects = st.fixed_dictionaries({}, optional={"id": json_values, "text": json_values, "simhash": json_values,
                                                      "title": json_values, "featurizer": json_values})
hostile_lines = st.one_of(st.sampled_from(FIXED), hostile_objects.map(json.dumps),
                          json_values.map(json.dumps), st.text(max_size=40).filter(lambda s: "\n" not in s and "\r" not in s))

GOOD_WORDS = "国家 经济 发展 新闻 报道 会议 改革 城市 农村 科技 教育 文化 卫生 交通 能源 环境".split()


def good_line(i: int, rnd: random.Random) -> str:
    return json.dumps({"id": f"good-{i}", "text": "".join(rnd.choice(GOOD_WORDS) for _ in range(12)) + f"第{i}号"},
                      ensure_ascii=False)


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_lines, min_size=1, max_size=5))
def test_every_hostile_line_reads_as_a_record_or_a_reject(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("h") / "h.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    got = list(read_records([str(path)]))
    for record in got:
        assert record.error or (record.id and (record.text is not None or record.simhash is not None))
        if record.text is not None:
            record.text.encode("utf-8")  # never a lone surrogate that would fail a write


def test_ten_thousand_hostile_lines_among_good_ones_one_load(tmp_path):
    """10^4 lines, hostile ones (drawn by hypothesis, seeded) mixed with good ones: the load
    indexes every good one and rejects every bad one, each with a reason, in one real run."""
    rnd = random.Random(45)
    hostile = []

    @settings(max_examples=5000, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(hostile_lines)
    def collect(line):
        hostile.append(line)
    collect()
    lines, good = [], 0
    for line in hostile:
        lines += [line, good_line(good, rnd)]
        good += 1
    while len(lines) < 10_000:
        lines.append(rnd.choice(FIXED))
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    blank = sum(1 for line in lines if not line.strip())
    store = str(tmp_path / "idx")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "dedup_hbase", *a, "--store", store], capture_output=True,
                                    text=True, env=env)
    assert run("init").returncode == 0
    load = run("load", str(path), "--rejects", str(tmp_path / "rejects.jsonl"), "--json", "--quiet")
    assert load.returncode == 0, load.stderr[-2000:]
    assert "Traceback" not in load.stderr
    report = json.loads(load.stdout)
    rejects = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text().split("\n") if line]
    assert all(r["reason"] and r["line"] >= 1 and r["source"] == str(path) for r in rejects)
    assert report["read"] == len(lines) - blank == report["indexed"] + report["rejected"]
    assert report["rejected"] == len(rejects)
    indexed = {json.loads(line)["id"] for line in run("check", str(path), "--json").stdout.split("\n")
               if line and "error" not in json.loads(line)}
    assert {f"good-{i}" for i in range(good)} <= indexed
    assert {r.line for r in read_records([str(path)]) if r.error} <= {r["line"] for r in rejects}


def test_the_service_answers_hostile_bodies_with_a_json_400(tmp_path):
    from dedup_hbase import open_store
    from dedup_hbase.index.index import Index
    from dedup_hbase.service.app import Dispatch, Exchange
    from dedup_hbase.service.handlers import DedupService
    from dedup_hbase.service.online import OnlineIndex

    index = Index.create(open_store(str(tmp_path / "idx"), create=True), 4, 3)
    service = DedupService(OnlineIndex(index))

    async def ask(path: str, body: bytes) -> tuple[int, bytes]:
        done = asyncio.get_running_loop().create_future()
        route, _, query = path.partition("?")
        Dispatch(service)(Exchange("POST", route, query.encode(), [(b"content-type", b"application/json")], body,
                                   lambda status, content, *_: done.set_result((status, content)), time.perf_counter()))
        return await done

    bodies = st.one_of(st.sampled_from(["[" + line + "]" for line in FIXED] + ["[" * 5000 + "]" * 5000, DEEP]),
                       st.lists(hostile_objects, max_size=3).map(json.dumps), json_values.map(json.dumps))

    @settings(max_examples=300, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(bodies, st.sampled_from(["/v1/check", "/v1/add?if_new=true"]))
    def answers(body, path):
        status, content = asyncio.run(ask(path, body.encode("utf-8", "surrogatepass")))
        assert status in (200, 400, 413), (status, content)
        answer = json.loads(content)
        if status != 200:
            assert answer["error"], answer
    try:
        answers()
        status, content = asyncio.run(ask("/v1/check", ("[" * 5000 + "]" * 5000).encode()))
        assert (status, json.loads(content)) == (400, {"error": "the body is not JSON this service reads: nested too deeply"})
    finally:
        service.threads.shutdown()
        index.store.close()
