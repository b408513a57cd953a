"""The service over an index of several signatures with probes (``init --signatures body,lead150
--probes 8,1``), a real `dedup-hbase serve` process and a real HTTP client: its checks are
`check --json`'s records; an insert-if-new adds a document exactly when a lookup of it finds
nothing indexed and no earlier document of its request (a brute force over every signature and
probe), also under concurrent clients on both stores (a lead near-duplicate locks the lead's
scan prefixes, here and across servers); a document given by its simhash is refused (400)."""

import gzip
import json
import random
import threading

import httpx
import pytest
from test_service import cli, run_clients, serving

from dedup_hbase import Index, open_store
from dedup_hbase.stores.memory import MemoryStore

K = 3
# the short-text rule off: ``finds``, the brute force, is of the signatures and probes alone (a quarter of a text
# can be under 200 characters; the rule has tests of its own: test_short_index.py)
OPTIONS = ("--signatures", "body,lead150", "--probes", "8,1", "--short-texts", "off")


@pytest.fixture(scope="module")
def families(xwlb_path):
    """60 news texts, each with its first half and the first half of that (what the lead finds,
    the body mostly not): families no lookup of one finds another of, checked here."""
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(2000), f)]
    rnd = random.Random(31)
    chosen = [t for t in rnd.sample(texts, 200) if len(t) > 600][:60]
    return [[t, t[:len(t) // 2], t[:len(t) // 4]] for t in chosen]


def signed_parts(texts: list[str]) -> list[tuple[list[int], tuple]]:
    """Per text, every signature's simhash and the probes' bits, as the index makes them."""
    index = Index.create(MemoryStore(), 4, K, signatures="body,lead150", probes="8,1")
    out = []
    for text in texts:
        body = index.fingerprint(text)
        out.append(([body, *index.more_signatures(text, body)], index.probe_masks(text)))
    return out


def finds(query: tuple[list[int], tuple], indexed: tuple[list[int], tuple]) -> bool:
    """Whether a lookup of ``query`` finds ``indexed``: under some signature, within K bits of
    the query's simhash or of one of its probes."""
    (simhashes, masks), (others, _) = query, indexed
    return any((o ^ q).bit_count() <= K
               for s, o, flips in zip(simhashes, others, masks) for q in (s, *(s ^ m for m in flips)))


def test_families_are_apart_and_whole(families):
    parts = signed_parts([t for family in families for t in family])
    for a in range(len(parts)):
        for b in range(len(parts)):
            if a // 3 != b // 3:
                assert not finds(parts[a], parts[b]), (a, b)
    # within a family the lead finds every member from every other
    whole = sum(all(finds(parts[3 * f + i], parts[3 * f + j]) for i in range(3) for j in range(3))
                for f in range(len(families)))
    assert whole >= 50, whole


def test_checks_are_check_json_and_a_simhash_is_refused(tmp_path, families):
    store = str(tmp_path / "index")
    corpus, queries = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"f{f}", "text": family[0]}, ensure_ascii=False) + "\n"
                              for f, family in enumerate(families[:40])), encoding="utf-8")
    asked = [{"id": f"q{f}-{m}", "text": family[m]} for f, family in enumerate(families) for m in (1, 2)]
    queries.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in asked), encoding="utf-8")
    cli("init", "--store", store, *OPTIONS)
    cli("load", "--store", store, str(corpus), "-q")
    expected = [json.loads(line) for line in cli("check", "--store", store, str(queries), "--json").splitlines()]
    assert sum(any(m.get("signature") == "lead150" for m in e["matches"]) for e in expected) >= 60
    with serving(store) as (client, _):
        got = client.post("/v1/check", json=asked)
        assert got.status_code == 200 and got.json() == expected
        refused = client.post("/v1/check", json=[asked[0], {"id": "h", "simhash": expected[0]["simhash"]}])
        assert refused.status_code == 400
        assert refused.json()["error"] == ("document 1 ('h'): this index looks up signatures "
                                           "body,lead150: give the document's text, not its simhash")
        explained = client.post("/v1/check?explain=true", json=asked[:2]).json()
        parts = signed_parts([asked[0]["text"]])[0][0]
        for match in explained[0]["matches"]:
            own = parts[("body", "lead150").index(match["signature"])]
            assert len(match["differing_bits"]) == (own ^ int(match["simhash"], 16)).bit_count()
        assert client.post("/v1/check", json=asked[:1]).json() == expected[:1]  # still answering


def expected_adds(requests: list[list[int]], parts) -> list[list[bool]]:
    """Per request (positions into ``parts``), per document: added or not, the slow way."""
    indexed, out = [], []
    for request in requests:
        answer = []
        for n, j in enumerate(request):
            found = any(finds(parts[j], parts[i]) for i in indexed + request[:n])
            answer.append(not found)
        indexed += [j for j, added in zip(request, answer) if added]
        out.append(answer)
    return out


def test_if_new_adds_what_a_lookup_does_not_find(tmp_path, families):
    store = str(tmp_path / "index")
    texts = [t for family in families[:30] for t in family]
    parts = signed_parts(texts)
    rnd = random.Random(5)
    order = list(range(len(texts)))
    rnd.shuffle(order)
    requests = [order[i:i + 9] for i in range(0, len(order), 9)]
    cli("init", "--store", store, *OPTIONS)
    with serving(store) as (client, _):
        got = []
        for request in requests:
            response = client.post("/v1/add?if_new=true", json=[{"id": f"d{j}", "text": texts[j]} for j in request])
            assert response.status_code == 200, response.text
            got.append(response.json())
        assert [[a["added"] for a in answer] for answer in got] == expected_adds(requests, parts)
        named = [m["signature"] for answer in got for a in answer for m in a["matches"]]
        assert named.count("lead150") >= 30 and set(named) <= {"body", "lead150"}
        for answer in got:
            for a in answer:  # a refused document names members of its own family only
                assert a["added"] or {int(m["id"][1:]) // 3 for m in a["matches"]} == {int(a["id"][1:]) // 3}


def test_if_new_under_concurrent_clients_adds_each_family_once(store_url, families):
    texts = [t for family in families[:40] for t in family]
    whole = signed_parts(texts)
    complete = [f for f in range(40) if all(finds(whole[3 * f + i], whole[3 * f + j])
                                            for i in range(3) for j in range(3))]
    cli("init", "--store", store_url, *OPTIONS)
    with serving(store_url) as (client, _):
        answers, lock = [], threading.Lock()

        def client_thread(seed: int) -> None:
            rnd = random.Random(seed)
            with httpx.Client(base_url=str(client.base_url), timeout=120) as mine:
                for _ in range(6):  # overlapping batches: members of one family from several threads
                    batch = [{"id": f"d{j}", "text": texts[j]} for j in rnd.sample(range(len(texts)), 8)]
                    response = mine.post("/v1/add?if_new=true", json=batch)
                    assert response.status_code == 200, response.text
                    with lock:
                        answers.extend(response.json())

        run_clients(client_thread, 6)
        final = client.post("/v1/add?if_new=true", json=[{"id": f"d{j}", "text": t} for j, t in enumerate(texts)])
        assert final.status_code == 200
        answers += final.json()
        added = [int(a["id"][1:]) for a in answers if a["added"]]
        assert not any(a["added"] for a in final.json())
        families_added = [j // 3 for j in added]
        for f in complete:  # a family whose members all find each other: added once, no more
            assert families_added.count(f) == 1, (f, families_added)
        assert sorted(set(families_added)) == list(range(40))
        assert client.get("/v1/stats").status_code == 200
    with open_store(store_url) as store:
        assert Index.open(store).stats()["documents"] == len(added)
