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

Beside the bits apart, a text measure that does not use the fingerprint: the character-bigram
Jaccard of the two bodies (``shorts.similarity``, what docs/quality.md judges a drop by: below
0.5 unrelated), so a false pair shows at a glance. And the short-text rule (text/units.py): each
text's squeezed body length against ``SHORT_BELOW``, a short one's kept text, and, with the rule
on (``groups``/``init --short-texts on``, the default), what ``units.near``, the index's rule,
decides for the pair and why (``rule_lines``).

Nothing here reads files: sources.py finds the texts, terminal.py and page.py show them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from ..text.fingerprint import Fingerprinter, to_hex
from ..text.shorts import SHORT_BELOW, similarity, squeezed
from ..text.terms import TOP, Term, differing_bits, weighted_terms, weightiest
from ..text.units import near, reason, stored

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
    length: int = 0              # characters of the squeezed body (shorts.squeezed)
    kept: str | None = None      # a short text as the rule keeps it (units.stored); None: not short

    @property
    def short(self) -> bool:
        return self.length < SHORT_BELOW

    def to_dict(self) -> dict:
        return {"id": self.id, "simhash": None if self.simhash is None else to_hex(self.simhash),
                "terms": [[t.term, t.weight, t.shared] for t in self.terms],
                "own_terms": [[t.term, t.weight] for t in self.own], "length": self.length, "short": self.short,
                "kept": self.kept}


@dataclass
class Pair:
    """Two documents side by side. ``pieces``: the texts cut into ``(op, a_part, b_part)``,
    op ``equal`` (the same text), ``delete`` (only a's), ``insert`` (only b's) or
    ``replace``; concatenated, the a parts give a's text and the b parts b's."""

    a: Side
    b: Side
    pieces: list[tuple[str, str, str]]
    bigrams: float = 0.0             # the character-bigram Jaccard of the bodies (shorts.similarity)
    short_texts: str | None = None   # the short-text rule the pair is judged under ("words"); None: off

    @property
    def short_near(self) -> bool | None:
        """With ``short_texts``, whether the short-text rule lets the pair match (either short: both
        are, and ``units.near``); None: the rule is off or neither text is short."""
        if self.short_texts is None or not (self.a.short or self.b.short):
            return None
        return self.a.kept is not None and self.b.kept is not None and near(self.a.kept, self.b.kept)

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
                "bigram_jaccard": round(self.bigrams, 4), "short_texts": self.short_texts,
                "short_near": self.short_near,
                "short_rule": rule_lines(self), "diff": [list(p) for p in self.pieces]}


def rule_lines(pair: Pair) -> list[str]:
    """What the short-text rule says of ``pair``: a line per short text (its body's length), then
    the decision under ``pair.short_texts`` and why; no line when neither text is short and the
    rule is off."""
    a, b = pair.a, pair.b
    lines = [f"{d.id}: short, {d.length:,} characters (under {SHORT_BELOW})" for d in (a, b) if d.kept is not None]
    both = a.kept is not None and b.kept is not None
    if pair.short_texts is None:
        if lines:
            said = f"{reason(a.kept, b.kept)}; " if both else ""
            lines.append(f"short-text rule off: {said}the fingerprints alone decide (groups/init --short-texts on)")
        return lines
    if not (a.short or b.short):
        return [f"the short-text rule does not apply: neither text is short ({a.length:,} and {b.length:,} "
                f"characters, not under {SHORT_BELOW}); the fingerprints decide"]
    if not both:
        short, other = (a, b) if a.short else (b, a)
        return lines + [f"not near under the short-text rule: {short.id} is short, {other.id} is not "
                        f"({other.length:,} characters): a short text matches only a short one"]
    verdict = "near" if pair.short_near else "not near"
    return lines + [f"{verdict} under the short-text rule: {reason(a.kept, b.kept)}"]


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


def shortness(text: str) -> dict:
    """``text``'s squeezed body length and, when short, its kept text (Side's fields)."""
    length = len(squeezed(text))
    return {"length": length, "kept": stored(text) if length < SHORT_BELOW else None}


def side(doc_id: str, text: str, fingerprinter: Fingerprinter, mine: dict[str, int], theirs: dict[str, int],
         top: int) -> Side:
    simhash = fingerprinter.hasher.simhash(mine) if mine else None
    return Side(doc_id, text, simhash, *weightiest(mine, theirs, top), **shortness(text))


def explain_document(doc_id: str, text: str, fingerprinter: Fingerprinter, top: int = TOP) -> Side:
    """One document explained: its fingerprint, its ``top`` weightiest terms, its body's length
    and, when short, its kept text."""
    mine = weighted_terms(fingerprinter, text)
    return Side(doc_id, text, fingerprinter.hasher.simhash(mine) if mine else None,
                weightiest(mine, {}, top)[0], **shortness(text))


def document_lines(doc: Side, short_texts: str | None) -> list[str]:
    """What the short-text rule says of one document: short or not (its body's length against
    ``SHORT_BELOW``), a short one's kept text, and what it may match with the rule on."""
    if doc.kept is not None:
        lines = [f"{doc.id}: short, {doc.length:,} characters (under {SHORT_BELOW}), kept as {doc.kept!r}"]
        rule = ("short-text rule: it matches only a short text with the same numbers, of which its words are "
                "all among the other's or the other's among its (but one misspelled), at any distance") if short_texts is not None else None
    else:
        lines = [f"{doc.id}: not short, {doc.length:,} characters (not under {SHORT_BELOW})"]
        rule = ("short-text rule: no short text matches it; the fingerprints decide, as without "
                "the rule") if short_texts is not None else None
    return lines + [rule or "short-text rule off: the fingerprints alone decide (groups/init --short-texts on)"]


def texts_pair(a_id: str, a_text: str, b_id: str, b_text: str, pieces: list[tuple[str, str, str]],
               short_texts: str | None = None) -> Pair:
    """Two texts compared without a fingerprinter (the report page's pairs: their distance is the
    groups output's): ``pieces``, the bigram Jaccard and the short-text rule, no terms."""
    return Pair(Side(a_id, a_text, None, **shortness(a_text)), Side(b_id, b_text, None, **shortness(b_text)),
                pieces, similarity(a_text, b_text), short_texts)


def explain_pair(a_id: str, a_text: str, b_id: str, b_text: str, fingerprinter: Fingerprinter,
                 top: int = TOP, short_texts: str | None = None) -> Pair:
    """Two documents explained (``Pair``), with the ``top`` weightiest terms of each, judged
    under the short-text rule ``short_texts`` ("words"; None: the rule off)."""
    fa, fb = weighted_terms(fingerprinter, a_text), weighted_terms(fingerprinter, b_text)
    return Pair(side(a_id, a_text, fingerprinter, fa, fb, top), side(b_id, b_text, fingerprinter, fb, fa, top),
                diff_pieces(a_text, b_text), similarity(a_text, b_text), short_texts)
