"""64-bit weighted SimHash over weighted features, and the helpers around it.

Every feature (a word or a character shingle, as text) is hashed with
``mmh3.hash64(feature.encode("utf-8"), seed, signed=False)[0]`` (seed 0 by default;
the seed is part of the index metadata). Bit i of the fingerprint is 1 when the
features whose hash has bit i set weigh more than the features whose hash has it
clear. Weights are integers, so the sums are exact and the fingerprint does not
depend on summation order, CPU or process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property

import mmh3
import numpy as np

from ..errors import EmptyDocument, InvalidInput
from .features import featurizer_from_spec, make_featurizer

DEFAULT_SEED = 0
_CACHE_LIMIT = 1 << 20
_HEX_DIGITS = re.compile("[0-9a-f]{16}")


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def to_hex(simhash: int) -> str:
    """16 lower-case hex digits."""
    return f"{simhash:016x}"


def parse_hex(text: str) -> int:
    """Parse exactly 16 hex digits (an optional ``0x`` is allowed) into an int."""
    digits = text.strip().lower().removeprefix("0x")
    if _HEX_DIGITS.fullmatch(digits) is None:  # ASCII digits only (int() takes others), no sign, no _
        raise InvalidInput(f"a simhash is 16 hex digits, not {text!r}")
    return int(digits, 16)


def simhash_of_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """SimHash of feature hashes (uint64) with integer weights (int64), vectorised."""
    if len(hashes) == 0:
        raise EmptyDocument("no features")
    # Row j of `bits` holds the 64 bits of hash j, most significant first.
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
    set_weight = weights @ bits
    ones = 2 * set_weight > int(weights.sum())
    return int.from_bytes(np.packbits(ones).tobytes(), "big")


def margins_of(hasher: "Hasher", weighted: Mapping[str, int]) -> np.ndarray:
    """``Fingerprinter.margins`` of ``{feature: integer weight}`` (not empty): per bit, most
    significant first, twice the weight of the features whose hash has it set minus the weight
    of all (int64, wrapping as ``simhash_of_hashes``'s sums)."""
    hashes = np.array([hasher.hash(f) for f in weighted], dtype=np.uint64)
    weights = np.fromiter(weighted.values(), np.int64, len(weighted))
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
    return 2 * (weights @ bits) - weights.sum()


class Hasher:
    """Feature hashing with a per-instance cache of token hashes (no module state)."""

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        if not isinstance(seed, int) or not 0 <= seed < 2**32:
            raise InvalidInput(f"seed must be an unsigned 32-bit integer, not {seed!r}")
        self.seed = seed
        self._cache: dict[str, int] = {}

    def hash(self, feature: str) -> int:
        value = self._cache.get(feature)
        if value is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            value = mmh3.hash64(feature.encode("utf-8"), self.seed, signed=False)[0]
            self._cache[feature] = value
        return value

    def simhash(self, weighted: Mapping[str, int]) -> int:
        """Fingerprint of ``{feature: integer weight}``; raises EmptyDocument if empty."""
        if not weighted:
            raise EmptyDocument("no features")
        cache = self._cache
        hashes = np.array([cache.get(f) or self.hash(f) for f in weighted], dtype=np.uint64)
        weights = np.fromiter(weighted.values(), np.int64, len(weighted))
        return simhash_of_hashes(hashes, weights)


class Fingerprinter:
    """Text -> 64-bit SimHash, for one featurizer and one hash seed.

    ``spec`` identifies the pair; indexes store it and refuse any other. With ``native``
    (the default) the compiled core computes the same fingerprints when it is installed
    and mirrors the featurizer (``dedup_hbase.text.native``); this class's own code is the
    reference and the fallback.
    """

    def __init__(self, featurizer, seed: int = DEFAULT_SEED, native: bool = True) -> None:
        self.featurizer = featurizer
        self.hasher = Hasher(seed)
        self.native = native

    @property
    def spec(self) -> dict:
        return {**self.featurizer.spec, "seed": self.hasher.seed}

    @property
    def label(self) -> str:
        """``spec`` in one short string (``spec_label``), as fingerprint records carry it."""
        return spec_label(self.spec)

    @cached_property
    def _core(self):
        """The compiled core's fingerprinter, or None (the Python path)."""
        if not self.native:
            return None
        from .native import core_for

        return core_for(self.featurizer, self.hasher.seed, self._reference)

    @property
    def uses_core(self) -> bool:
        """True when the compiled core computes this fingerprinter's fingerprints."""
        return self._core is not None

    @property
    def core(self):
        """The compiled core's fingerprinter (``native.NativeFingerprinter``), or None on the
        Python path."""
        return self._core

    def fingerprint(self, text: str) -> int:
        """SimHash of ``text``; raises EmptyDocument when it has no features."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        core = self._core
        if core is not None:
            return core.fingerprint(text)
        return self._reference(text)

    def fingerprint_many(self, texts: list[str], threads: int = 1) -> tuple[np.ndarray, dict[int, str]]:
        """Fingerprints of a batch (uint64, 0 where there is none) and, by position, why
        each text without one has none (the EmptyDocument message).

        With the compiled core, ``threads`` threads share the batch (the GIL released),
        each taking a few texts at a time until none is left: give it the cores the caller
        owns. The Python path runs on the calling thread whatever ``threads`` says (the
        GIL would serialise its threads); processes are its way to use more cores."""
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InvalidInput(f"threads must be a positive integer, not {threads!r}")
        core = self._core
        if core is not None:
            return core.fingerprint_many(texts, threads)
        out, errors = np.zeros(len(texts), dtype=np.uint64), {}
        for i, text in enumerate(texts):
            try:
                out[i] = self.fingerprint(text)
            except EmptyDocument as e:
                errors[i] = str(e)
        return out, errors

    def fingerprint_bodies(self, texts: list[str], threads: int = 1,
                           keep_below: int = 0) -> tuple[np.ndarray, dict[int, str], list, list]:
        """``fingerprint_many``, and per text its body's characters without white space
        (``len(shorts.squeezed(text))``) where the compiled core's featurizer took the body on
        the way, else None (the Python path: text/shorts.py takes it itself); and the body
        (``shorts.body(text)``) where those are fewer than ``keep_below``, else None."""
        if self._core is not None:
            if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
                raise InvalidInput(f"threads must be a positive integer, not {threads!r}")
            return self._core.fingerprint_bodies(texts, threads, keep_below)
        return (*self.fingerprint_many(texts, threads), [None] * len(texts), [None] * len(texts))

    def fingerprint_arrow(self, array, threads: int = 1) -> tuple[np.ndarray, dict[int, str]]:
        """``fingerprint_many`` of a pyarrow ``string`` or ``large_string`` array (a slice too),
        a null's message ``native.NO_TEXT``. With the compiled core, it reads the array's
        buffers (no Python ``str`` per text; ``threads`` as ``fingerprint_many``'s); the Python
        path takes the texts as ``str``s (``to_pylist``). Other array types are a TypeError."""
        from .native import NO_TEXT

        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InvalidInput(f"threads must be a positive integer, not {threads!r}")
        core = self._core
        if core is not None:
            return core.fingerprint_arrow(array, threads)
        import pyarrow as pa

        if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
            raise TypeError(f"a string or large_string array, not {array.type}")
        texts = array.to_pylist()
        present = [i for i, t in enumerate(texts) if t is not None]
        found, errors = self.fingerprint_many([texts[i] for i in present], threads)
        out = np.zeros(len(texts), dtype=np.uint64)
        out[present] = found
        missing = {i: NO_TEXT for i, t in enumerate(texts) if t is None}
        return out, {**missing, **{present[j]: why for j, why in errors.items()}}

    def margins(self, text: str) -> np.ndarray:
        """How sure each bit of ``text``'s SimHash is, most significant bit first (int64, 64):
        twice the weight of the features whose hash has the bit set, minus the weight of all.
        A bit is 1 exactly where its margin is positive; a margin near 0 is a bit that a small
        edit flips. Raises EmptyDocument as ``fingerprint`` does. The compiled core's when it
        is installed (tests/test_native.py: the same numbers)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        core = self._core
        found = core.margins(text) if core is not None else None
        return self._reference_margins(text) if found is None else found

    def _reference_margins(self, text: str) -> np.ndarray:
        weighted = self.featurizer.features(text)
        if not weighted:
            raise EmptyDocument(EmptyDocument.EMPTY_TEXT if not text.strip() else EmptyDocument.NO_FEATURES)
        return margins_of(self.hasher, weighted)

    def uncertain_bits(self, text: str, count: int) -> tuple[int, ...]:
        """The ``count`` least sure bits of ``text``'s SimHash (``margins`` nearest 0; on a tie
        the more significant), each as its mask (``1 << 63`` the most significant)."""
        order = np.argsort(np.abs(self.margins(text)), kind="stable")[:count]
        return tuple(1 << (63 - int(i)) for i in order)

    def _reference(self, text: str) -> int:
        weighted = self.featurizer.features(text)
        if not weighted:
            raise EmptyDocument(EmptyDocument.EMPTY_TEXT if not text.strip() else EmptyDocument.NO_FEATURES)
        return self.hasher.simhash(weighted)


def spec_label(spec: Mapping) -> str:
    """A featurizer spec in one short string, as fingerprint records carry it:
    ``jieba/2;seed=0``, ``shingles/1;n=4;seed=0`` (name/version, parameters, seed)."""
    params = [f"{k}={v}" for k, v in sorted(spec.get("params", {}).items())]
    return ";".join([f"{spec['name']}/{spec.get('version')}", *params, f"seed={spec.get('seed', DEFAULT_SEED)}"])


def describe_spec(spec: Mapping) -> str:
    """A featurizer spec for people: ``jieba v2 (seed 0)``, ``shingles v1 (n=4; seed 0)``."""
    params = [f"{k}={v}" for k, v in spec.get("params", {}).items()]
    params.append(f"seed {spec.get('seed', DEFAULT_SEED)}")
    return f"{spec['name']} v{spec.get('version')} ({'; '.join(params)})"


def fingerprinter_from_spec(spec: Mapping, native: bool = True) -> Fingerprinter:
    """The fingerprinter an index records as its ``spec`` (featurizer, version, parameters,
    seed); refuses another featurizer version (features.featurizer_from_spec)."""
    return Fingerprinter(featurizer_from_spec(spec), spec.get("seed", DEFAULT_SEED), native)


def make_fingerprinter(featurizer: str | None = None, *, shingle_size: int | None = None,
                       seed: int | None = None) -> Fingerprinter:
    """A fingerprinter by options: ``featurizer`` jieba (default) or shingles (implied by
    ``shingle_size``), with its shingle size (default 4) and the mmh3 seed (default 0)."""
    name = featurizer or ("shingles" if shingle_size is not None else "jieba")
    if shingle_size is not None and name != "shingles":
        raise InvalidInput(f"a shingle size applies to the shingles featurizer, not to {name}")
    params = {"n": shingle_size} if shingle_size is not None else {}
    return Fingerprinter(make_featurizer(name, **params), DEFAULT_SEED if seed is None else seed)
