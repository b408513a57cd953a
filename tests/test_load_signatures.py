"""``load --skip-near-dups`` and ``--groups`` into an index of several signatures with probes: a
document is left out exactly when a lookup of it (every signature and probe) finds a document
with another id indexed before its batch or earlier in its batch, and the groups are the
components of what the load's lookups find (a brute force over every signature and probe, batch
by batch, as the service's insert-if-new is held to)."""

import json
import random

import pytest
from test_service_signatures import expected_adds, families, finds, signed_parts  # noqa: F401 (a fixture)

from dedup_hbase import Index, open_store
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


@pytest.mark.parametrize("batch_size", [9, 1000])
def test_groups_are_the_components_of_what_the_lookups_find(tmp_path, families, batch_size):  # noqa: F811
    texts = [t for family in families for t in family]
    parts = signed_parts(texts)
    indexed = [3 * f for f in range(30)]  # loaded before, without --groups
    order = [j for j in range(len(texts)) if j not in indexed]
    random.Random(8).shuffle(order)
    base, path = tmp_path / "base.jsonl", tmp_path / "in.jsonl"
    for file, positions in ((base, indexed), (path, order)):
        file.write_text("".join(json.dumps({"id": f"d{j}", "text": texts[j]}, ensure_ascii=False) + "\n"
                                for j in positions), encoding="utf-8")
    root = {j: j for j in range(len(texts))}

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    seen = list(indexed)
    for j in order:  # what each record's lookup finds: indexed before it, or earlier in the load
        for i in seen:
            if finds(parts[j], parts[i]):
                root[find(i)] = find(j)
        seen.append(j)
    members: dict[int, set] = {}
    for j in range(len(texts)):
        members.setdefault(find(j), set()).add(f"d{j}")
    expected = {frozenset(m) for m in members.values() if len(m) > 1}
    groups = tmp_path / "groups.jsonl"
    with open_store(str(tmp_path / "index"), create=True) as store:
        index = Index.create(store, 4, 3, signatures="body,lead150", probes="8,1")
        load_files(index, [str(base)], LoadOptions())
        load_files(index, [str(path)], LoadOptions(groups=str(groups), batch_size=batch_size))
    got = {frozenset(json.loads(line)["ids"]) for line in groups.read_text(encoding="utf-8").splitlines()}
    assert got == expected and len(expected) >= 50
