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


def normalize(text: str) -> str:
    """NFKC normalisation and case folding, the first step of every featurizer."""
    return unicodedata.normalize("NFKC", text).casefold()


def _is_word(token: str) -> bool:
    """Has a letter or digit, and is not a bare number (counters, dates, times, which
    change between copies of the same text)."""
    return any(ch.isalnum() for ch in token) and not token.isdecimal()


class JiebaFeaturizer:
    """jieba words weighted by TF-IDF. The dictionary loads on first use (about 1 s)."""

    name = "jieba"
    VERSION = 1

    def __init__(self, hmm: bool = True) -> None:
        self.hmm = bool(hmm)

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

    def features(self, text: str) -> dict[str, int]:
        counts = Counter(
            token for token in self._tokenizer.cut(normalize(text), HMM=self.hmm)
            if token not in _STOP_WORDS and _is_word(token))
        idf, median = self._idf
        return {word: count * idf.get(word, median) for word, count in counts.items()}


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
