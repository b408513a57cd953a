"""``check --engine spark`` of an index of several signatures, with probes, a confirmation or the
short-text rule (text/signatures.py, index/lookup.py, index/confirm.py, text/shorts.py): the answers a local lookup gives, from
the same bulk read of the index.

Data flow, after the records are fingerprinted (each with its signatures' simhashes, ``more``,
and with probes its ``masks``: stages.py)::

    J  per record its *lookup key* (its simhash, ``more``, ``masks`` and ``sketch``; records that
       share one are looked up once), exploded to one lookup per signature j and per probe: the
       signature's simhash, and it with each of its masks' bits flipped
    J  per signature, its distinct lookups read as check.py reads the body's (the helper's
       IndexLookup, scans of the signature's own flags): every index row within k bits of a
       lookup, with all its ids
    J  each run joined back to the lookup keys that asked for it, at its distance from the
       signature's simhash itself (k + 1 where only a probe reached it)
    E  with a confirmation: the documents of the runs beyond 3 bits whose sketches (read with
       their cells) the key's does not confirm left out, and with the short-text rule those of
       any distance the rule does not match (stages.confirm_runs)
    E  per lookup key (hash-partitioned, sorted): ``merge_signed``, as ``lookup.merged``
       answers: each document once, at its nearest signature (on a tie the first), by
       (distance, id), the first ``max_matches``, named by its signature; the match count the
       distinct documents of every run found

A run travels with every id (the count of distinct documents over several signatures needs
them), as it does with a TTL: memory per lookup key in proportion to the copies within k of it.
The distinct documents of a set of runs are counted once per task however many keys share it.
"""

from __future__ import annotations

import heapq
from itertools import groupby, repeat
from operator import itemgetter

from ...index.schema import load_schema
from ...text.fingerprint import to_hex
from . import hbase, rows, stages

SIGNED_MATCH_TYPE = "array<struct<id:string,simhash:string,distance:int,signature:string>>"
SIGNED_SCHEMA = f"key string, matches {SIGNED_MATCH_TYPE}, match_count long"
CHUNK = 50_000  # keys per output batch
_MASK = (1 << 64) - 1


def lookup_key():
    """A record's lookup key: what its answer depends on (simhash, more, masks, sketch), as text
    (null fields left out: without a confirmation, the key of before)."""
    from pyspark.sql import functions as F

    return F.to_json(F.struct("simhash", "more", "masks", "sketch"))


def signed_matches(job, index, fingerprinted, k: int, max_matches: int | None, staged: str, per_task: int,
                   scan_probes: int):
    """Per lookup key of ``fingerprinted``'s good records (``lookup_key``): its ``matches`` and
    ``match_count`` (SIGNED_SCHEMA). ``staged``: the folder of the probes (a subfolder per
    signature); ``per_task``: (lookup, prefix) rows per lookup task, at least; ``scan_probes``:
    per scan (check.py's)."""
    from pyspark.sql import functions as F

    keys = (fingerprinted.where(F.col("error").isNull()).select(lookup_key().alias("key"), "simhash", "more", "masks",
                                                                     "sketch", "kept")
            .dropDuplicates(["key"]))
    target = index.store.hfile_target()
    zk = hbase.ZooKeeper.of(target, index.store.url)
    found = None
    for j, scheme in enumerate(index.schemes):
        base = rows.signature_simhash(j)
        flips = F.concat(F.array(F.lit(0).cast("bigint")),
                         F.coalesce(F.element_at("masks", j + 1), F.array().cast("array<bigint>")))
        lookups = (keys.select("key", "sketch", "kept", base.alias("base"), F.explode(flips).alias("flip"))
                   .select("key", "sketch", "kept", "base", F.col("base").bitwiseXOR(F.col("flip")).alias("query")))
        queries = lookups.select("query").distinct()
        prefix = F.explode(F.array(*[
            F.shiftleft(rows.segment(scheme, f, F.col("query")), 8).bitwiseOR(F.lit(scheme.first_flag + f - 1))
            for f in range(1, len(scheme.flags) + 1)]))
        probes = queries.select("query", prefix.alias("prefix"))
        tasks = max(2 * job.parallelism, -(-probes.count() // per_task))
        # flags: IndexLookup's test of neighbouring prefixes; 255 where the flags do not start at 1
        # (then no scan range spans two segments)
        runs = hbase.index_runs(job.session, zk, target.tables["index"], load_schema()["family"],
                                probes.repartitionByRange(tasks, "prefix").sortWithinPartitions("prefix"),
                                f"{staged}/{j}", len(scheme.flags) if scheme.first_flag == 1 else 255, k, None,
                                scan_probes, index.spec.sketched)
        if index.ttl:
            runs = runs.mapInArrow(stages.expire_runs(index.store.url), hbase.RUNS_SCHEMA)
        distance = F.bit_count(F.col("base").bitwiseXOR(F.col("simhash"))).alias("distance")
        joined = lookups.join(runs.select("query", "simhash", "ids", "sketches", "kepts"), "query").select(
            "key", F.lit(j).alias("j"), "simhash", distance, "ids", "sketches", "kepts", "sketch", "kept")
        found = joined if found is None else found.unionByName(joined)
    if index.spec.sketched:
        found = found.mapInArrow(stages.confirm_runs(index.store.url), stages.SIGNED_RUNS_SCHEMA)
    names = list(index.signatures.names) if len(index.schemes) > 1 else [None]
    return (found.repartition("key").sortWithinPartitions("key")
            .mapInArrow(merge_signed(names, max_matches), SIGNED_SCHEMA))


def merge_signed(names: list, max_matches: int | None):
    """(key, j, simhash, distance, ids, sketch) rows sorted by key -> per key (SIGNED_SCHEMA) its
    matches: each document at its nearest (distance, signature), by (distance, id), the first
    ``max_matches``; ``match_count`` the distinct documents when more than are listed."""

    def run(batches):
        import pyarrow as pa

        counted: dict[frozenset, int] = {}  # the distinct documents of a set of runs, once per task
        current, runs, out, confirmed = None, {}, [], None
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("key", "j", "simhash", "distance", "ids", "sketch")]
            for key, j, simhash, distance, ids, sketch in zip(*cols):
                if key != current:
                    if current is not None:
                        out.append(_answer(current, runs, names, max_matches, counted, confirmed))
                    current, runs, confirmed = key, {}, sketch
                runs.setdefault((j, simhash), (distance, ids))
            if len(out) >= CHUNK:
                yield _batch(pa, out)
                out = []
        if current is not None:
            out.append(_answer(current, runs, names, max_matches, counted, confirmed))
        if out:
            yield _batch(pa, out)
    return run


def _answer(key: str, runs: dict, names: list, limit: int | None, counted: dict, sketch: int | None) -> tuple:
    """One key's matches from its runs ((j, simhash) -> (distance, ids sorted)): by distance
    level, the levels' ids merged in order, each document the first time it comes (its
    nearest distance; on a tie the first signature, then the smaller simhash), until
    ``limit``: only the ids listed are read; the distinct documents counted once per set of
    runs (with a confirmation, per set of runs at their distances and the key's ``sketch``:
    what the confirmation kept of them)."""
    ordered = sorted((distance, j, simhash & _MASK, ids) for (j, simhash), (distance, ids) in runs.items())
    found: list[dict] = []
    seen: set[str] = set()
    for distance, level in groupby(ordered, key=itemgetter(0)):
        for doc_id, j, simhash in heapq.merge(*[zip(ids, repeat(j), repeat(simhash)) for _, j, simhash, ids in level]):
            if doc_id not in seen:
                seen.add(doc_id)
                found.append({"id": doc_id, "simhash": to_hex(simhash), "distance": distance, "signature": names[j]})
                if len(found) == limit:
                    break
        if len(found) == limit:
            break
    fingerprints = frozenset(runs) if sketch is None else (
        frozenset((j, simhash, distance) for (j, simhash), (distance, _) in runs.items()), sketch)
    if fingerprints not in counted:
        counted[fingerprints] = len({doc_id for _, ids in runs.values() for doc_id in ids})
    total = counted[fingerprints]
    return key, found, total if total > len(found) else None


def _batch(pa, out: list[tuple]):
    match = pa.struct([("id", pa.string()), ("simhash", pa.string()), ("distance", pa.int32()),
                       ("signature", pa.string())])
    return pa.RecordBatch.from_arrays(
        [pa.array([o[0] for o in out], pa.string()), pa.array([o[1] for o in out], pa.list_(match)),
         pa.array([o[2] for o in out], pa.int64())], names=["key", "matches", "match_count"])
