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
    E  per lookup key (hash-partitioned, sorted): ``merge_signed``, the local lookup's own merge:
       per *answer* (a signature's simhash, or its probes: ``lookup.signed_lookup``'s answers,
       in its order) its runs through ``candidates.bounded``, the answers through
       ``lookup.merged``: each document once, at its nearest signature (on a tie the first
       answer), by (distance, id), the first ``max_matches``, named by its signature; the match
       count as a local lookup counts it (one answer found documents: its index entries; more:
       the distinct documents of all)

A run travels with every id (the count of distinct documents over several answers needs them),
as it does with a TTL: memory per lookup key in proportion to the copies within k of it.
"""

from __future__ import annotations

from itertools import starmap

from ...index.candidates import Run, bounded
from ...index.lookup import Match, Matches, merged
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
                   .select("key", "sketch", "kept", "base", F.col("base").bitwiseXOR(F.col("flip")).alias("query"),
                           F.when(F.col("flip") == 0, j).otherwise(len(index.schemes) + j).alias("j")))
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
            "key", "j", "simhash", distance, "ids", "sketches", "kepts", "sketch", "kept")
        found = joined if found is None else found.unionByName(joined)
    if index.spec.sketched:
        found = found.mapInArrow(stages.confirm_runs(index.store.url), stages.SIGNED_RUNS_SCHEMA)
    names = list(index.signatures.names) if len(index.schemes) > 1 else [None]
    return (found.repartition("key").sortWithinPartitions("key")
            .mapInArrow(merge_signed(names, max_matches), SIGNED_SCHEMA))


def merge_signed(names: list, max_matches: int | None):
    """(key, j, simhash, distance, ids) rows sorted by key -> per key (SIGNED_SCHEMA) its matches
    and match count, as ``lookup.signed_lookup`` gives them. ``j``: the answer a run belongs to,
    signature j's simhash (j < len(names)) or its probes (len(names) + j)."""

    def run(batches):
        import pyarrow as pa

        current, runs, out = None, {}, []
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("key", "j", "simhash", "distance", "ids")]
            for key, j, simhash, distance, ids in zip(*cols):
                if key != current:
                    if current is not None:
                        out.append(_answer(current, runs, names, max_matches))
                    current, runs = key, {}
                simhash &= _MASK
                runs.setdefault((j, simhash), Run(distance, simhash, ids))  # a run reached by several probes
            if len(out) >= CHUNK:
                yield _batch(pa, out)
                out = []
        if current is not None:
            out.append(_answer(current, runs, names, max_matches))
        if out:
            yield _batch(pa, out)
    return run


def _answer(key: str, runs: dict, names: list, limit: int | None) -> tuple:
    """One key's runs ((answer, simhash) -> Run) as a local lookup answers them: each answer's
    runs by (distance, simhash) through ``bounded``, the answers in order through ``merged``."""
    answers: dict[int, list[Run]] = {}
    for (j, _), found in sorted(runs.items()):
        answers.setdefault(j, []).append(found)
    per_answer = []
    for found in answers.values():
        found.sort(key=lambda r: (r.distance, r.simhash))
        listed, total = bounded(found, limit)
        per_answer.append([Matches(list(starmap(Match, listed)), total, found)])
    (matches,) = merged([names[j % len(names)] for j in answers], per_answer, limit)
    listed = [{**m._asdict(), "simhash": to_hex(m.simhash)} for m in matches]
    return key, listed, matches.total if matches.total > len(listed) else None


def _batch(pa, out: list[tuple]):
    match = pa.struct([("id", pa.string()), ("simhash", pa.string()), ("distance", pa.int32()),
                       ("signature", pa.string())])
    return pa.RecordBatch.from_arrays(
        [pa.array([o[0] for o in out], pa.string()), pa.array([o[1] for o in out], pa.list_(match)),
         pa.array([o[2] for o in out], pa.int64())], names=["key", "matches", "match_count"])
