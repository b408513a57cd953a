"""What a fingerprint is made of, for a person: a text's terms with the integer weights the
fingerprint gives them (the featurizer's features, text/features.py), the weightiest first,
and the bits where two fingerprints differ. One implementation for the ``explain`` command and
the report (report/explain.py) and the service's ``?explain=true`` (service/handlers.py).

Terms are ranked by weight, heaviest first, ties by the term (so the same text gives the same
list). Nothing here compares texts (report/explain.py does) or reads files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .fingerprint import Fingerprinter

TOP = 10  # terms shown per document unless asked otherwise


@dataclass(frozen=True)
class Term:
    term: str
    weight: int
    shared: bool  # a feature of the other document too (False when there is no other)


def weighted_terms(fingerprinter: Fingerprinter, text: str) -> dict[str, int]:
    """The features of ``text`` with their weights, as the fingerprint weighs them."""
    return fingerprinter.featurizer.features(text)


def weightiest(mine: Mapping[str, int], theirs: Mapping[str, int], top: int = TOP) -> tuple[list[Term], list[Term]]:
    """The ``top`` weightiest of ``mine`` (each marked shared when ``theirs`` has it), and the
    ``top`` weightiest of those ``theirs`` lacks (the document's own terms)."""
    ranked = sorted(mine.items(), key=lambda item: (-item[1], item[0]))
    return ([Term(t, w, t in theirs) for t, w in ranked[:top]],
            [Term(t, w, False) for t, w in ranked if t not in theirs][:top])


def differing_bits(a: int, b: int) -> list[int]:
    """The bit numbers (63 = the most significant) where fingerprints ``a`` and ``b`` differ,
    highest first."""
    x = a ^ b
    return [bit for bit in range(63, -1, -1) if x >> bit & 1]
