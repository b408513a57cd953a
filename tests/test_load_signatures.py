"""``load --skip-near-dups`` into an index of several signatures with probes: a document is left
out exactly when a lookup of it (every signature and probe) finds a document with another id
indexed before its batch or earlier in its batch (a brute force over every signature and probe,
batch by batch, as the service's insert-if-new is held to); ``--groups`` is refused in one line."""

import json
import random

import pytest
from test_service_signatures import expected_adds, families, signed_parts  # noqa: F401 (a fixture)

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.jobs.local.load import load_files
from dedup_hbase.jobs.options import LoadOptions


@pytest.mark.parametrize("batch_size", [9, 1000])
def test_skip_near_dups_leaves_out_what_a_lookup_finds(tmp_path, families, batch_size):  # noqa: F811
    texts = [t for family in families[:30] for t in family]
    order = list(range(len(texts)))
    random.Random(5).shuffle(order)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{j}", "text": texts[j]}, ensure_ascii=False) + "\n" for j in order),
                    encoding="utf-8")
    expected = expected_adds([order[i:i + batch_size] for i in range(0, len(order), batch_size)], signed_parts(texts))
    with open_store(str(tmp_path / "index"), create=True) as store:
        index = Index.create(store, 4, 3, signatures="body,lead150", probes="8,1")
        report = load_files(index, [str(path)], LoadOptions(skip_near_dups=True, batch_size=batch_size))
        kept = {doc.id for doc in index.get([f"d{j}" for j in order]) if doc is not None}
    added = [f"d{j}" for j, a in zip(order, (a for answer in expected for a in answer)) if a]
    assert kept == set(added) and report.indexed == len(added)
    assert report.near_duplicates_skipped == len(order) - len(added) >= 40


def test_groups_refused_with_signatures(tmp_path):
    with open_store(str(tmp_path / "index"), create=True) as store:
        index = Index.create(store, 4, 3, signatures="body,lead150")
        with pytest.raises(InvalidInput, match=r"^--groups does not take an index of several signatures "
                                               r"\(body,lead150\) yet: load it without it, then run groups --signatures$"):
            load_files(index, [str(tmp_path)], LoadOptions(groups=str(tmp_path / "g.jsonl")))
