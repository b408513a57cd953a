"""Short texts, whose SimHash cannot be trusted alone.

A SimHash is the sign of a weighted sum: a text of two or three weighted terms gets, nearly bit
for bit, the hash of its heaviest term, so unrelated short texts that share one term land at 0-3
bits (issue 44; 春节里的中国 and 春节近 年味浓 at 0 bits). The index's other sketch (confirm.py:
the same features under another seed) is no help there: it is the same term's hash again
(measured on the news titles: all 72 unrelated drops within 14 sketch bits, median 0).

So a text is *short* when its body (``boilerplate.body_text`` of ``features.normalize``: what the
default featurizer fingerprints), white space removed, has fewer than ``SHORT_BELOW`` characters
(measured: docs/quality.md, "Precision of a whole groups run": the unrelated drops are under
100 characters, and the few distinct features and the one heavy term that cause them go with
the length; a line by length alone does not move under an edit of one feature's weight). Under
the short-text rule a short text's sketch is the flag ``SHORT_FLAG`` alone (bit 0), and a pair
with a short text is decided by the texts themselves (text/units.py; index/confirm.py says what
each pair needs). ``similarity``, the character-bigram Jaccard, is the text measure a person
reads a pair by (the report, ``explain``, ``tune``, scripts/quality.py).
"""

from __future__ import annotations

from .boilerplate import body_text
from .features import normalize
from .native import usable_core

SHORT_BELOW = 200    # characters of the normalized text (white space removed) below which a text is short
SHORT_FLAG = 1       # bit 0 of a sketch: the text is short


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
