"""An index with a confirmation (``init --k 6 --confirm T``): a match beyond 3 bits needs the
documents' second SimHash (their sketch) within T bits. Exact against a brute force on planted
structure (bodies at exactly 3, 4, k and k + 1 bits, sketches at exactly T and T + 1) on every
store, with a TTL, and over every signature and probe of news texts; the sketch in the document
row; load --skip-near-dups and the service decide as a lookup does; what does not take it says so."""

import gzip
import json
import random
import re
import subprocess

import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.errors import IndexOutdated, InvalidInput
from dedup_hbase.index.confirm import CONFIRMED_BEYOND
from dedup_hbase.index.layout import cell_qualifier, split_qualifier
from dedup_hbase.stores.memory import MemoryStore

K, T = 6, 10
NO_SHORT = ("--short-texts", "off")  # the CLI's indexes here: the confirmation alone (the rule: test_short_index.py)


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed: int):
    """Queries (simhash, sketch) and documents around them: per query, bodies at 0 .. k + 1
    bits, each with a sketch at T and at T + 1 bits from the query's; and random documents."""
    rnd = random.Random(seed)
    queries = [(rnd.getrandbits(64), rnd.getrandbits(64)) for _ in range(40)]
    docs = [Document(f"r{i}", rnd.getrandbits(64), {}, (), rnd.getrandbits(64)) for i in range(300)]
    for q, (simhash, sketch) in enumerate(queries):
        for d in range(K + 2):
            for s in (T, T + 1):
                docs.append(Document(f"q{q}-d{d}-s{s}", flip(simhash, d, rnd), {}, (), flip(sketch, s, rnd)))
    rnd.shuffle(docs)
    return queries, docs


def brute(queries, docs, k=K, allowed=T):
    return [sorted(((doc.simhash ^ simhash).bit_count(), doc.id) for doc in docs
                   if (doc.simhash ^ simhash).bit_count() <= CONFIRMED_BEYOND
                   or ((doc.simhash ^ simhash).bit_count() <= k and (doc.sketch ^ sketch).bit_count() <= allowed))
            for simhash, sketch in queries]


def test_lookups_are_the_brute_force_on_every_store(store_url):
    queries, docs = planted(3)
    with open_store(store_url, create=True) as store:
        index = Index.create(store, "7/1", K, confirm=T)
        index.write(docs)
        got = index.query_many([s for s, _ in queries], sketches=[c for _, c in queries])
        expected = brute(queries, docs)
        assert [sorted((m.distance, m.id) for m in found) for found in got] == expected
        assert [found.total for found in got] == [len(e) for e in expected]
        assert all(any(d > CONFIRMED_BEYOND for d, _ in e) for e in expected)  # the confirmed are there
        one = index.query_many([s for s, _ in queries], max_matches=1, sketches=[c for _, c in queries])
        assert [(m[0].distance, m[0].id, m.total) for m in one] == [(*e[0], len(e)) for e in expected]
        within = index.query_many([s for s, _ in queries], k=3)  # no confirmation within 3 bits: no sketch asked
        assert [sorted((m.distance, m.id) for m in f) for f in within] == \
            [[(d, i) for d, i in e if d <= 3] for e in expected]
        (stored,) = index.get([docs[0].id])
        assert (stored.simhash, stored.sketch) == (docs[0].simhash, docs[0].sketch)
        assert Index.open(store).confirm == T


def test_a_cells_column_is_the_escaped_id_and_the_sketch_in_id_order():
    """Bit-exact qualifiers (an id with a 0x00 byte escaped; a short text's kept text after the
    sketch), their inverse, and qualifiers that sort as their ids do (ids that are prefixes of
    each other, zero bytes, high bytes)."""
    assert cell_qualifier(b"a\x00b", 0x0102030405060708) == b"a\x00\xffb\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08"
    assert cell_qualifier(b"doc1", (1 << 64) - 1) == b"doc1\x00\x00" + b"\xff" * 8
    rnd = random.Random(6)
    alphabet = ["a", "b", "\x00", "\x01", "\u00ff", "\u4e2d", "1", "10"]
    ids = {"".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 5))) for _ in range(3000)}
    kept = [b"", "李希在湖南调研".encode(), b"\x00\x00a", b"\xff"]  # a short text's kept text after the sketch
    cells = {i: cell_qualifier(i.encode(), rnd.getrandbits(64), rnd.choice(kept)) for i in ids}
    assert sorted(ids, key=str.encode) == sorted(ids, key=cells.get)
    for i, qualifier in cells.items():
        raw, sketch, text = split_qualifier(qualifier)
        assert raw == i.encode() and cell_qualifier(raw, sketch, text) == qualifier
    assert cell_qualifier(b"a", 1, "春".encode()) == b"a\x00\x00" + b"\x00" * 7 + b"\x01" + "春".encode()


def test_lookups_read_nothing_but_the_scan_and_a_rewrite_retires_its_old_sketch():
    """Without a TTL a lookup that confirms reads no document row (the sketches are in the
    cells); a document written again with the same simhash and another sketch leaves one cell
    per row key (the old one deleted); an index made before the sketches were in the cells is
    refused in one line."""
    queries, docs = planted(5)
    index = Index.create(MemoryStore(), "7/1", K, confirm=T)
    index.write(docs)
    reads = []
    index.store.get = lambda table, keys, get=index.store.get: reads.append(table) or get(table, keys)
    got = index.query_many([s for s, _ in queries], sketches=[c for _, c in queries])
    assert [sorted((m.distance, m.id) for m in f) for f in got] == brute(queries, docs) and reads == []
    del index.store.get
    first = docs[0]
    index.write([Document(first.id, first.simhash, {}, (), first.sketch ^ 0xFFFF)])
    columns = [key[13:] for key, _ in index.store.iterate("index") if split_qualifier(key[13:])[0] == first.id.encode()]
    assert columns == [cell_qualifier(first.id.encode(), first.sketch ^ 0xFFFF)] * len(index.scheme.flags)
    config = json.loads(index.store.get("meta", [b"config"])[0])
    del config["sketches"]
    index.store.put("meta", [(b"config", json.dumps(config).encode())])
    with pytest.raises(IndexOutdated, match=re.escape("keeps its sketches in its document rows alone (made by an "
                                                      "earlier dedup-hbase): make it again with the same options")):
        Index.open(index.store)


def test_a_ttl_reads_the_metadata_after_the_sketch():
    import time

    queries, docs = planted(4)
    now = int(time.time())
    aged = [Document(d.id, d.simhash, {"loaded": now - 7200 if i % 2 else now}, (), d.sketch) for i, d in enumerate(docs)]
    index = Index.create(MemoryStore(), "7/1", K, ttl=3600, confirm=T)
    index.write(aged)
    alive = [d for d in aged if d.meta["loaded"] == now]
    reads = []
    index.store.get = lambda table, keys, get=index.store.get: reads.append(table) or get(table, keys)
    got = index.query_many([s for s, _ in queries], sketches=[c for _, c in queries])
    assert [sorted((m.distance, m.id) for m in f) for f in got] == brute(queries, alive)
    assert reads == ["docs"]  # the expiry's read of the document rows; the sketches come with the cells
    assert index.get([aged[1].id])[0].meta == {"loaded": now - 7200}


def test_what_a_confirmation_refuses():
    """The library names its arguments (``confirm=``), the CLI the flags (command.as_flags)."""
    from dedup_hbase.cli.command import as_flags

    for kwargs, message, flags in (
            ({"k": 3, "confirm": 8}, "confirm= confirms matches beyond 3 bits: give k= above 3 "
                                     "(such as k=8 confirm=14) or probes=, not k=3 alone",
             "--confirm confirms matches beyond 3 bits: give --k above 3 (such as --k 8 --confirm 14) or --probes, "
             "not --k 3 alone"),
            ({"k": 6, "confirm": 65}, "confirm= is the bits two sketches may differ in, 0 to 64, not 65",
             "--confirm is the bits two sketches may differ in, 0 to 64, not 65")):
        with pytest.raises(InvalidInput) as refused:
            Index.create(MemoryStore(), None if kwargs["k"] == 3 else "7/1", **kwargs)
        assert (str(refused.value), as_flags(refused.value)) == (message, flags)
    index = Index.create(MemoryStore(), "7/1", K, confirm=T)
    with pytest.raises(InvalidInput, match="this index confirms matches beyond 3 bits by a sketch of the text"):
        index.query_many([1])
    with pytest.raises(InvalidInput, match=r"document 'a': this index confirms matches by a sketch of each document"):
        index.write([Document("b", 2, sketch=3), Document("a", 1)])
    assert index.get(["b"]) == [None] and not list(index.store.iterate("index"))  # nothing written
    plain = Index.create(MemoryStore(), "7/1", K)
    with pytest.raises(InvalidInput, match=r"document 'a': this index keeps no sketch \(made without confirm=\)"):
        plain.write([Document("a", 1, sketch=2)])
    with pytest.raises(InvalidInput, match="this index keeps no sketch"):
        plain.query_many([1], sketches=[2])


@pytest.fixture(scope="module")
def news(xwlb_path):
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(600), f)]
    from dedup_hbase.report.copies import Copier, edit_characters

    rnd = random.Random(13)
    copier = Copier("zh", edit_characters(texts, rnd))
    copies = ([copier.edit3(rnd, t) for t in texts[:150]] + [t[:len(t) // 2] for t in texts[150:200]]
              + [copier.edit1(rnd, t) for t in texts[200:250]] + texts[500:600])
    return texts[:500], copies


def parts(index: Index, text: str):
    body = index.fingerprint(text)
    return [body, *index.more_signatures(text, body)], index.probe_masks(text), index.sketched(text)[0]


def expected_checks(index: Index, originals, copies, names):
    """Per copy, its matches among the originals, the slow way: per signature the nearest of its
    simhash and probes within k, kept within 3 bits or when the sketches are within T; the
    match at its nearest kept signature (the first on a tie), at the distance from the copy's
    own simhash of that signature."""
    indexed = [parts(index, t) for t in originals]
    out = {}
    for c, copy in enumerate(copies):
        (simhashes, masks, sketch), found = parts(index, copy), []
        for o, (others, _, their) in enumerate(indexed):
            kept = []
            for place, (s, other) in enumerate(zip(simhashes, others)):
                flips = masks[place] if place < len(masks) else ()
                if any((other ^ q).bit_count() <= index.k for q in (s, *(s ^ m for m in flips))):
                    d = (other ^ s).bit_count()
                    if d <= CONFIRMED_BEYOND or (sketch ^ their).bit_count() <= T:
                        kept.append((d, place))
            if kept:
                d, place = min(kept)
                found.append((d, f"o{o}", names[place]))
        out[f"c{c}"] = sorted(found)
    return out


@pytest.mark.parametrize("signatures, probes, k", [("body", None, K), ("body,lead150", "8,1", K),
                                                 ("body,lead150", "8,1", 3)])
def test_a_check_of_texts_is_the_brute_force_over_every_signature_and_probe(tmp_path, news, signatures, probes, k):
    originals, copies = news
    store = str(tmp_path / "index")
    data, asked = tmp_path / "originals.jsonl", tmp_path / "copies.jsonl"
    data.write_text("".join(json.dumps({"id": f"o{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(originals)), encoding="utf-8")
    asked.write_text("".join(json.dumps({"id": f"c{i}", "text": t}, ensure_ascii=False) + "\n"
                             for i, t in enumerate(copies)), encoding="utf-8")
    init = ["--signatures", signatures] + (["--probes", probes] if probes else [])
    run("--store", store, "init", "--k", str(k), *(["--scheme", "7/1"] if k > 3 else []), "--confirm", str(T), *init, *NO_SHORT)
    run("--store", store, "load", str(data))
    answers = [json.loads(line) for line in run("--store", store, "check", str(asked), "--json").stdout.splitlines()]
    with open_store(store) as opened:
        index = Index.open(opened)
        names = index.signatures.names
        expected = expected_checks(index, originals, copies, names)
    got = {a["id"]: sorted((m["distance"], m["id"], m.get("signature", "body")) for m in a["matches"]) for a in answers}
    assert got == expected
    confirmed = sum(d > CONFIRMED_BEYOND for found in expected.values() for d, _, _ in found)
    assert confirmed >= (30 if k > 3 else 3), confirmed  # the confirmation is what the test compares (k = 3: probes)


def run(*args, check=True):
    done = subprocess.run(["dedup-hbase", *args], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_skip_near_dups_and_the_service_decide_as_a_lookup(tmp_path, news):
    """load --skip-near-dups in one batch and the service's insert-if-new leave out exactly the
    documents a lookup of which finds an earlier one (sketches confirming beyond 3 bits)."""
    from test_service import serving

    originals, copies = news
    texts = originals[:200] + copies[:200]
    random.Random(2).shuffle(texts)
    index = Index.create(MemoryStore(), "7/1", K, confirm=T)
    facts = [parts(index, t) for t in texts]
    expected = []
    for j, (simhashes, _, sketch) in enumerate(facts):
        expected.append(not any((other[0] ^ simhashes[0]).bit_count() <= CONFIRMED_BEYOND
                                or ((other[0] ^ simhashes[0]).bit_count() <= K and (their ^ sketch).bit_count() <= T)
                                for other, _, their in facts[:j]))
    assert 20 <= expected.count(False) < len(texts)
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{j}", "text": t}, ensure_ascii=False) + "\n"
                            for j, t in enumerate(texts)), encoding="utf-8")
    store = str(tmp_path / "index")
    run("--store", store, "init", "--k", str(K), "--scheme", "7/1", "--confirm", str(T), *NO_SHORT)
    report = json.loads(run("--store", store, "load", str(data), "--skip-near-dups", "--json").stdout)
    assert report["near_duplicates_skipped"] == expected.count(False)
    groups = tmp_path / "g.jsonl"
    run("--store", str(tmp_path / "grouped"), "init", "--k", str(K), "--scheme", "7/1", "--confirm", str(T), *NO_SHORT)
    run("--store", str(tmp_path / "grouped"), "load", str(data), "--groups", str(groups))
    got = {frozenset(json.loads(line)["ids"]) for line in groups.read_text(encoding="utf-8").splitlines()}
    assert got == components([(simhashes[0], sketch) for simhashes, _, sketch in facts], [f"d{j}" for j in
                                                                                          range(len(texts))])
    served = str(tmp_path / "served")
    run("--store", served, "init", "--k", str(K), "--scheme", "7/1", "--confirm", str(T), *NO_SHORT)
    with serving(served) as (client, _):
        answer = client.post("/v1/add?if_new=true", json=[{"id": f"d{j}", "text": t} for j, t in enumerate(texts)])
        assert answer.status_code == 200
        assert [a["added"] for a in answer.json()] == expected
        simhash = client.post("/v1/check", json=[{"id": "x", "simhash": "00000000000000ff"}])
        assert simhash.status_code == 400 and simhash.json()["error"] == (
            f"document 0 ('x'): this index looks up a confirmation (sketches within {T} bits): give the document's text, "
            "not its simhash")
        checked = client.post("/v1/check", json=[{"id": f"c{j}", "text": t} for j, t in enumerate(copies[:100])])
    local = [json.loads(line) for line in run("--store", served, "check", str(write_lines(tmp_path, copies[:100])),
                                                "--json").stdout.splitlines()]
    assert checked.json() == local


def write_lines(tmp_path, texts):
    path = tmp_path / "copies.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{j}", "text": t}, ensure_ascii=False) + "\n"
                            for j, t in enumerate(texts)), encoding="utf-8")
    return path


def test_precomputed_fingerprints_are_refused_by_both_engines(tmp_path):
    store = str(tmp_path / "index")
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "a", "simhash": "00000000000000ff"}) + "\n")
    run("--store", store, "init", "--k", str(K), "--scheme", "7/1", "--confirm", str(T), *NO_SHORT)
    for args, message in ((("load", str(data), "--engine", "spark", "--fingerprints"),
                           f"an index with a confirmation (sketches within {T} bits) fingerprints the texts themselves"),
                          (("load", str(data), "--fingerprints"),
                           f"an index with a confirmation (sketches within {T} bits) fingerprints the texts themselves"),
                          (("query", "--simhash", "00000000000000ff"),
                           "this index confirms matches beyond 3 bits by a sketch of the text")):
        done = run("--store", store, *args, check=False)
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)


@pytest.mark.parametrize("native", [True, False])
def test_a_load_makes_the_sketches_on_its_workers(tmp_path, news, native):
    """Two fingerprinting workers (threads with the compiled core, processes on the Python path):
    every document row holds the sketch ``Index.sketched`` makes of its text."""
    from dedup_hbase.jobs.local.load import load_files
    from dedup_hbase.jobs.options import LoadOptions
    from dedup_hbase.text.fingerprint import fingerprinter_from_spec, make_fingerprinter

    texts = news[0][:120]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{j}", "text": t}, ensure_ascii=False) + "\n"
                            for j, t in enumerate(texts)), encoding="utf-8")
    fingerprinter = fingerprinter_from_spec(make_fingerprinter().spec, native=native)
    with open_store(str(tmp_path / "index"), create=True) as store:
        index = Index.create(store, "7/1", K, fingerprinter, confirm=T)
        report = load_files(index, [str(data)], LoadOptions(workers=2, batch_size=16))
        stored = index.get([f"d{j}" for j in range(len(texts))])
    assert report.indexed == len(texts)
    assert [d.sketch for d in stored] == [index.sketched(t)[0] for t in texts]
    assert all(d.sketch != d.simhash for d in stored)


def finds(query: tuple[int, int], found: tuple[int, int], k: int = K) -> bool:
    """Whether a lookup of (simhash, sketch) ``query`` finds ``found``: within 3 bits, or within
    k bits with the sketches within T."""
    d = (query[0] ^ found[0]).bit_count()
    return d <= CONFIRMED_BEYOND or (d <= k and (query[1] ^ found[1]).bit_count() <= T)


def components(facts: list[tuple[int, int]], ids: list[str], indexed: int = 0) -> set[frozenset]:
    """The groups of a load of ``facts`` (simhash, sketch) after the first ``indexed`` of them
    were indexed before: the components (of more than one id) of "a lookup of j finds i", i
    indexed before or earlier in the load, by brute force."""
    root = list(range(len(facts)))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for j in range(indexed, len(facts)):
        for i in range(j):
            if finds(facts[j], facts[i]):
                root[find(i)] = find(j)
    members: dict[int, set] = {}
    for j, doc_id in enumerate(ids):
        members.setdefault(find(j), set()).add(doc_id)
    return {frozenset(m) for m in members.values() if len(m) > 1}


@pytest.mark.parametrize("batch_size", [7, 1000])
def test_groups_of_a_load_are_the_components_of_what_the_confirmed_lookups_find(batch_size):
    """load --groups into an index with a confirmation, on planted structure: an indexed
    fingerprint 5 bits from a query's with four documents, two of whose sketches the query's
    confirms and two another query's (of the same simhash): each query's run is cut to its two
    (the groups still hold all four, chained as they are found); later documents at 5 bits with
    sketches inside and outside T. The groups are the brute force's components."""
    import io

    from dedup_hbase.jobs.corpus import Record
    from dedup_hbase.jobs.local.load import near_duplicates

    rnd = random.Random(17)
    indexed, batch = [], []
    for f in range(25):
        simhash, sketch = rnd.getrandbits(64), rnd.getrandbits(64)
        near, other = flip(simhash, 5, rnd), flip(sketch, 30, rnd)
        indexed += [(f"a{f}-{m}", near, flip(sketch if m < 2 else other, T if m % 2 else 1, rnd)) for m in range(4)]
        batch += [(f"q{f}", simhash, sketch), (f"r{f}", simhash, other)]
        batch += [(f"s{f}-{m}", flip(simhash, rnd.choice((4, 5, 6, 7)), rnd), flip(sketch, rnd.choice((T, T + 1)), rnd))
                  for m in range(3)]
    batch += [(f"x{i}", rnd.getrandbits(64), rnd.getrandbits(64)) for i in range(40)]
    rnd.shuffle(batch)
    index = Index.create(MemoryStore(), "7/1", K, confirm=T)
    index.write([Document(i, s, {}, (), sk) for i, s, sk in indexed])
    edges, chained = io.StringIO(), {}
    for start in range(0, len(batch), batch_size):
        records = [Record("in", n, i, "text", s, sketch=sk) for n, (i, s, sk) in enumerate(batch[start:start + batch_size])]
        near_duplicates(index, records, edges, chained)
        index.write([Document(r.id, r.simhash, {}, (), r.sketch) for r in records])
    from dedup_hbase.jobs.local.components import id_groups

    got = {frozenset(g) for g in id_groups(tuple(json.loads(line)) for line in edges.getvalue().splitlines())}
    everything = indexed + batch
    expected = components([(s, sk) for _, s, sk in everything], [i for i, _, _ in everything], len(indexed))
    assert got == expected
    assert sum(any(i.startswith("a") for i in g) for g in expected) == 25 and len(expected) >= 25
