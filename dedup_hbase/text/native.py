"""The compiled fingerprint core (the ``dedup-hbase-core`` distribution, module
``dedup_hbase_core``, built from ``native/``), when it is installed and usable.

The core does the whole text-to-fingerprint path of the ``jieba`` (version 2) and
``shingles`` (version 1) featurizers, bit for bit as the Python code does, on as many cores
as a batch call is given (``scripts/bench fingerprint`` measures it against the reference;
docs/native-core.md). The Python code stays the reference and the fallback: ``Fingerprinter``
uses the core when ``core_for`` gives one, and its own code otherwise. The core is refused, with
the reason ``describe()`` tells, when

* it is not installed (``pip install ./native '.[fast]'`` in the dedup-hbase folder, see the README),
* ``DEDUP_HBASE_NATIVE=0`` is set,
* it was built with another Unicode version than this interpreter's (its character
  tables come from the Python it was built for),
* it mirrors other featurizer versions or other boilerplate patterns than this package's.

``JiebaFeaturizer(fast=False)`` always takes the Python path (it is the reference).
A text with a lone surrogate (possible in a ``str``, never in UTF-8) cannot enter the core:
that text alone is fingerprinted by the reference, so the answer is the reference's.
"""

from __future__ import annotations

import importlib.util
import os
import unicodedata
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np

from ..errors import EmptyDocument

ENV = "DEDUP_HBASE_NATIVE"
_OK, _EMPTY, _NO_FEATURES, _SURROGATE, _NULL, _NOT_UTF8 = range(6)
_NO_BODY = (1 << 32) - 1  # a body length the core does not know (fingerprint_bodies)
NO_TEXT = "no text"  # a null of an Arrow string array (jobs/batches.py's word for a record without one)
NOT_UTF8 = "not UTF-8"


@cache
def _load():
    """(the core module or None, why not)"""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None, f"disabled by {ENV}=0"
    try:
        import dedup_hbase_core as core
    except ImportError:
        return None, "not installed (pip install ./native '.[fast]' in the dedup-hbase folder, with cargo; see the README)"
    from . import boilerplate
    from .features import JiebaFeaturizer, ShingleFeaturizer

    if core.UNIDATA_VERSION != unicodedata.unidata_version:
        return None, (f"built with Unicode {core.UNIDATA_VERSION} (Python {core.BUILT_FOR_PYTHON}), this Python "
                      f"has Unicode {unicodedata.unidata_version}: rebuild it (scripts/setup)")
    if (core.JIEBA_VERSION, core.SHINGLES_VERSION) != (JiebaFeaturizer.VERSION, ShingleFeaturizer.VERSION):
        return None, (f"it mirrors featurizers jieba {core.JIEBA_VERSION} and shingles {core.SHINGLES_VERSION}, "
                      f"this package has {JiebaFeaturizer.VERSION} and {ShingleFeaturizer.VERSION}")
    changed = sorted(name for name, pattern in core.PATTERNS.items()
                     if getattr(boilerplate, name).pattern != pattern)
    if changed:
        return None, f"boilerplate.py's patterns {', '.join(changed)} differ from the core's: rebuild the core"
    return core, ""


def usable_core():
    """The compiled core's module when it is usable (built for these patterns, not disabled), else None."""
    return _load()[0]


def line_rule() -> Callable[[str], str | None]:
    """``boilerplate.boilerplate_reason``: the core's when it is usable (the same answers,
    tests/test_native.py; a fifth of the time), else the reference (and for a line with a lone
    surrogate, which the core cannot take)."""
    from .boilerplate import boilerplate_reason

    core, _ = _load()
    if core is None:
        return boilerplate_reason

    def rule(line: str) -> str | None:
        try:
            return core.boilerplate_reason(line)
        except ValueError:  # a lone surrogate
            return boilerplate_reason(line)
    return rule


def describe() -> str:
    """Which fingerprint path is in use, for ``--version`` and ``stats``."""
    core, why = _load()
    if core is None:
        return f"Python reference (compiled core: {why})"
    return f"compiled core dedup-hbase-core {core.__version__} (Unicode {core.UNIDATA_VERSION})"


def jieba_data() -> tuple[Path, Path]:
    """The Python jieba package's dictionary and IDF table (found without importing jieba)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jieba is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "dict.txt", root / "analyse" / "idf.txt"


def core_for(featurizer, seed: int, reference: Callable[[str], int]) -> NativeFingerprinter | None:
    """The core's fingerprinter for ``featurizer`` and ``seed``, or None when the core is
    not usable or does not mirror this featurizer. ``reference`` fingerprints a text the
    core cannot take (a lone surrogate) the Python way."""
    core, _ = _load()
    if core is None:
        return None
    from .features import STOP_WORDS, JiebaFeaturizer, ShingleFeaturizer

    kind = type(featurizer)
    if kind is JiebaFeaturizer and featurizer.fast and featurizer.GRAM == 4:
        dict_path, idf_path = jieba_data()
        return NativeFingerprinter(lambda: core.Jieba(str(dict_path), str(idf_path), sorted(STOP_WORDS)),
                                   seed, reference)
    if kind is ShingleFeaturizer:
        return NativeFingerprinter(lambda: core.Shingles(featurizer.n), seed, reference)
    return None


class NativeFingerprinter:
    """One featurizer of the core with one seed. The core object (for jieba: the
    dictionary and IDF table, about 0.4 s) loads on first use."""

    def __init__(self, make: Callable, seed: int, reference: Callable[[str], int]) -> None:
        self._make = make
        self._core = None
        self.seed = seed
        self.reference = reference  # the Python path, for a text with a lone surrogate

    @property
    def core(self):
        if self._core is None:
            self._core = self._make()
        return self._core

    def features(self, text: str) -> dict[str, int]:
        return self.core.features(text)

    def fingerprint(self, text: str) -> int:
        """SimHash of ``text``; EmptyDocument as the reference raises it."""
        value, status = self.core.fingerprint(text, self.seed)
        if status == _OK:
            return value
        if status == _SURROGATE:
            return self.reference(text)
        raise EmptyDocument(EmptyDocument.EMPTY_TEXT if status == _EMPTY else EmptyDocument.NO_FEATURES)

    def margins(self, text: str) -> np.ndarray | None:
        """``Fingerprinter.margins(text)`` (int64, 64, most significant bit first); None for a
        text with a lone surrogate (the reference takes it); EmptyDocument as ``fingerprint``."""
        values, status = self.core.margins(text, self.seed)
        if status == _OK:
            return np.array(values, dtype=np.int64)
        if status == _SURROGATE:
            return None
        raise EmptyDocument(EmptyDocument.EMPTY_TEXT if status == _EMPTY else EmptyDocument.NO_FEATURES)

    def fingerprint_many(self, texts: Sequence[str], threads: int = 1) -> tuple[np.ndarray, dict[int, str]]:
        """Fingerprints of ``texts`` (uint64, 0 where there is none) and, by position,
        the EmptyDocument message of each text without one. The GIL is released while
        the core works; with ``threads`` > 1 that many threads share the batch, each
        taking a few texts at a time until none is left (a long text holds up only its
        own thread). The texts' UTF-8 is taken on the calling thread first."""
        return self.fingerprint_bodies(texts, threads)[:2]

    def fingerprint_bodies(self, texts: Sequence[str], threads: int = 1,
                           keep_below: int = 0) -> tuple[np.ndarray, dict[int, str], list, list]:
        """``fingerprint_many``, and per text the characters of its body that are not white
        space (``len(shorts.squeezed(text))``), as the jieba featurizer took the body, or None
        (no fingerprint, a featurizer of no body, a text the reference fingerprinted); and the
        body itself (``shorts.body(text)``) where those are fewer than ``keep_below``, else None."""
        hashes, status, bodies, kept = self.core.fingerprint_batch(texts if isinstance(texts, list) else list(texts),
                                                                   self.seed, threads, keep_below)
        chars = [None if n == _NO_BODY else n for n in np.frombuffer(bodies, dtype="<u4").tolist()]
        out = np.frombuffer(hashes, dtype="<u8").astype(np.uint64)
        codes = np.frombuffer(status, dtype=np.uint8)
        errors: dict[int, str] = {}
        for i in np.flatnonzero(codes).tolist():
            if codes[i] == _SURROGATE:
                try:
                    out[i] = self.reference(texts[i])
                except EmptyDocument as e:
                    errors[i] = str(e)
            else:
                errors[i] = EmptyDocument.EMPTY_TEXT if codes[i] == _EMPTY else EmptyDocument.NO_FEATURES
        return out, errors, chars, kept

    def fingerprint_arrow(self, array, threads: int = 1) -> tuple[np.ndarray, dict[int, str]]:
        """``fingerprint_many`` of a pyarrow ``string`` or ``large_string`` array, read from its
        buffers (no Python ``str`` per text; a slice's offset honoured): a null's message is
        ``NO_TEXT``, a value that is not UTF-8 (which Arrow's format forbids) ``NOT_UTF8``."""
        import pyarrow as pa

        width = 4 if pa.types.is_string(array.type) else 8 if pa.types.is_large_string(array.type) else None
        if width is None:
            raise TypeError(f"a string or large_string array, not {array.type}")
        if len(array) == 0:
            return np.zeros(0, dtype=np.uint64), {}
        validity, offsets, data = array.buffers()
        hashes, status = self.core.fingerprint_arrow(offsets, b"" if data is None else data, width, array.offset,
                                                     len(array), validity if array.null_count else None, self.seed,
                                                     threads)
        out = np.frombuffer(hashes, dtype="<u8").astype(np.uint64)
        codes = np.frombuffer(status, dtype=np.uint8)
        messages = {_EMPTY: EmptyDocument.EMPTY_TEXT, _NO_FEATURES: EmptyDocument.NO_FEATURES, _NULL: NO_TEXT,
                    _NOT_UTF8: NOT_UTF8}
        return out, {i: messages[codes[i]] for i in np.flatnonzero(codes).tolist()}
