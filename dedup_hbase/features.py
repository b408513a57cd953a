"""Features: text -> ``{feature: integer weight}``.

Two featurizers, both starting from the same normalisation (Unicode NFKC, then case
folding):

* ``jieba``: words from a ``jieba.Tokenizer`` owned by the featurizer (never jieba's
  module-level one), punctuation, white space, bare numbers and stop words dropped, weight =
  term count x IDF from jieba's bundled table (unknown words get the table's median),
  with the IDF fixed to thousandths so the weight is an exact integer.
* ``shingles``: overlapping character n-grams (default 4) of the letters and digits
  of the text, weight = count. No segmentation: fast, and language-agnostic.

A featurizer's ``spec`` (name, version, parameters) is stored with an index; bump
``VERSION`` whenever the output of ``features`` can change.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Any

_STOP_WORDS = frozenset(
    """的 了 和 是 在 也 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 它们 这 那 之 其
    以 于 为 对 把 被 让 从 向 等 但 并 很 则 又 所 这个 那个 这些 那些 这样 已经 以及 而且 因为
    所以 如果 虽然 但是 还是 可以 就是 不是 什么 自己 他 她 它 我 你 啊 吧 呢 吗 哦 嗯 呀 个 地 得
    a an the of is are was were be been being and or but if then so to in on at by for with
    from as that this these those it its into than not no do does did have has had i you he
    she we they them his her our their which who whom what when where how all can will would
    should could may might must shall there here""".split())


_CACHE_LIMIT = 1 << 20


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
    """Has a letter or digit, and is not a bare number (counters, dates, times, which
    change between copies of the same text)."""
    return any(ch.isalnum() for ch in token) and not token.isdecimal()


# ASCII runs that jieba and rjieba (its Rust port) segment alike: plain letters and
# digits, a number with one decimal point and an optional %, a run of symbols alone,
# a word with a trailing full stop. Anything else (s-300, e.g., 8.1zb, well-known)
# they may split differently, so such documents take the reference path.
_ASCII_RUN = re.compile(r"[a-z0-9+#&._%\-]+")
_SAME_IN_BOTH = re.compile(r"[a-z0-9]+|[0-9]+(?:\.[0-9]+)?%?|[+#&._%\-]+|[a-z0-9]+\.")
# Letters and digits outside jieba's Han range and ASCII (kana, hangul, Cyrillic, rarer
# CJK ideographs ...): the two implementations were not compared on them.
_UNCOMPARED = re.compile(r"[^\u4e00-\u9fd5a-z0-9\W_]")


def fast_path_safe(normalized: str) -> bool:
    """True when rjieba is known to segment ``normalized`` exactly as jieba does."""
    if _UNCOMPARED.search(normalized):
        return False
    return all(_SAME_IN_BOTH.fullmatch(run) for run in _ASCII_RUN.findall(normalized))


class JiebaFeaturizer:
    """jieba words weighted by TF-IDF. The dictionary loads on first use (about 1 s).

    jieba is the reference. When rjieba (jieba's Rust port, ~15x faster) is installed
    and ``fast`` is true, documents that ``fast_path_safe`` accepts are segmented by
    rjieba, the others by jieba: each document by one of them, never a mix, and the
    features are the same either way (tests/test_fast_path.py checks every document of
    the shared corpora). ``fast`` is not part of the spec: it changes speed, not output.
    """

    name = "jieba"
    VERSION = 1

    def __init__(self, hmm: bool = True, fast: bool = True) -> None:
        self.hmm = bool(hmm)
        self.fast = bool(fast)
        self._weights: dict[str, int] = {}  # word -> its IDF, or 0 when it is not a feature

    @property
    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.VERSION, "params": {"hmm": self.hmm}}

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
        if not (self.fast and self.hmm):
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
        """The words of normalised ``text``, as jieba segments them."""
        fast = self._fast_tokenizer
        if fast is not None and fast_path_safe(text):
            return fast.cut(text, True)
        return list(self._tokenizer.cut(text, HMM=self.hmm))

    def features(self, text: str) -> dict[str, int]:
        weights = self._weights
        out = {}
        for word, count in Counter(self.words(normalize(text))).items():
            weight = weights.get(word)
            if weight is None:
                weight = self._weight(word)
            if weight:
                out[word] = count * weight
        return out

    def _weight(self, word: str) -> int:
        idf, median = self._idf
        weight = idf.get(word, median) if word not in _STOP_WORDS and _is_word(word) else 0
        if len(self._weights) < _CACHE_LIMIT:
            self._weights[word] = weight
        return weight


class ShingleFeaturizer:
    """Character n-grams of the letters and digits of the text, weighted by count."""

    name = "shingles"
    VERSION = 1

    def __init__(self, n: int = 4) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 16:
            raise ValueError(f"shingle size must be between 1 and 16, not {n!r}")
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


def make_featurizer(name: str = "jieba", **params: Any):
    """A featurizer by name (``jieba`` or ``shingles``) with its parameters."""
    try:
        cls = FEATURIZERS[name]
    except KeyError:
        raise ValueError(
            f"unknown featurizer {name!r}: choose one of {', '.join(FEATURIZERS)}") from None
    return cls(**params)


def featurizer_from_spec(spec: dict[str, Any]):
    """Rebuild the featurizer an index was made with; refuse another version."""
    featurizer = make_featurizer(spec["name"], **spec.get("params", {}))
    if spec.get("version") != featurizer.VERSION:
        from .errors import IndexMismatch

        raise IndexMismatch(
            f"the index was built with featurizer {spec['name']} version {spec.get('version')}, "
            f"this dedup-hbase has version {featurizer.VERSION}: fingerprints from different "
            "featurizer versions are not comparable; build a new index")
    return featurizer


def _quiet_jieba() -> None:
    """Undo the stderr handler and DEBUG level jieba installs on import."""
    import jieba

    logger = logging.getLogger("jieba")
    logger.removeHandler(jieba.log_console)
    logger.setLevel(logging.NOTSET)
