"""When two short texts are near: the same numbers, and the words of one among the other's.

A short text's SimHash cannot tell it from another short text that shares its heaviest term
(text/shorts.py says why), and read by eye most of the short pairs a SimHash joins wrongly are
not random: they are two items cut from one template, which differ by a substituted word
(李希在湖南调研 / 李希在河南调研; 李强会见塞尔维亚总统 / 总理; 通报七起 / 通报八起), while the
copies of one item differ by words inserted or left out (将, 通伦, 的), by words moved, or by
punctuation (docs/quality.md, "Words of one among the other's"). So two short texts
are near when

* their *numbers* are the same, as many of each, in any order (runs of digits, and of Chinese
  numerals: 二十届 / 十四届, 七起 / 八起, 5.5 / 5.1 are other items; a copy with its sentences moved
  keeps them), and
* the *words* of one are all among the other's: a text's words are its CJK characters, each
  alone (a character substituted brings one the other text lacks), and its runs of other
  letters and of digits (an English word substituted brings a new word; a letter does not),
  but for one *misspelled* word: where the shorter text has ``TYPO_WORDS`` words or more, one
  word of one that is a word of the other's with a letter replaced, added, left out or two
  swapped (both runs of letters, the longer of ``TYPO_LETTERS`` or more) counts as that word.
  A typo fixed in an English sentence is a copy; a character substituted in a Chinese text
  (a word of one character) and an edit of a short word (mat / hat) or of a number are not.

Order and counts are not looked at: a reworded copy (继续全球领跑 / 继续领跑全球) is near. Both
tests take the body a short text is fingerprinted by (``shorts.body``: normalized, boilerplate
lines dropped), its white space runs made one space: ``stored``, what an index keeps of a short
text so that every path can apply the rule where it decides a pair.

This module does no I/O and knows no index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import mmh3

from .shorts import SHORT_FLAG, body, is_short

WORDS = "words"  # the rule's name, as an index's metadata records it (``short``)
TYPO_WORDS = 8  # the words the shorter text needs before one misspelled word is let pass
TYPO_LETTERS = 5  # the letters the longer of a misspelled pair needs
KEPT_SEED = 0x4B45  # mmh3's seed for a kept text's hash in its sketch
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"  # kana, ideographs, hangul
_WORD = re.compile(f"[{_CJK}]|[0-9]+|[^\\W\\d_{_CJK}]+")
_NUMBER = re.compile(r"[0-9]+|[〇零一二三四五六七八九十百千万亿两]+")


def stored(text: str, made: str | None = None) -> str:
    """What an index keeps of a short text: ``shorts.body(text)`` (``made``: that body, as the
    compiled core made it with the fingerprint) with its white space runs made one space."""
    return " ".join((body(text) if made is None else made).split())


def kept_sketch(kept: str) -> int:
    """The sketch of a short text under the rule: ``SHORT_FLAG`` (bit 0) and, in bits 63..1, a
    hash of its kept text (``stored``), so that two documents have one sketch when they keep one
    text (and, but for a collision of 63-bit hashes, only then: a run's copies are told apart by
    their sketches alone, as a confirmation's are); what is near is then decided from the texts
    (``near``)."""
    return (mmh3.hash64(kept.encode("utf-8"), KEPT_SEED, signed=False)[0] & ~SHORT_FLAG) | SHORT_FLAG


def text_sketches(texts: Sequence[str], others: Sequence[int | None] | None = None,
                  chars: Sequence[int | None] | None = None,
                  bodies: Sequence[str | None] | None = None) -> tuple[list[int], list[str]]:
    """Per text, its sketch and kept text in an index with the short-text rule: for a short one
    (``shorts.is_short``; ``chars`` per text as it takes them) ``kept_sketch`` of ``stored``
    (``bodies``: per text its body where the compiled core made it, else None); for another
    ``others``' (the confirmation's sketch, confirm.py; None: 0) with bit 0 cleared, and "".
    Copies are made once."""
    made: dict[str, str] = {}
    sketches, kepts = [], []
    none = [None] * len(texts)
    for text, other, n, done in zip(texts, others or none, chars or none, bodies or none):
        if text not in made:
            made[text] = stored(text, done) if is_short(text, n) else ""
        kept = made[text]
        sketches.append(kept_sketch(kept) if kept else (other or 0) & ~SHORT_FLAG)
        kepts.append(kept)
    return sketches, kepts


@lru_cache(maxsize=1 << 15)
def _parts(kept: str) -> tuple[frozenset, tuple]:
    """The words (a set) and the numbers (sorted: as many of each, in any order) of a ``stored`` text."""
    return frozenset(_WORD.findall(kept)), tuple(sorted(_NUMBER.findall(kept)))


def words(kept: str) -> frozenset:
    """The words of a ``stored`` text: each CJK character alone, runs of digits, runs of other letters."""
    return _parts(kept)[0]


def numbers(kept: str) -> tuple:
    """The numbers of a ``stored`` text, sorted: runs of digits, runs of Chinese numerals."""
    return _parts(kept)[1]


def misspelled(x: str, y: str) -> bool:
    """Whether two words are one misspelled as the other: runs of letters, the longer
    ``TYPO_LETTERS`` letters or more, one letter replaced, added or left out, or two side by
    side swapped."""
    if x == y or abs(len(x) - len(y)) > 1 or max(len(x), len(y)) < TYPO_LETTERS or not (x + y).isalpha():
        return False
    i = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
    if len(x) != len(y):
        shorter, longer = sorted((x, y), key=len)
        return shorter[i:] == longer[i + 1:]
    return x[i + 1:] == y[i + 1:] or (x[i + 2:] == y[i + 2:] and x[i:i + 2] == y[i + 1::-1][:2])


def _typo(wa: frozenset, wb: frozenset) -> tuple[str, str] | None:
    """The one misspelled word that keeps two texts' words from being one among the other's
    (its form in each), or None: the shorter text has ``TYPO_WORDS`` words or more, one text
    has exactly one word the other lacks, and the other has that word misspelled."""
    if min(len(wa), len(wb)) < TYPO_WORDS:
        return None
    only_a, only_b = wa - wb, wb - wa
    for one, others, flipped in ((only_a, only_b, False), (only_b, only_a, True)):
        if len(one) == 1:
            x = next(iter(one))
            y = next((y for y in sorted(others) if misspelled(x, y)), None)
            if y is not None:
                return (y, x) if flipped else (x, y)
    return None


def near(a: str, b: str) -> bool:
    """Whether two short texts (each ``stored``) are near: the same numbers (as many of each, in any
    order), and the words of one all among the other's, but for one misspelled word (``_typo``)."""
    (wa, na), (wb, nb) = _parts(a), _parts(b)
    return na == nb and (wa <= wb or wb <= wa or _typo(wa, wb) is not None)


def reason(a: str, b: str) -> str:
    """Why two short texts (each ``stored``) are near or not, in words: the numbers that differ,
    or the words each has that the other lacks (at most 5 of each), or that they are near."""
    (wa, na), (wb, nb) = _parts(a), _parts(b)
    if na != nb:
        return f"other numbers: {' '.join(na) or 'none'} against {' '.join(nb) or 'none'}"
    only_a, only_b = sorted(wa - wb), sorted(wb - wa)
    if only_a and only_b:
        typo = _typo(wa, wb)
        if typo is not None:
            return f"the same numbers, and the words of one among the other's but one misspelled: {typo[0]} / {typo[1]}"
        return f"words of each the other lacks: {' '.join(only_a[:5])} against {' '.join(only_b[:5])}"
    return "the same numbers, and the words of one among the other's"
