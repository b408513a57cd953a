"""Features: text -> ``{feature: integer weight}``.

Two featurizers, both starting from the same normalisation (Unicode NFKC, then case
folding):

* ``jieba`` (version 2, the default): the text's body (``boilerplate.body_text``: site
  navigation, time-stamp and counter lines, copyright and ad lines dropped, hard-wrapped
  lines joined), segmented by a ``jieba.Tokenizer`` owned by the featurizer (never
  jieba's module-level one) with the HMM off; words of two or more characters with a
  letter or digit that are not stop words, words of an alphabet (English ...) as their
  character 4-grams; weight = (1 + ln count) x IDF from jieba's bundled table (unknown
  words get the table's median), in thousandths, an exact integer.
* ``shingles``: overlapping character n-grams (default 4) of the letters and digits
  of the text, weight = count. No segmentation: fast, and language-agnostic.

A featurizer's ``spec`` (name, version, parameters) is stored with an index; bump
``VERSION`` whenever the output of ``features`` can change. docs/quality.md has the
measurements behind the choices of jieba version 2.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import FeaturizerVersionMismatch, InvalidInput
from .boilerplate import body_text

STOP_WORDS = frozenset(
    """的 了 和 是 在 也 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 它们 这 那 之 其
    以 于 为 对 把 被 让 从 向 等 但 并 很 则 又 所 这个 那个 这些 那些 这样 已经 以及 而且 因为
    所以 如果 虽然 但是 还是 可以 就是 不是 什么 自己 他 她 它 我 你 啊 吧 呢 吗 哦 嗯 呀 个 地 得
    a an the of is are was were be been being and or but if then so to in on at by for with
    from as that this these those it its into than not no do does did have has had i you he
    she we they them his her our their which who whom what when where how all can will would
    should could may might must shall there here""".split())


_CACHE_LIMIT = 1 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate: possible in a str, not in UTF-8


# Full-width ASCII and the ideographic space, mapped to their NFKC forms up front: Chinese
# text is full of them, and once they are gone NFKC's quick check usually passes.
_FULL_WIDTH = str.maketrans({c: unicodedata.normalize("NFKC", chr(c))
                             for c in [*range(0xFF01, 0xFF5F), 0x3000]})


def normalize(text: str) -> str:
    """NFKC normalisation and case folding, the first step of every featurizer."""
    text = text.translate(_FULL_WIDTH)  # compatibility-equivalent, so NFKC is unchanged
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text.casefold()


def _is_word(token: str) -> bool:
    """Two characters or more, at least one a letter or digit, not a stop word. Numbers
    are words: counters and time stamps are on lines of their own, which ``body_text``
    drops, and inside the body numbers tell apart reports made from the same template."""
    return len(token) >= 2 and token not in STOP_WORDS and any(ch.isalnum() for ch in token)


def _is_han(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def _is_letters(token: str) -> bool:
    """Letters (and maybe digits) of an alphabet, not a Han character: Latin, Cyrillic,
    kana, hangul ... jieba keeps ASCII words whole and cuts the others into letters."""
    return any(ch.isalpha() for ch in token) and not any(_is_han(ch) for ch in token)


def _join_letters(tokens: list[str]) -> list[str]:
    """Single letters glued back to the run of letters before them (ж, ひ, 한 ...)."""
    out: list[str] = []
    for token in tokens:
        if (len(token) == 1 and out and token.isalpha() and not _is_han(token)
                and out[-1].isalpha() and _is_letters(out[-1])):
            out[-1] += token
        else:
            out.append(token)
    return out


def _log_count(count: int) -> int:
    """1000 x (1 + ln count), rounded. round(1000 ln c) is at least 1e-7 away from a
    rounding boundary for every c <= 10^7, so every libm gives the same integer."""
    return 1000 + round(1000 * math.log(count))


class JiebaFeaturizer:
    """jieba words of the text's body weighted by sublinear TF-IDF. The dictionary loads
    on first use (about 1 s).

    * Body: ``boilerplate.body_text`` of the normalised text.
    * Terms: jieba's tokens with the HMM off, so a typo leaves dictionary words and single
      characters rather than an invented word with the high IDF of an unknown word.
      Tokens of one character, stop words and punctuation are dropped. Words with a Han
      character, and numbers, are terms as they are; a word of another alphabet (English
      ...) becomes its character 4-grams (padded with a space at each end, and marked by
      a leading space, which no word has), so a typo changes a few of a word's terms, not
      all of it.
    * Weight: (1000 + round(1000 ln count)) x IDF // 1000, IDF from jieba's table in
      thousandths (words it lacks: the median; a 4-gram: a quarter of the median).
      Sublinear counts keep a few repeated topic words from making same-topic reports
      look alike.

    jieba is the reference. When rjieba (jieba's Rust port) is installed
    and ``fast`` is true, rjieba segments instead: without the HMM it cuts exactly as
    jieba does (tests/test_fast_path.py checks every document of the shared corpora and
    random text). ``fast`` is not part of the spec: it changes speed, not output.
    """

    name = "jieba"
    VERSION = 2
    GRAM = 4  # characters per n-gram of a word of an alphabet

    def __init__(self, fast: bool = True) -> None:
        self.fast = bool(fast)
        self._terms: dict[str, tuple[str, ...]] = {}  # token -> its terms (none if not a feature)

    @property
    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.VERSION, "params": {}}

    @cached_property
    def _tokenizer(self):
        import jieba

        _quiet_jieba()
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()
        return tokenizer

    @cached_property
    def _fast_tokenizer(self):
        """An rjieba.Jieba instance of our own, or None when rjieba is absent."""
        if not self.fast:
            return None
        try:
            import rjieba
        except ImportError:
            return None
        return rjieba.Jieba()

    @cached_property
    def _idf(self) -> tuple[dict[str, int], int]:
        import jieba.analyse

        _quiet_jieba()
        path = Path(jieba.analyse.__file__).with_name("idf.txt")
        idf: dict[str, int] = {}
        for line in path.read_text("utf-8").splitlines():
            word, _, value = line.strip().partition(" ")
            if value:
                idf[word] = round(float(value) * 1000)
        median = sorted(idf.values())[len(idf) // 2]
        return idf, median

    def words(self, text: str) -> list[str]:
        """The tokens of ``text`` (normalised), as jieba cuts them with the HMM off."""
        fast = self._fast_tokenizer
        if fast is not None and not _SURROGATE.search(text):  # rjieba takes UTF-8 only
            return fast.cut(text, False)
        return list(self._tokenizer.cut(text, HMM=False))

    def features(self, text: str) -> dict[str, int]:
        cache, terms = self._terms, []
        for token in _join_letters(self.words(body_text(normalize(text)))):
            found = cache.get(token)
            if found is None:
                found = self._terms_of(token)
            terms.extend(found)
        idf, median = self._idf
        gram = median // self.GRAM
        return {term: _log_count(count) * (gram if term[0] == " " else idf.get(term, median)) // 1000
                for term, count in Counter(terms).items()}

    def _terms_of(self, token: str) -> tuple[str, ...]:
        if not _is_word(token):
            terms: tuple[str, ...] = ()
        elif _is_letters(token):
            padded, n = f" {token} ", self.GRAM
            terms = tuple(" " + padded[i:i + n] for i in range(len(padded) - n + 1))
        else:
            terms = (token,)
        if len(self._terms) >= _CACHE_LIMIT:
            self._terms.clear()
        self._terms[token] = terms
        return terms


class ShingleFeaturizer:
    """Character n-grams of the letters and digits of the text, weighted by count."""

    name = "shingles"
    VERSION = 1

    def __init__(self, n: int = 4) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 16:
            raise InvalidInput(f"shingle size must be between 1 and 16, not {n!r}")
        self.n = n

    @property
    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.VERSION, "params": {"n": self.n}}

    def features(self, text: str) -> dict[str, int]:
        chars = "".join(ch for ch in normalize(text) if ch.isalnum())
        if 0 < len(chars) < self.n:
            return {chars: 1}
        return dict(Counter(chars[i:i + self.n] for i in range(len(chars) - self.n + 1)))


FEATURIZERS = {cls.name: cls for cls in (JiebaFeaturizer, ShingleFeaturizer)}


def _featurizer_class(name: str):
    try:
        return FEATURIZERS[name]
    except KeyError:
        raise InvalidInput(
            f"unknown featurizer {name!r}: choose one of {', '.join(FEATURIZERS)}") from None


def make_featurizer(name: str = "jieba", **params: Any):
    """A featurizer by name (``jieba`` or ``shingles``) with its parameters."""
    return _featurizer_class(name)(**params)


def featurizer_from_spec(spec: dict[str, Any]):
    """Rebuild the featurizer an index was made with; refuse another version (checked
    first: another version may have other parameters)."""
    cls = _featurizer_class(spec["name"])
    if spec.get("version") != cls.VERSION:
        raise FeaturizerVersionMismatch(
            f"the index was built with featurizer {spec['name']} version {spec.get('version')}, "
            f"this dedup-hbase has version {cls.VERSION}: fingerprints from different "
            "featurizer versions are not comparable")
    return cls(**spec.get("params", {}))


def _quiet_jieba() -> None:
    """Undo the stderr handler and DEBUG level jieba installs on import."""
    import jieba

    logger = logging.getLogger("jieba")
    logger.removeHandler(jieba.log_console)
    logger.setLevel(logging.NOTSET)
