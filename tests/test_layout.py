"""Row keys, bit for bit. The vectors below were worked out by hand from the bits of
0x0123456789abcdef (see the comments), not produced by the code under test."""

import struct

import pytest

from dedup_hbase.index.layout import KEY_BYTES, Scheme

FP = 0x0123456789ABCDEF
FP_HEX = "0123456789abcdef"

# 4-split: a=0x0123 b=0x4567 c=0x89ab d=0xcdef, each left-aligned: block << 16.
FOUR = [
    "01230000" "01" + FP_HEX,
    "45670000" "02" + FP_HEX,
    "89ab0000" "03" + FP_HEX,
    "cdef0000" "04" + FP_HEX,
]

# 5-split of 0000000100100 0110100010101 1001111000100 1101010111100 110111101111
#             a (0x0024)    b (0x0d15)    c (0x13c4)    d (0x1abc)    e (0xdef)
# pairs concatenated and padded with zeros to 32 bits, e.g. ab =
# 0000000100100 0110100010101 000000 = 00000001 00100011 01000101 01000000 = 01234540
FIVE = [
    "01234540" "01" + FP_HEX,  # ab
    "0124f100" "02" + FP_HEX,  # ac
    "0126af00" "03" + FP_HEX,  # ad
    "0126f780" "04" + FP_HEX,  # ae (13 + 12 bits, 7 zero bits)
    "68acf100" "05" + FP_HEX,  # bc
    "68aeaf00" "06" + FP_HEX,  # bd
    "68aef780" "07" + FP_HEX,  # be
    "9e26af00" "08" + FP_HEX,  # cd
    "9e26f780" "09" + FP_HEX,  # ce
    "d5e6f780" "0a" + FP_HEX,  # de
]


def test_four_split_row_keys_bit_exact():
    assert [k.hex() for k in Scheme(4, 1).row_keys(FP)] == FOUR


def test_five_split_row_keys_bit_exact():
    assert [k.hex() for k in Scheme(5, 2).row_keys(FP)] == FIVE


@pytest.mark.parametrize("scheme,expected", [(Scheme(4, 1), FOUR), (Scheme(5, 2), FIVE)])
def test_prefixes_are_the_first_five_bytes(scheme, expected):
    assert [p.hex() for p in scheme.prefixes(FP)] == [k[:10] for k in expected]


def test_block_widths_and_flags():
    assert Scheme(4, 1).widths == (16, 16, 16, 16)
    assert Scheme(5, 2).widths == (13, 13, 13, 13, 12)
    assert Scheme(5, 2).flags == ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4),
                                  (2, 3), (2, 4), (3, 4))
    assert [Scheme(5, 2).segment_bits(f) for f in range(1, 11)] == [26, 26, 26, 25, 26, 26, 25, 26, 25, 25]


def key_simhash(key: bytes) -> int:
    return int.from_bytes(key[5:13], "big")


def test_extremes_and_key_fields():
    for scheme in (Scheme(4, 1), Scheme(5, 2)):
        assert [k.hex() for k in scheme.row_keys(0)] == [
            "00000000" + f"{f:02x}" + "0" * 16 for f in range(1, len(scheme.flags) + 1)]
        for key in scheme.row_keys(2**64 - 1):
            assert len(key) == KEY_BYTES and key_simhash(key) == 2**64 - 1
        segment, flag, simhash = struct.unpack(">IBQ", scheme.row_keys(FP)[-1])
        assert (flag, simhash) == (len(scheme.flags), FP)
    assert Scheme(4, 1).row_keys(2**64 - 1)[0].hex() == "ffff0000" "01" + "f" * 16
    assert Scheme(5, 2).row_keys(2**64 - 1)[3].hex() == "ffffff80" "04" + "f" * 16


def test_bad_simhash_rejected():
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        Scheme(4, 1).row_keys(2**64)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        Scheme(4, 1).row_keys(-1)


def test_k_beyond_the_guarantee_is_an_error():
    assert Scheme(4, 1).check_k(3) == 3
    with pytest.raises(ValueError, match="k=4 is more than scheme 4 can guarantee.*within 3 bits"):
        Scheme(4, 1).check_k(4)
    with pytest.raises(ValueError, match="k=4 is more than scheme 5 can guarantee"):
        Scheme(5, 2).check_k(4)
    with pytest.raises(ValueError, match="whole number"):
        Scheme(4, 1).check_k(-1)


def test_general_schemes():
    assert Scheme(8, 4).max_k == 4 and len(Scheme(8, 4).flags) == 70
    assert Scheme.parse("7/3") == Scheme(7, 3) and Scheme.parse("5") == Scheme(5, 2)
    with pytest.raises(ValueError, match="33-bit segments"):
        Scheme(6, 3)
    with pytest.raises(ValueError, match="924 flags; a flag is one byte"):
        Scheme(12, 6)
    with pytest.raises(ValueError, match="unknown scheme"):
        Scheme.parse("six")


def test_byte_order_is_numeric_order():
    scheme = Scheme(4, 1)
    values = [0, 1, 0xFFFF, 0x10000, 2**63, 2**64 - 1]
    keys = [scheme.row_keys(v)[3] for v in values]  # flag 4: low block first, then simhash
    assert sorted(keys) == sorted(keys, key=lambda k: (k[:4], key_simhash(k)))


def test_vectorised_segments_equal_scalar():
    import random

    import numpy as np

    rnd = random.Random(2)
    values = [FP, 0, 2**64 - 1] + [rnd.getrandbits(64) for _ in range(200)]
    for scheme in (Scheme(4, 1), Scheme(5, 2), Scheme(7, 3)):
        for flag in range(1, len(scheme.flags) + 1):
            got = scheme.segments(np.array(values, dtype=np.uint64), flag).tolist()
            assert got == [scheme.segment(v, flag) for v in values]


def test_prefix_ids_of_few_and_of_many_equal_the_prefixes():
    """``prefix_ids`` takes two paths (a few simhashes one at a time, more vectorised): both
    give ``prefixes`` as integers; ``prefixes`` (its own arithmetic) gives ``segment`` and the flag."""
    import random

    import numpy as np

    rnd = random.Random(4)
    values = [FP, 0, 2**64 - 1] + [rnd.getrandbits(64) for _ in range(40)]
    for scheme in (Scheme(4, 1), Scheme(5, 2), Scheme(7, 3)):
        expected = [[int.from_bytes(p, "big") for p in scheme.prefixes(v)] for v in values]
        assert expected == [[(scheme.segment(v, f) << 8) | f for f in range(1, len(scheme.flags) + 1)] for v in values]
        for n in (0, 1, 2, 8, 9, len(values)):
            got = scheme.prefix_ids(np.array(values[:n], dtype=np.uint64))
            assert got.dtype == np.uint64 and got.shape == (n, len(scheme.flags))
            assert got.tolist() == expected[:n]


def test_key_table_equals_row_keys():
    import random

    import numpy as np

    rnd = random.Random(3)
    values = [FP, 0, 2**64 - 1] + [rnd.getrandbits(64) for _ in range(100)]
    for scheme in (Scheme(4, 1), Scheme(5, 2), Scheme(7, 3)):
        for n in (1, 2, 8, 9, len(values)):  # a few in Python ints, more in numpy
            for given in (values[:n], np.array(values[:n], dtype=np.uint64)):
                table = scheme.key_table(given)
                assert len(table) == n * len(scheme.flags) * KEY_BYTES
                assert [table[i:i + KEY_BYTES] for i in range(0, len(table), KEY_BYTES)] == [
                    scheme.row_keys(v)[f] for f in range(len(scheme.flags)) for v in values[:n]]
    assert Scheme(5, 2).key_table([FP])[:13].hex() == FIVE[0]
