"""A batch's earlier matches under several signatures, probes and sketches (probed.earlier_probed,
earliest_other) against a brute force of their definition: every earlier position, pair by pair.
Planted: exact copies (some under the same id), chains, pairs at exactly k and k + 1 bits, probes
that reach k + 1, short texts (bit 0 of the sketch: text/units.py) whose fingerprints agree but
whose words do not (a word substituted) and ones a word inserted."""

from __future__ import annotations

import random

import pytest

from dedup_hbase.index import probed
from dedup_hbase.index.confirm import sketches_agree
from dedup_hbase.index.probed import earlier_probed, earliest_other
from dedup_hbase.text.shorts import SHORT_FLAG
from dedup_hbase.text.units import WORDS, kept_sketch

K = 3


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for b in rnd.sample(range(64), bits):
        value ^= 1 << b
    return value


def planted(seed: int, signatures: int):
    rnd = random.Random(seed)
    rows = []  # (columns, masks, sketch, id)
    texts = {}  # a short sketch -> its kept text

    def short(text: str) -> int:
        texts[kept_sketch(text)] = text
        return kept_sketch(text)

    for n in range(60):
        base = [rnd.getrandbits(64) for _ in range(signatures)]
        text = f"会议第{n}次召开"
        sketch = short(text) if n % 3 == 0 else rnd.getrandbits(64) & ~SHORT_FLAG
        masks = tuple(tuple(1 << b for b in rnd.sample(range(64), 2)) for _ in range(signatures))
        rows.append((base, masks, sketch, f"d{n}"))
        for c in range(rnd.choice([0, 1, 3])):  # exact copies, one under the same id
            rows.append((list(base), masks, sketch, f"d{n}" if c == 0 else f"d{n}c{c}"))
        bits = rnd.choice([1, K, K + 1, 6])  # near ones: at k, k + 1 (a probe may reach it) and beyond
        near = [flip(v, bits, rnd) for v in base]
        other = short(rnd.choice([text, text + "了", text.replace("召开", "举行")])) if n % 3 == 0 else \
            flip(sketch, rnd.choice([0, 2, 9]), rnd) & ~SHORT_FLAG  # short: the same, inserted, substituted
        rows.append((near, masks, other, f"n{n}"))
    rnd.shuffle(rows)
    columns = [[r[0][p] for r in rows] for p in range(signatures)]
    return columns, [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows], texts


def brute(columns, masks, k, confirm):
    """The definition, pair by pair: j finds an earlier i under signature p when columns[p][i] is
    within k bits of columns[p][j] or of one of its probes, and the sketches agree."""
    out = {}
    for j in range(len(columns[0])):
        best = {}
        for i in range(j):
            for place, column in enumerate(columns):
                queries = [column[j], *(column[j] ^ m for m in (masks[j][place] if masks else ()))]
                if not any((column[i] ^ q).bit_count() <= k for q in queries):
                    continue
                distance = (column[i] ^ column[j]).bit_count()
                if confirm is not None and not sketches_agree(distance, confirm[0][i], confirm[0][j], *confirm[1:]):
                    continue
                best[i] = min(best.get(i, (65, 0)), (distance, place))
        if best:
            out[j] = [(i, d, p) for i, (d, p) in sorted(best.items())]
    return out


@pytest.mark.parametrize("signatures,probes,rule", [(1, True, (None, WORDS)), (2, False, (14, None)),
                                                    (2, True, (14, WORDS)), (3, True, None)])
def test_earlier_matches_equal_the_brute_force(signatures, probes, rule):
    for seed in range(3):
        columns, masks, sketches, ids, texts = planted(seed, signatures)
        masks = masks if probes else None
        confirm = None if rule is None else (sketches, *rule, texts)
        expected = brute(columns, masks, K, confirm)
        assert earlier_probed(columns, masks, K, confirm) == expected
        earliest = {j: next(i for i, _, _ in found if ids[i] != ids[j])
                    for j, found in expected.items() if any(ids[i] != ids[j] for i, _, _ in found)}
        assert earliest_other(columns, masks, K, confirm, ids) == earliest
        assert len(earliest) > 30 and any(len(found) > 2 for found in expected.values())


def test_copies_are_compared_once_per_distinct_lookup(monkeypatch):
    """20,000 copies of two short texts (one id repeated) and their near ones: the sketches are
    compared once per distinct lookup and signature, not once per pair of copies (200 million)."""
    calls = []
    monkeypatch.setattr(probed, "sketches_agree", lambda *a: calls.append(1) or sketches_agree(*a))
    a, b = 0x0123456789ABCDEF, 0x0123456789ABCDEE  # one bit apart, texts with words the other lacks: not near
    sa, sb = kept_sketch("春节里的中国"), kept_sketch("春节近 年味浓")
    rows = [(a, sa), (b, sb), (a, sa)] * 10_000
    ids = ["same" if n < 3 else f"x{n}" for n in range(len(rows))]
    texts = {sa: "春节里的中国", sb: "春节近 年味浓"}
    columns, confirm = [[r[0] for r in rows]], ([r[1] for r in rows], None, WORDS, texts)
    earliest = earliest_other(columns, None, K, confirm, ids)
    assert len(calls) == 2
    assert 0 not in earliest and 1 not in earliest and 2 not in earliest  # before them only the same id
    assert earliest[3] == 0 and earliest[4] == 1 and earliest[5] == 0 and earliest[29_999] == 0
    assert len(earliest) == len(rows) - 3
