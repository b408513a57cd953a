"""retention.py: durations, when a document expires (the index's TTL, or its own shorter
one), and the lookups and removals that follow from it, at a given time (no sleeping)."""

import json

import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.index.index import Match
from dedup_hbase.index.retention import describe, expired_ids, expires_at, parse_duration, remove_expired, unexpired
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
    matches = [[Match("index-ttl", base, 0), Match("own-ttl", base ^ 1, 1), Match("later", base ^ 2, 1)]]
    alive = {when: [m.id for m in unexpired(index.store, matches, 60, now=when)[0]] for when in (1004, 1005, 1054, 1059, 1060)}
    assert alive == {1004: ["index-ttl", "own-ttl", "later"], 1005: ["index-ttl", "later"], 1054: ["index-ttl", "later"],
                     1059: ["index-ttl"], 1060: []}
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
