"""retention.py: durations, when a document expires (the index's TTL, or its own shorter
one), and the lookups and removals that follow from it, at a given time (no sleeping)."""

import json

import pytest

from dedup_hbase import Document, Index, Match, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.index import retention
from dedup_hbase.index.candidates import Run
from dedup_hbase.index.retention import describe, expired_ids, expires_at, parse_duration, remove_expired
from dedup_hbase.service.online import OnlineIndex


def test_durations_read_and_written():
    assert [parse_duration(t) for t in ("90s", " 15m", "12h", "30d")] == [90, 900, 43200, 2592000]
    assert [describe(s) for s in (90, 900, 43200, 2592000, 3600 * 25)] == ["90s", "15m", "12h", "30d", "25h"]
    for bad in ("", "0s", "1w", "1.5h", "h", 12):
        with pytest.raises(InvalidInput, match=r"a duration is a whole number >= 1 and a unit s, m, h or d"):
            parse_duration(bad)


def row(meta: dict) -> bytes:
    return bytes(8) + json.dumps(meta).encode()


def test_a_document_expires_at_its_own_ttl_when_shorter_than_the_index():
    assert expires_at(row({"loaded": 1000}), 60) == 1060
    assert expires_at(row({"loaded": 1000, "ttl": 5}), 60) == 1005
    assert expires_at(row({"loaded": 1000, "ttl": 500}), 60) == 1060  # never beyond the index's TTL
    assert expires_at(row({"source": "a.jsonl"}), 60) is None  # no time: not expired by age
    assert expires_at(None, 60) is None and expires_at(bytes(8), 60) is None


def test_lookups_and_removal_follow_each_documents_expiry():
    index = Index.create(open_store("memory:"), 4, 3, ttl=60)
    base = 0x0123456789ABCDEF
    index.add_many([Document("index-ttl", base, {"loaded": 1000}), Document("own-ttl", base ^ 1, {"loaded": 1000, "ttl": 5}),
                    Document("later", base ^ 2, {"loaded": 1050, "ttl": 5})])
    runs = [[Run(0, base, ["index-ttl", "unknown"]), Run(1, base ^ 1, ["own-ttl"]), Run(1, base ^ 2, ["later"])], []]
    alive = {when: [[(r.simhash, r.ids) for r in found] for found in retention.unexpired_runs(index.store, runs, 60, now=when)]
             for when in (1004, 1005, 1054, 1059, 1060)}
    assert alive == {1004: [[(base, ["index-ttl"]), (base ^ 1, ["own-ttl"]), (base ^ 2, ["later"])], []],
                     1005: [[(base, ["index-ttl"]), (base ^ 2, ["later"])], []],
                     1054: [[(base, ["index-ttl"]), (base ^ 2, ["later"])], []],
                     1059: [[(base, ["index-ttl"])], []], 1060: [[], []]}
    assert expired_ids(index.store, 60, now=1054) == ["own-ttl"]  # in key order
    assert expired_ids(index.store, 60, now=1055) == ["later", "own-ttl"]
    assert expired_ids(index.store, 60, now=1060) == ["index-ttl", "later", "own-ttl"]


def test_remove_expired_deletes_documents_past_their_own_ttl():
    import time

    now = time.time()
    index = Index.create(open_store("memory:"), 4, 3, ttl=3600)
    index.add_many([Document("old-own", 1, {"loaded": int(now) - 10, "ttl": 5}),
                    Document("young-own", 2, {"loaded": int(now) - 10, "ttl": 600}),
                    Document("index-ttl", 3, {"loaded": int(now) - 10})])
    assert OnlineIndex(index).remove_expired() == 1
    assert [d is not None for d in index.get(["old-own", "young-own", "index-ttl"])] == [False, True, True]
    assert remove_expired(index) == 0


def test_a_lookup_leaves_out_expired_documents_from_the_matches_the_count_and_the_runs():
    import time

    now = int(time.time())
    index = Index.create(open_store("memory:"), 4, 3, ttl=60)
    base = 0x0123456789ABCDEF
    index.add_many([Document(f"old{i}", base, {"loaded": now - 100}) for i in range(5)]
                   + [Document(f"new{i}", base, {"loaded": now}) for i in range(3)]
                   + [Document("own-ttl", base ^ 1, {"loaded": now - 10, "ttl": 5}), Document("near", base ^ 1)])
    for max_matches in (None, 1, 2, 3, 4, 5):
        found = index.query(base, None, max_matches)
        assert [(m.id, m.distance) for m in found] == [("new0", 0), ("new1", 0), ("new2", 0), ("near", 1)][:max_matches]
        assert found.total == 4
        assert [(r.simhash, list(r.ids)) for r in found.runs] == [(base, ["new0", "new1", "new2"]), (base ^ 1, ["near"])]
    assert index.query_many([base ^ 1, base ^ 1], 0, 1) == [[Match("near", base ^ 1, 0)]] * 2
