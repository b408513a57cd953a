"""The store contract suite (store_contract.py) on every store of the package."""

import pytest

from dedup_hbase.index.store import prefix_end
from dedup_hbase.stores import open_store
from dedup_hbase.stores.hbase.store import HBaseStore
from dedup_hbase.stores.local import LocalStore
from dedup_hbase.stores.memory import MemoryStore

from conftest import hbase_store_url
from store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def new_store(self):
        yield MemoryStore()


class TestLocalStore(StoreContract):
    @pytest.fixture
    def new_store(self, tmp_path):
        yield LocalStore(tmp_path / "store", create=True)


@pytest.mark.hbase
class TestHBaseStore(StoreContract):
    @pytest.fixture
    def new_store(self, hbase_url):
        store = open_store(hbase_store_url(hbase_url))
        assert isinstance(store, HBaseStore)
        yield store
        store.drop()
        store.close()


def test_prefix_end():
    assert prefix_end(b"ab") == b"ac"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") is None


