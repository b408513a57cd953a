"""``POST /v1/check?explain=true`` on a real `dedup-hbase serve` process, on the embedded store
and on the real HBase: each text's weightiest terms and each match's differing bits, the same
values as the `explain` command's for the same pair; 400 for a value that is not true or false;
a check without it answered in today's bytes, by the fast lane (one TLS record: http_lane.py
writes head and body at once, the ASGI way in two)."""

import json
import re
import subprocess

import httpx
from test_service_access import certificate, raw  # noqa: F401  (certificate: a fixture)

from serving import started

BASE = ("岭南发展参战公开等于遇到真的一直。同样势力南方生活人民地图风味抽噎构成东湖高新技术开发区政治部华沙笔架山君主制。"
        "管制杂质故里行情课程内部天安门一样投资辈出。创制嫌弃热火绿豆主人学校工厂划定香港继续关系其他数目拥有。"
        "两种微软刚刚总算全市香港范围沉吟。坚决主要情况一边书记案件领先独孤闹着玩北京突围特殊那样。"
        "击中童年将军全部基地第五代明显氢气偷盗东风汽车公司。斗争艺术家小议案不少发言人明永乐产品时候完成礼貌重要屋脊成为当时迅速。")
EDITED = BASE[:60] + "改" + BASE[61:]  # one character changed: a few bits apart
OTHER = "长江经济带生态环境保护发生了转折性变化，沿江省市推进生态优先绿色发展。"


def cli(*args: str) -> str:
    done = subprocess.run(["dedup-hbase", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def loaded(store: str, folder) -> str:
    """``store`` made and loaded with BASE and OTHER; a file holding them and EDITED (q)."""
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                            for i, t in (("base", BASE), ("other", OTHER), ("q", EDITED))), encoding="utf-8")
    loaded_part = folder / "indexed.jsonl"
    loaded_part.write_text("".join(path.read_text("utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    cli("init", "--store", store, "--short-texts", "off")  # it looks one document up by its simhash alone
    cli("load", "--store", store, str(loaded_part))
    return str(path)


def test_explain_true_gives_the_explain_commands_values(tmp_path, store_url):
    inputs = loaded(store_url, tmp_path)
    (shown,) = json.loads(cli("explain", inputs, "--id", "q", "--id", "base", "--json"))["pairs"]
    assert 1 <= shown["distance"] <= 3 and shown["differing_bits"]
    with started(store_url, log=tmp_path / "serve.log") as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        docs = [{"id": "q", "text": EDITED}, {"id": "h", "simhash": shown["b"]["simhash"]}, {"id": "e", "text": "。"}]
        answer = client.post("/v1/check?explain=true", json=docs)
        assert answer.status_code == 200, answer.text
        q, h, empty = answer.json()
        assert q["simhash"] == shown["a"]["simhash"]
        assert q["matches"] == [{"id": "base", "simhash": shown["b"]["simhash"], "distance": shown["distance"],
                                 "differing_bits": shown["differing_bits"]}]
        assert q["terms"] == [[term, weight] for term, weight, _ in shown["a"]["terms"]]
        assert len(q["terms"]) == 10
        # by its simhash: no text, so no terms; the match itself at distance 0
        assert h == {"id": "h", "simhash": shown["b"]["simhash"],
                     "matches": [{"id": "base", "simhash": shown["b"]["simhash"], "distance": 0, "differing_bits": []}]}
        assert set(empty) == {"id", "error"}  # a text without features: its error, nothing to explain
        for value in ("maybe", ""):
            refused = client.post(f"/v1/check?explain={value}", json=docs)
            assert refused.status_code == 400 and refused.json() == {"error": f"explain is true or false, not {value!r}"}
        plain = client.post("/v1/check", json=docs).json()
        assert plain == client.post("/v1/check?explain=false", json=docs).json()
        assert plain[0] == {"id": "q", "simhash": q["simhash"],
                            "matches": [{"id": "base", "simhash": shown["b"]["simhash"], "distance": shown["distance"]}]}


def test_without_explain_the_same_bytes_on_the_fast_lane(tmp_path, certificate):  # noqa: F811
    """A check without ``explain`` is answered in the bytes of a check before it existed (the
    JSON written by hand here), in one TLS record: by the fast lane; with ``explain=true`` it
    gains its fields and nothing else changes."""
    import ssl

    cert, key = certificate
    store = str(tmp_path / "index")
    loaded(store, tmp_path)
    simhash = json.loads(cli("fingerprint", "--file", str(tmp_path / "indexed.jsonl"), "--json").splitlines()[0])["simhash"]
    with started(store, "--certfile", str(cert), "--keyfile", str(key), log=tmp_path / "serve.log") as (url, _):
        trusted = ssl.create_default_context(cafile=str(cert))
        body = json.dumps([{"id": "x", "text": BASE}], ensure_ascii=False).encode()
        today = (b'[{"id":"x","simhash":"%s","matches":[{"id":"base","simhash":"%s","distance":0}]}]'
                 % (simhash.encode(), simhash.encode()))
        for path in (b"/v1/check", b"/v1/check?explain=false", b"/v1/check?other=1"):
            reads = raw(url, request(path, body), trusted)
            assert len(reads) == 1, reads  # one record: the lane's one write
            head, _, content = reads[0].partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\n") and content == today, reads
        reads = raw(url, request(b"/v1/check?explain=true", body), trusted)
        head, _, content = b"".join(reads).partition(b"\r\n\r\n")
        (answer,) = json.loads(content)
        assert answer.pop("terms") and answer["matches"][0].pop("differing_bits") == []
        assert json.dumps([answer], separators=(",", ":")).encode() == today
        assert re.search(rb"content-length: %d\r\n" % len(content), head)


def request(path: bytes, body: bytes) -> bytes:
    return b"\r\n".join([b"POST " + path + b" HTTP/1.1", b"host: x", b"content-length: %d" % len(body), b"", body])


def test_only_explain_true_calls_the_explain_code(tmp_path):
    """In process, over ``Dispatch``: ``DedupService.explain`` is called for ``explain=true``
    (or ``1``) alone; without it, with ``explain=false`` or another parameter, never."""
    import asyncio
    import time

    from dedup_hbase import open_store
    from dedup_hbase.index.index import Index
    from dedup_hbase.service.app import Dispatch, Exchange
    from dedup_hbase.service.handlers import DedupService
    from dedup_hbase.service.online import OnlineIndex

    index = Index.create(open_store(str(tmp_path / "idx"), create=True), 4, 3)
    service = DedupService(OnlineIndex(index))
    calls, real = [], service.explain
    service.explain = lambda docs, answers: calls.append([d.id for d in docs]) or real(docs, answers)
    body = json.dumps([{"id": "q", "text": BASE}], ensure_ascii=False).encode()

    async def ask(query: bytes) -> tuple[int, bytes]:
        done = asyncio.get_running_loop().create_future()
        Dispatch(service)(Exchange("POST", "/v1/check", query, [], body,
                                   lambda status, content, *_: done.set_result((status, content)), time.perf_counter()))
        return await done

    try:
        for query, explained in ((b"", False), (b"explain=false", False), (b"other=1", False), (b"explain=0", False),
                                 (b"explain=true", True), (b"explain=1", True)):
            calls.clear()
            status, content = asyncio.run(ask(query))
            assert status == 200 and calls == ([["q"]] if explained else []), (query, content)
            assert (b'"terms"' in content) == explained
    finally:
        service.threads.shutdown()
        index.store.close()
