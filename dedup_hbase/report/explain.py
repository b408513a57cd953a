"""One pair of documents explained: both fingerprints and their distance, which bits differ,
what differs between the texts, and the terms that weigh most in each fingerprint.

The differences are difflib's (``SequenceMatcher``, no junk heuristic) over the texts cut
into tokens: a run of letters or digits of a script written with spaces is one token (a
word), and every other character is a token of its own (a Han or kana character, a
punctuation mark, a space), so
English differs word by word and Chinese character by character. The terms are the
fingerprinter's features with their integer weights, the weightiest first (ties by term),
each marked as shared with the other document or its own; and the weightiest of the terms the
other document lacks (what moved the fingerprint apart): text/terms.py, which the service's
``?explain=true`` uses too.

Nothing here reads files: sources.py finds the texts, terminal.py and page.py show them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from ..text.fingerprint import Fingerprinter, to_hex
from ..text.terms import TOP, Term, differing_bits, weighted_terms, weightiest

# a word: a run of letters or digits of a script written with spaces; else one character (a
# Han or kana character, a punctuation mark, a space)
TOKEN = re.compile(r"[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]+|.", re.S)
MAX_CHARS = 20_000  # of each text compared (difflib is quadratic at worst): the rest is shown as is


@dataclass
class Side:
    id: str
    text: str
    simhash: int | None  # None: the text has no features
    terms: list[Term] = field(default_factory=list)  # the weightiest terms
    own: list[Term] = field(default_factory=list)    # the weightiest of the terms the other lacks

    def to_dict(self) -> dict:
        return {"id": self.id, "simhash": None if self.simhash is None else to_hex(self.simhash),
                "terms": [[t.term, t.weight, t.shared] for t in self.terms],
                "own_terms": [[t.term, t.weight] for t in self.own]}


@dataclass
class Pair:
    """Two documents side by side. ``pieces``: the texts cut into ``(op, a_part, b_part)``,
    op ``equal`` (the same text), ``delete`` (only a's), ``insert`` (only b's) or
    ``replace``; concatenated, the a parts give a's text and the b parts b's."""

    a: Side
    b: Side
    pieces: list[tuple[str, str, str]]

    @property
    def distance(self) -> int | None:
        return None if self.a.simhash is None or self.b.simhash is None else (self.a.simhash ^ self.b.simhash).bit_count()

    @property
    def differing_bits(self) -> list[int]:
        """The bit numbers (63 = the most significant) where the fingerprints differ."""
        return [] if self.distance is None else differing_bits(self.a.simhash, self.b.simhash)

    @property
    def similarity(self) -> float:
        """The share of both texts' characters in equal pieces (difflib's ratio, by character)."""
        same = sum(len(a) for op, a, _ in self.pieces if op == "equal")
        total = len(self.a.text) + len(self.b.text)
        return 2 * same / total if total else 1.0

    def to_dict(self) -> dict:
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "distance": self.distance,
                "differing_bits": self.differing_bits, "similarity": round(self.similarity, 4),
                "diff": [list(p) for p in self.pieces]}


def diff_pieces(a: str, b: str) -> list[tuple[str, str, str]]:
    """``a`` and ``b`` cut into ``(op, a_part, b_part)`` by difflib over tokens (``TOKEN``);
    beyond ``MAX_CHARS`` characters, the rest of each is one last ``replace`` piece (or
    ``equal`` when the rests are equal)."""
    head_a, head_b = a[:MAX_CHARS], b[:MAX_CHARS]
    ta, tb = TOKEN.findall(head_a), TOKEN.findall(head_b)
    pieces = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        pieces.append((op, "".join(ta[i1:i2]), "".join(tb[j1:j2])))
    rest_a, rest_b = a[MAX_CHARS:], b[MAX_CHARS:]
    if rest_a or rest_b:
        pieces.append(("equal" if rest_a == rest_b else "replace", rest_a, rest_b))
    return pieces


def side(doc_id: str, text: str, fingerprinter: Fingerprinter, mine: dict[str, int], theirs: dict[str, int],
         top: int) -> Side:
    simhash = fingerprinter.hasher.simhash(mine) if mine else None
    return Side(doc_id, text, simhash, *weightiest(mine, theirs, top))


def explain_pair(a_id: str, a_text: str, b_id: str, b_text: str, fingerprinter: Fingerprinter,
                 top: int = TOP) -> Pair:
    """Two documents explained (``Pair``), with the ``top`` weightiest terms of each."""
    fa, fb = weighted_terms(fingerprinter, a_text), weighted_terms(fingerprinter, b_text)
    return Pair(side(a_id, a_text, fingerprinter, fa, fb, top), side(b_id, b_text, fingerprinter, fb, fa, top),
                diff_pieces(a_text, b_text))
