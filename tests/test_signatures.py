"""An index of several signatures (``init --signatures body,lead150``): the row keys of each
signature under its own flags, lookups exact against brute force over every signature on
planted structure (memory, embedded and HBase stores), rewrites and deletes of every
signature's rows, the signatures recorded and refused on a mismatch, and the commands."""

import json
import random
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup_hbase import Document, open_store
from dedup_hbase.errors import IndexMismatch, InvalidInput
from dedup_hbase.index.index import Index
from dedup_hbase.index.layout import Scheme
from dedup_hbase.stores.memory import MemoryStore
from dedup_hbase.text.boilerplate import body_text
from dedup_hbase.text.fingerprint import hamming, make_fingerprinter, to_hex
from dedup_hbase.text.signatures import Signatures

from conftest import shared_texts

K = 3
NAMES = ("body", "lead150")


def flip(value, bits, rnd):
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def far(value, rnd):
    """A fingerprint more than 2k bits from ``value``."""
    while True:
        other = rnd.getrandbits(64)
        if hamming(other, value) > 2 * K + 1:
            return other


def planted(seed):
    """(id -> (body, lead) simhashes; queries as (body, lead)): exact copies, copies that keep
    the lead alone (a lost end) or the body alone, both near (the lead nearer; a tie), pairs at
    exactly k and k + 1 bits under each signature, a chain of one-bit steps in the lead, noise."""
    rnd = random.Random(seed)
    body, lead = rnd.getrandbits(64), rnd.getrandbits(64)
    docs = {f"copy-{n:02}": (body, lead) for n in range(30)}
    docs.update({f"lostend-{n}": (far(body, rnd), flip(lead, n % 3, rnd)) for n in range(6)})
    docs.update({f"bodyonly-{n}": (flip(body, 1 + n % 3, rnd), far(lead, rnd)) for n in range(6)})
    docs["leadnearer"] = (flip(body, 3, rnd), flip(lead, 1, rnd))
    docs["tie"] = (flip(body, 2, rnd), flip(lead, 2, rnd))
    queries = [(body, lead)]
    for name in NAMES:
        b, a = rnd.getrandbits(64), rnd.getrandbits(64)
        queries.append((b, a))
        for bits in (K, K + 1):
            docs[f"{name}-at-{bits}"] = ((flip(b, bits, rnd), far(a, rnd)) if name == "body"
                                         else (far(b, rnd), flip(a, bits, rnd)))
    step_body, step = rnd.getrandbits(64), rnd.getrandbits(64)
    queries.append((far(step_body, rnd), step))
    for n in range(8):
        step = flip(step, 1, rnd)
        docs[f"chain-{n}"] = (rnd.getrandbits(64), step)
    docs.update({f"noise-{n}": (rnd.getrandbits(64), rnd.getrandbits(64)) for n in range(150)})
    queries += [(flip(body, 2, rnd), flip(lead, 3, rnd)), (far(body, rnd), flip(lead, 1, rnd))]
    queries += [(rnd.getrandbits(64), rnd.getrandbits(64)) for _ in range(40)]
    return docs, queries


def brute_force(docs, query, k=K, masks=()):
    """Every id within k bits under some signature, or within k of a probe (the signature's
    query with the bits of one of its ``masks`` flipped), as (distance, id, simhash, signature):
    at its nearest signature by the distance from the query itself, the body on a tie; by
    (distance, id)."""
    found = []
    for doc_id, sims in docs.items():
        near = [(hamming(s, q), j) for j, (s, q) in enumerate(zip(sims, query))
                if hamming(s, q) <= k or any(hamming(s, q ^ m) <= k for m in (masks[j] if j < len(masks) else ()))]
        if near:
            d, j = min(near)
            found.append((d, doc_id, sims[j], NAMES[j]))
    return sorted(found)


def write(index, docs):
    index.add_many([Document(i, sims[0], {}, sims[1:]) for i, sims in docs.items()])


def assert_exact(index, docs, queries, k=K, probes=None):
    bodies, mores = [q[0] for q in queries], [q[1:] for q in queries]
    for limit in (None, 5):
        answers = index.query_many(bodies, k, limit, mores, probes)
        for n, (query, matches) in enumerate(zip(queries, answers)):
            expected = brute_force(docs, query, k, probes[n] if probes else ())
            got = [(m.distance, m.id, m.simhash, m.signature) for m in matches]
            assert got == expected[:limit], query
            assert matches.total == len(expected)


# -- the layout ----------------------------------------------------------------------------------

def test_each_signature_has_its_own_flags_in_the_row_key():
    s = 0x0123456789ABCDEF
    lead = Scheme(4, 1).for_signature(1)
    assert lead.row_keys(s) == [struct.pack(">IBQ", (s >> shift & 0xFFFF) << 16, flag, s)
                                for shift, flag in ((48, 17), (32, 18), (16, 19), (0, 20))]
    assert [k[:5] for k in lead.row_keys(s)] == lead.prefixes(s)
    assert lead.key_table([s, s + 1])[:13] == lead.row_keys(s)[0]
    assert lead.prefix_ids([s])[0].tolist() == [int.from_bytes(p, "big") for p in lead.prefixes(s)]
    assert list(Scheme(5, 2).for_signature(1).flag_bytes) == list(range(17, 27))
    assert list(Scheme.parse("6/2").for_signature(2).flag_bytes) == list(range(33, 48))
    with pytest.raises(InvalidInput, match="scheme 7/3 has 35 flags; an index with several signatures takes"):
        Scheme.parse("7/3").for_signature(1)


@pytest.mark.parametrize("text, message", [
    ("lead150", "the signatures start with body, not lead150"),
    ("body,lead0", "unknown signature 'lead0'"),
    ("body,tail", "unknown signature 'tail': body, or leadN"),
    ("body,lead150,lead150", "a signature is named twice in body,lead150,lead150"),
    ("body,lead1,lead2,lead3,lead4", "at most 4 signatures, not 5"),
])
def test_bad_signatures_are_refused_with_what_is_wrong(text, message):
    with pytest.raises(InvalidInput, match=message):
        Signatures.parse(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["下载 app 扫码关注", "阅读 12", "", " ", "央视网消息：国务院总理今天主持召开会议。",
                                 "a" * 40, "The quick brown fox jumps over the lazy dog", "\udc80", "x\n", "版权所有"]),
                max_size=12), st.integers(1, 200))
def test_a_lead_read_lazily_is_the_bodys_first_characters(parts, chars):
    """``lead_text`` (the kept lines up to ``chars``, judged by the core's rule or the reference's)
    is ``body_text(text, join=False)[:chars]`` on random lines, blank lines and lone surrogates."""
    from dedup_hbase.text.boilerplate import boilerplate_reason, lead_text
    from dedup_hbase.text.native import line_rule

    text = "\n".join(parts)
    want = body_text(text, join=False)[:chars]
    assert lead_text(text, chars, boilerplate_reason) == want == lead_text(text, chars, line_rule())


def test_a_lead_is_the_first_characters_of_the_body_of_every_shared_document(xwlb_path, jargon_path):
    from dedup_hbase.text.boilerplate import lead_text
    from dedup_hbase.text.native import line_rule

    rule = line_rule()
    for path in (xwlb_path, jargon_path):
        for text in shared_texts(path)[::5]:
            body = body_text(text, join=False)
            for chars in (1, 150, 151, 600):
                assert lead_text(text, chars, rule) == body[:chars]


def test_a_lead_is_the_first_characters_of_the_body_without_boilerplate():
    text = "首页 | 新闻 | 登录\n" + "央视网消息：国务院总理今天主持召开国务院常务会议。" * 20
    (lead,) = Signatures.parse("body,lead30").extra_texts(text)
    assert lead == body_text(text, join=False)[:30] and lead.startswith("央视网消息") and len(lead) == 30


# -- lookups against brute force -------------------------------------------------------------------

def test_lookups_are_brute_force_over_every_signature_in_memory():
    docs, queries = planted(1)
    index = Index.create(MemoryStore(), signatures="body,lead150")
    write(index, docs)
    assert_exact(index, docs, queries)
    assert_exact(index, docs, queries, k=1)
    stats = index.stats()
    assert stats["index_rows"] == 4 * len({b for b, _ in docs.values()}) + 4 * len({a for _, a in docs.values()})
    assert stats["index_cells"] == 8 * len(docs) and stats["signatures"] == list(NAMES)
    assert sorted(stats["rows_per_flag"]) == sorted(map(str, (1, 2, 3, 4, 17, 18, 19, 20)))


def test_lookups_are_brute_force_over_every_signature_on_each_store(store_url):
    docs, queries = planted(2)
    with open_store(store_url) as store:
        index = Index.create(store, signatures="body,lead150")
        write(index, docs)
        store.flush()
        assert_exact(index, docs, queries)
        again = Index.open(store)
        assert again.signatures == Signatures(NAMES)
        assert again.get(["lostend-1"])[0].more == (docs["lostend-1"][1],)


def test_probes_find_what_is_within_k_of_the_query_with_an_unsure_bit_flipped(store_url):
    """Planted around each query: documents at k + 1 bits whose extra bit is a probed one (found,
    at k + 1) or not (not found), at k + 2 with two probed bits (not found), under each signature;
    every lookup equal to brute force over the signatures and their probes."""
    docs, queries = planted(3)
    rnd = random.Random(4)
    probes = []
    for n, query in enumerate(queries[:12]):
        masks = tuple(tuple(1 << b for b in rnd.sample(range(64), count)) for count in (8, 4))
        probes.append(masks)
        for j, name in enumerate(NAMES):
            free = [b for b in range(64) if 1 << b not in masks[j]]
            for label, bits in (("probed", [masks[j][0].bit_length() - 1, *rnd.sample(free, K)]),
                                ("unprobed", rnd.sample(free, K + 1)),
                                ("twoprobed", [masks[j][0].bit_length() - 1, masks[j][1].bit_length() - 1,
                                               *rnd.sample(free, K)])):
                near = query[j]
                for b in bits:
                    near ^= 1 << b
                other = far(query[1 - j], rnd)
                docs[f"q{n}-{name}-{label}"] = (near, other) if j == 0 else (other, near)
    probes += [((), ())] * (len(queries) - len(probes))
    with open_store(store_url) as store:
        index = Index.create(store, signatures="body,lead150", probes="8,4")
        write(index, docs)
        store.flush()
        assert_exact(index, docs, queries, probes=probes)
        found = index.query_many([q[0] for q in queries[:1]], None, None, [queries[0][1:]], probes[:1])[0]
        assert {m.id: m.distance for m in found if m.id.startswith("q0-")} == \
            {"q0-body-probed": K + 1, "q0-lead150-probed": K + 1}
        assert Index.read_config(store)["probes"] == [8, 4]


def test_probes_of_an_index_of_one_signature_keep_its_answers_plain():
    rnd = random.Random(5)
    docs = {f"d{n}": (rnd.getrandbits(64),) for n in range(50)}
    query = docs["d7"][0] ^ 0b1111  # 4 bits away: a probe of bit 0 finds it
    index = Index.create(MemoryStore(), probes=2)
    index.add_many([Document(i, s[0]) for i, s in docs.items()])
    assert index.query(query) == []
    assert index.query(query, probes=((1, 1 << 40),)) == [("d7", docs["d7"][0], 4, None)]
    assert repr(index.query(query, probes=((1,),))[0]) == f"Match(id='d7', simhash={docs['d7'][0]}, distance=4)"


@pytest.mark.parametrize("probes, message", [
    ("8,4,2", "3 probe counts for 2 signatures: give one per signature, the body's first"),
    ("65", "a probe count is a whole number from 0 to 64, not 65"),
    ("eight", "probes are whole numbers, one per signature"),
])
def test_bad_probe_counts_are_refused(probes, message):
    with pytest.raises(InvalidInput, match=message):
        Index.create(MemoryStore(), signatures="body,lead150", probes=probes)


def test_a_rewrite_and_a_delete_retire_every_signatures_rows():
    rnd = random.Random(3)
    docs = {f"d{n}": (rnd.getrandbits(64), rnd.getrandbits(64)) for n in range(20)}
    index = Index.create(MemoryStore(), signatures="body,lead150")
    write(index, docs)
    old = docs["d3"]
    docs["d3"] = (old[0], rnd.getrandbits(64))  # the same body, another lead: still replaced
    assert index.write([Document("d3", *docs["d3"][:1], {}, docs["d3"][1:])]) == (0, 1)
    assert index.query(old[0], 0, more=(old[1],)) == index.query(old[0], 0, more=docs["d3"][1:])
    assert [m.signature for m in index.query(old[0], 0, more=(old[1],))] == ["body"]
    assert index.query(flip(old[0], 12, rnd), 0, more=(old[1],)) == []
    assert index.delete(["d3", "nope"]) == ["d3"]
    assert index.stats()["index_cells"] == 8 * 19
    assert_exact(index, {i: s for i, s in docs.items() if i != "d3"}, list(docs.values()))


def test_a_document_needs_each_signature_and_a_query_may_give_the_body_alone():
    index = Index.create(MemoryStore(), signatures="body,lead150")
    with pytest.raises(InvalidInput, match="document 'a': this index keeps 2 signatures a document, so 1 more"):
        index.add_many([Document("a", 5)])
    with pytest.raises(InvalidInput, match="document 'b': this index keeps 1 signatures a document"):
        Index.create(MemoryStore()).add_many([Document("b", 5, {}, (6,))])
    index.add_many([Document("a", 5, {}, (1 << 40,))])
    assert index.query(5) == [("a", 5, 0, "body")]  # the body's rows alone
    assert index.query(1 << 63, more=(1 << 40,)) == [("a", 1 << 40, 0, "lead150")]
    with pytest.raises(InvalidInput, match="give 1 more simhashes for each query"):
        index.query_many([5], more=[()])


def test_an_index_with_a_ttl_reads_the_metadata_after_every_signature():
    index = Index.create(MemoryStore(), signatures="body,lead150", ttl=60)
    index.add_many([Document("old", 1, {"loaded": 1}, (2,)), Document("new", 1, {}, (2,))])
    assert [m.id for m in index.query(1, more=(2,))] == ["new"]
    assert index.get(["old"])[0].meta == {"loaded": 1}


# -- the signatures recorded with the index -------------------------------------------------------

def test_the_signatures_are_recorded_and_another_set_is_refused(tmp_path):
    with open_store(str(tmp_path / "ix")) as store:
        Index.create(store, signatures="body,lead150")
        assert Index.read_config(store)["signatures"] == ["body", "lead150"]
        with pytest.raises(IndexMismatch, match=r"was built with signatures body,lead150, not body,lead200: its rows"):
            Index.open(store, signatures="body,lead200")
        assert Index.open(store, signatures="body,lead150").signatures.label == "body,lead150"
    with open_store(str(tmp_path / "plain")) as store:
        Index.create(store)
        assert "signatures" not in Index.read_config(store)  # an index of one signature: as before
        with pytest.raises(IndexMismatch, match="was built with signatures body, not body,lead150"):
            Index.open(store, signatures="body,lead150")


# -- the commands ---------------------------------------------------------------------------------

def run(*args, check=True):
    done = subprocess.run(["dedup-hbase", *args], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def news(xwlb_path):
    """100 news texts of the shared corpus, and a copy of each: the first 20 without the second
    half of their text, the others with 1% of their characters edited (report/copies.py)."""
    import gzip

    from dedup_hbase.report.copies import Copier, edit_characters

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(100), f)]
    rnd = random.Random(6)
    copier = Copier("zh", edit_characters(texts, rnd))
    return texts, [t[:len(t) // 2] for t in texts[:20]] + [copier.edit1(rnd, t) for t in texts[20:]]


def expected_checks(originals, copies, probes=(0, 0)):
    """Brute force over the signatures (and probes) of ``check``: each copy's matches among the
    originals, as (distance, id, signature), fingerprinted here from the library's parts."""
    fingerprinter = make_fingerprinter()

    def signed(text):
        lead = body_text(text, join=False)[:150]
        return [(fingerprinter.fingerprint(part), fingerprinter.uncertain_bits(part, count))
                for part, count in ((text, probes[0]), (lead, probes[1]))]

    indexed = [signed(t) for t in originals]
    expected = {}
    for i, copy in enumerate(copies):
        query, found = signed(copy), []
        for j, doc in enumerate(indexed):
            near = [(hamming(d, q), n, name) for n, (name, (d, _), (q, masks)) in enumerate(zip(NAMES, doc, query))
                    if hamming(d, q) <= K or any(hamming(d, q ^ m) <= K for m in masks)]
            if near:
                d, _, name = min(near)
                found.append((d, f"o{j}", name))
        expected[f"c{i}"] = sorted(found)
    return expected


def test_a_lead_signature_and_probes_find_the_copies_that_lost_their_end(tmp_path, news):
    texts, halves = news
    originals, copies = tmp_path / "orig.jsonl", tmp_path / "copies.jsonl"
    originals.write_text("".join(json.dumps({"id": f"o{i}", "text": t}, ensure_ascii=False) + "\n"
                                 for i, t in enumerate(texts)), encoding="utf-8")
    copies.write_text("".join(json.dumps({"id": f"c{i}", "text": t}, ensure_ascii=False) + "\n"
                              for i, t in enumerate(halves)), encoding="utf-8")
    found = {}
    for init in (["--signatures", "body"], ["--signatures", "body,lead150"],
                 ["--signatures", "body,lead150", "--probes", "8,2"]):
        store = str(tmp_path / "-".join(init).replace(",", "_"))
        run("--store", store, "init", *init, "--short-texts", "off")  # the signatures alone (the brute force's)
        run("--store", store, "load", str(originals))
        answers = [json.loads(line) for line in run("--store", store, "check", str(copies), "--json").stdout.splitlines()]
        got = {a["id"]: sorted((m["distance"], m["id"], m.get("signature", "body")) for m in a["matches"])
               for a in answers}
        found[" ".join(init)] = sum(map(len, got.values()))
        if init[1] == "body":
            assert all("signature" not in m for a in answers for m in a["matches"])
        else:
            assert got == expected_checks(texts, halves, (8, 2) if "--probes" in init else (0, 0))
    assert found["--signatures body"] < found["--signatures body,lead150"] < found["--signatures body,lead150 --probes 8,2"]
    shown = json.loads(run("--store", store, "query", halves[0], "--json").stdout)
    assert [m["id"] for m in shown["matches"]] == [m[1] for m in expected_checks(texts, halves[:1], (8, 2))["c0"]]
    assert shown["simhash"] == to_hex(make_fingerprinter().fingerprint(halves[0]))


def test_precomputed_fingerprints_are_refused_before_anything_starts(tmp_path, news):
    store = str(tmp_path / "ix")
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "a", "text": news[0][0], "simhash": "00000000000000ff"}) + "\n")
    run("--store", store, "init", "--signatures", "body,lead150")
    for args, message in (
            (("load", str(data), "--fingerprints"),
             "an index with signatures body,lead150 fingerprints the texts themselves: precomputed fingerprints "
             "(--fingerprints) carry the body's simhash alone"),
            (("load", str(data), "--engine", "spark", "--fingerprints"),
             "an index with signatures body,lead150 fingerprints the texts themselves")):
        done = run("--store", store, *args, check=False)
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)
    assert json.loads(run("--store", store, "stats", "--json").stdout)["documents"] == 0
    probed = str(tmp_path / "probed")
    run("--store", probed, "init", "--probes", "8")
    done = run("--store", probed, "check", str(data), "--fingerprints", check=False)
    assert done.returncode != 0 and "an index with probes fingerprints the texts themselves" in done.stderr, done.stderr


def test_plan_counts_the_rows_and_scans_of_every_signature():
    one = [json.loads(line) for line in run("plan", "--docs", "1000000000", "--json").stdout.splitlines()]
    two = [json.loads(line) for line in
           run("plan", "--docs", "1000000000", "--signatures", "body,lead150", "--json").stdout.splitlines()]
    assert [r["scheme"] for r in two] == [r["scheme"] for r in one] == ["4", "5"]
    for a, b in zip(one, two):
        assert (b["flags"], b["index_rows"], b["key_bytes"], b["signatures"]) == \
               (2 * a["flags"], 2 * a["index_rows"], 2 * a["key_bytes"], 2)
        assert b["candidates"] == pytest.approx(2 * a["candidates"])
    assert "signatures body,lead150 (rows and scans of all)" in run(
        "plan", "--docs", "1000", "--signatures", "body,lead150").stdout
    probed = [json.loads(line) for line in run("plan", "--docs", "1000000000", "--signatures", "body,lead150",
                                               "--probes", "8,2", "--json").stdout.splitlines()]
    for a, p in zip(one, probed):  # 2 signatures and 10 probes: 12 lookups of one signature's rows
        assert (p["index_rows"], p["scans"]) == (2 * a["index_rows"], 12 * a["flags"])
        assert p["candidates"] == pytest.approx(12 * a["candidates"])
    assert "10 probes a lookup" in run("plan", "--docs", "1000", "--probes", "8,2", "--signatures", "body,lead150").stdout


def test_a_hundred_thousand_copies_are_read_in_proportion_to_the_copies_under_every_signature():
    """100,000 copies of one document (one body, one lead) in an index of two signatures with
    probes: 600 lookups of copies and near copies read each id a few times in all (the distinct
    documents of the runs they share counted once), never once per lookup."""
    from dedup_hbase.index.store import Cells

    class CountedCells(Cells):
        def __init__(self, cells, reads):
            self.cells, self.reads = cells, reads

        @property
        def rests(self):
            return self.cells.rests

        def qualifier(self, i):
            self.reads.append(i)
            return self.cells.qualifier(i)

    n, body, lead = 100_000, 0x0123456789ABCDEF, 0xFEDCBA9876543210
    index = Index.create(MemoryStore(), signatures="body,lead150", probes="4,2")
    index.add_many([Document(f"c{i:06}", body, {}, (lead,)) for i in range(n)] + [Document("near", body ^ 0b1111, {}, (0,))])
    reads: list = []
    scan_cells = index.store.scan_cells
    index.store.scan_cells = lambda table, prefixes: [CountedCells(c, reads) for c in scan_cells(table, prefixes)]
    masks = ((1, 2, 4, 1 << 40), (1, 1 << 50))
    queries = [body] * 300 + [body ^ 1] * 300
    answers = index.query_many(queries, None, 10, [(lead,)] * 600, [masks] * 600)
    assert all([m.id for m in a] == [f"c{i:06}" for i in range(10)] for a in answers)
    assert all(a[0].distance == 0 and a[0].signature == "body" and a.total == n + 1 for a in answers[:300])  # near: by a probe
    assert all(a[0].distance == 0 and a[0].signature == "lead150" and a.total == n + 1 for a in answers[300:])
    assert len(reads) <= 8 * (n + 1)  # a few reads of each id in all, not one per lookup (600)
