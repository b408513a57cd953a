"""Short texts, whose SimHash cannot be trusted, and the character sketch that tells them apart.

A SimHash is the sign of a weighted sum: a text of two or three weighted terms gets, nearly bit
for bit, the hash of its heaviest term, so unrelated short texts that share one term land at 0-3
bits (issue 44; 春节里的中国 and 春节近 年味浓 at 0 bits). The index's other sketch (confirm.py:
the same features under another seed) is no help there: it is the same term's hash again
(measured on the news titles: all 72 unrelated drops within 14 sketch bits, median 0).

So a text is *short* when its body (``boilerplate.body_text`` of ``features.normalize``: what the
default featurizer fingerprints), white space removed, has fewer than ``SHORT_BELOW`` characters (measured: docs/quality.md, "Precision of a whole groups
run": the unrelated drops are under 100 characters, and the few distinct features and the one
heavy term that cause them go with the length; a line by length alone does not move under an
edit of one feature's weight). A short text's sketch is a 1-bit MinHash of its character
bigrams: ``BITS`` independent min-wise hashes (mmh3 of each bigram, then one bijective mix per
bit), each giving its lowest bit. Two sketches agree in a bit with probability (1 + J) / 2 for
bigram Jaccard J, so they differ in about ``BITS`` x (1 - J) / 2 bits: 0 for the same text, 16
at J = 0.5, 28 for unrelated titles. Bit 0 of the sketch is the flag ``SHORT_FLAG`` (1: short),
bits 63..1 the MinHash; a text that is not short has the flag 0 (index/confirm.py says what
each pair needs).
"""

from __future__ import annotations

from collections.abc import Sequence

import mmh3
import numpy as np

from .boilerplate import body_text
from .features import normalize
from .native import usable_core

SHORT_BELOW = 200    # characters of the normalized text (white space removed) below which a text is short
BITS = 63            # min-wise hashes of a short text's sketch, bits 63..1
SHORT_FLAG = 1       # bit 0 of a sketch: the text is short
MEASURED_BITS = 12   # the sketch bits docs/quality.md measured (--short-texts 12): 0.1% unrelated drops on titles
SEED = 0x5348        # mmh3's seed for the bigrams (the MinHash's own, whatever the index's seed)
_MIX = np.random.default_rng(44).integers(1, 1 << 63, size=BITS, dtype=np.uint64) | np.uint64(1)
_SHIFT = np.arange(BITS, 0, -1, dtype=np.uint64)  # bit j of the sketch takes hash j's lowest bit
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


_core: list = []  # the compiled core (native.py) or None, looked up once


def _usable():
    """The compiled core (native.py), or None: looked up once."""
    if not _core:
        _core.append(usable_core())
    return _core[0]


def body(text: str) -> str:
    """``body_text(normalize(text))``: by the compiled core when it is usable (the same answers,
    tests/test_native.py), else (and for a lone surrogate, which the core cannot take) the reference."""
    if _usable() is not None:
        try:
            return _core[0].body_text(_core[0].normalize(text))
        except ValueError:
            pass
    return body_text(normalize(text))


def squeezed(text: str) -> str:
    """The body of the normalized text without white space: what the length and the bigrams are
    taken of (a copy's added site lines, counters and ads do not count, as for the fingerprint)."""
    return "".join(body(text).split())


def is_short(text: str, chars: int | None = None) -> bool:
    """Whether ``text``'s SimHash cannot be trusted alone: fewer than ``SHORT_BELOW`` characters
    (``chars``: ``len(squeezed(text))`` as the compiled core gave it with the fingerprint;
    None: taken here)."""
    return (len(squeezed(text)) if chars is None else chars) < SHORT_BELOW


def bigrams(text: str) -> frozenset:
    """The character bigrams of ``squeezed(text)`` (a text of one character: itself)."""
    s = squeezed(text)
    return frozenset(s[i:i + 2] for i in range(max(1, len(s) - 1)))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a & b| / |a | b|; 0.0 when either set is empty."""
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if a and b else 0.0


def similarity(a: str, b: str) -> float:
    """The character-bigram Jaccard of two texts (``bigrams``): the text measure, not the
    fingerprint, that docs/quality.md judges a drop by (below 0.5: unrelated to its via) and
    that ``report`` and ``explain`` show beside the bits apart."""
    return jaccard(bigrams(a), bigrams(b))


def _bigram_hashes(text: str) -> np.ndarray:
    """mmh3 of each of ``bigrams(text)`` (uint64): by the compiled core when it is usable (each
    bigram as often as it comes, which leaves every minimum as it is: the same sketch,
    tests/test_native.py), else the reference's, of the distinct ones (their UTF-8, as the
    fingerprint's features: a lone surrogate, which the core refuses, raises UnicodeEncodeError
    here, as in the fingerprint; mmh3 given such a ``str`` itself crashes the process)."""
    if (core := _usable()) is not None:
        try:
            return np.frombuffer(core.bigram_hashes(text, SEED), dtype="<u8").astype(np.uint64)
        except ValueError:
            pass
    grams = bigrams(text)
    return np.fromiter((mmh3.hash64(g.encode("utf-8"), SEED, signed=False)[0] for g in grams), np.uint64, len(grams))


def bigram_sketch(text: str) -> int:
    """The 1-bit MinHash of ``text``'s character bigrams (a text of one character: itself), with
    ``SHORT_FLAG`` set, whatever its length."""
    hashes = _bigram_hashes(text)
    with np.errstate(over="ignore"):
        x = hashes[None, :] * _MIX[:, None]  # per bit, a bijection of the 64-bit hashes (odd multiplier, splitmix64's finalizer)
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    low = x.min(axis=1) & np.uint64(1)
    return int(np.bitwise_or.reduce(low << _SHIFT)) | SHORT_FLAG


def bigram_sketches(texts: Sequence[str]) -> list[int]:
    """``bigram_sketch`` of each text, each distinct text made once (a batch's exact copies, a
    page under many URLs, cost one)."""
    made: dict[str, int] = {}
    return [made[text] if text in made else made.setdefault(text, bigram_sketch(text)) for text in texts]


def text_sketch(text: str, other: int | None = None, chars: int | None = None) -> int:
    """A document's sketch in an index with the short-text rule: ``bigram_sketch`` for a short
    text; else ``other`` (the confirmation's sketch, confirm.py; None: 0) with bit 0 cleared.
    ``chars``: as ``is_short`` takes it."""
    return text_sketches([text], [other], [chars])[0]


def text_sketches(texts: Sequence[str], others: Sequence[int | None] | None = None,
                  chars: Sequence[int | None] | None = None) -> list[int]:
    """``text_sketch`` of each text (``others``, ``chars``: per text as it takes them; None:
    none), the short ones' by ``bigram_sketches`` (copies made once)."""
    others = others or [None] * len(texts)
    chars = chars or [None] * len(texts)
    out = [(other or 0) & ~SHORT_FLAG for other in others]
    short = [i for i, (text, n) in enumerate(zip(texts, chars)) if is_short(text, n)]
    for i, sketch in zip(short, bigram_sketches([texts[i] for i in short])):
        out[i] = sketch
    return out
