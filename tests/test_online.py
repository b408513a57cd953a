"""online.py's stripe locks: the stripes of a few simhashes found in Python ints are the ones
the numpy formula gives (the locks a writer takes must not depend on how many it writes)."""

import random

import numpy as np
import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.service import online as online_module
from dedup_hbase.service.online import OnlineIndex


@pytest.mark.parametrize("scheme", ["4", "5"])
@pytest.mark.parametrize("signatures", ["body", "body,lead150"])
def test_few_simhashes_get_the_stripes_of_the_numpy_formula(tmp_path, scheme, signatures):
    rnd = random.Random(4)
    with open_store(str(tmp_path / "s"), create=True) as store:
        online = OnlineIndex(Index.create(store, 4 if scheme == "4" else 5, 3, signatures=signatures))
        for n in (1, 2, 7, online_module._FEW // len(online.index.schemes)):
            locked = []
            for scheme_of in online.index.schemes:  # each signature's own flags: its own stripes
                simhashes = [rnd.getrandbits(64) for _ in range(n)]
                simhashes[:2] = [0, (1 << 64) - 1][:n]  # the extremes among them
                locked.append((scheme_of, simhashes))
            pids = np.concatenate([s.prefix_ids(np.asarray(h, dtype=np.uint64)).ravel() for s, h in locked])
            expected = np.unique((pids * online_module._FIBONACCI) >> np.uint64(52)).tolist()
            assert online._stripes_of(locked) == expected
            assert all(0 <= s < online_module.STRIPES for s in expected)


def test_the_document_count_rests_between_pages_with_the_store_free(tmp_path, monkeypatch):
    """count_documents reads ``COUNT_PAGE`` keys a store call, then rests as long as the page
    took, holding nothing: a request waiting for a store that serves one call at a time gets it
    between pages. (A count that took the store back at once starved them: at 10^8 documents
    on the embedded store, 20 single lookups a second through the service while it ran.)"""
    import time
    import types

    from dedup_hbase.index.index import Document

    with open_store(str(tmp_path / "s"), create=True) as store:
        index = Index.create(store, 4, 3, short=None)
        rnd = random.Random(3)
        index.add_many([Document(f"d{i}", rnd.getrandbits(64), {}) for i in range(2_500)])
        online = OnlineIndex(index)
        assert not store.thread_safe  # the embedded store: one call at a time, through the lock
        rests = []

        def rest(seconds: float) -> None:
            assert online.store_free() and seconds > 0
            rests.append(seconds)

        monkeypatch.setattr(online_module, "time", types.SimpleNamespace(perf_counter=time.perf_counter, sleep=rest))
        assert online.count_documents(page=1_000) == 2_500
        assert len(rests) == 2  # after each full page; the last, short page ends the count


def test_the_document_count_reads_bigger_pages_from_a_store_that_serves_calls_at_once(tmp_path, monkeypatch):
    """On a thread-safe store (HBase) a page holds nothing: ``COUNT_PAGE_SHARED`` keys a call,
    a tenth of the round trips of the embedded store's pages; it still rests after each."""
    import time
    import types

    from dedup_hbase.index.index import Document

    monkeypatch.setattr(online_module, "COUNT_PAGE_SHARED", 400)
    monkeypatch.setattr(online_module, "COUNT_PAGE", 40)
    with open_store(str(tmp_path / "s"), create=True) as store:
        index = Index.create(store, 4, 3, short=None)
        rnd = random.Random(5)
        index.add_many([Document(f"d{i}", rnd.getrandbits(64), {}) for i in range(1_000)])
        pages, rests = [], []
        scan_range = store.scan_range

        def counted(table, start, stop, limit):
            pages.append(limit)
            return scan_range(table, start, stop, limit)

        monkeypatch.setattr(store, "scan_range", counted)
        monkeypatch.setattr(online_module, "time", types.SimpleNamespace(perf_counter=time.perf_counter,
                                                                         sleep=rests.append))
        assert OnlineIndex(index).count_documents() == 1_000
        assert pages == [40] * 26 and len(rests) == 25  # one call at a time: small pages
        pages.clear()
        rests.clear()
        monkeypatch.setattr(store, "thread_safe", True, raising=False)
        assert OnlineIndex(index).count_documents() == 1_000
        assert pages == [400] * 3 and len(rests) == 2
