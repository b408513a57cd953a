"""Signatures: which parts of a document are fingerprinted, each into a SimHash of its own.

One SimHash within k bits needs two texts whose weighted features are nearly parallel (a cosine
of about 0.99 at k = 3: docs/quality.md), and a copy that lost its last paragraphs does not have
that with its original. Its first paragraphs are still the original's, so a second signature,
the SimHash of the document's *lead*, finds it where the body's does not (Kołcz et al., KDD 2004:
several signatures per document). The signatures of an index (``body`` always first):

* ``body``: the SimHash of the whole text, what an index of one signature keeps;
* ``leadN``: the SimHash of the first N characters of the body (the text's logical lines without
  the boilerplate ones, joined by newlines: boilerplate.lead_text). When those N characters hold
  no feature (a lead of digits and punctuation), the lead's SimHash is the body's.

Every signature is made by the index's one fingerprinter; the index keeps each under flags of its
own (index/layout.py). This module does no I/O and knows nothing about indexes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import InvalidInput
from .boilerplate import lead_text
from .native import line_rule

DEFAULT = ("body",)
MAX_SIGNATURES = 4
_LEAD = re.compile(r"lead([1-9][0-9]{0,5})")


@dataclass(frozen=True)
class Signatures:
    """The signatures of an index, ``body`` first; ``Signatures.parse("body,lead150")``."""

    names: tuple[str, ...] = DEFAULT

    def __post_init__(self) -> None:
        names = self.names
        if not names or names[0] != "body":
            raise InvalidInput(f"the signatures start with body, not {','.join(names) or 'nothing'}")
        if len(names) > MAX_SIGNATURES:
            raise InvalidInput(f"at most {MAX_SIGNATURES} signatures, not {len(names)} ({','.join(names)})")
        if len(set(names)) != len(names):
            raise InvalidInput(f"a signature is named twice in {','.join(names)}")
        for name in names[1:]:
            if not _LEAD.fullmatch(name):
                raise InvalidInput(f"unknown signature {name!r}: body, or leadN for the body's first N "
                                   "characters (1 <= N <= 999999), such as lead150")

    @classmethod
    def parse(cls, text: str | list | tuple | None) -> "Signatures":
        """``"body,lead150"`` (or a list of names, as an index's metadata keeps them); None: body."""
        if text is None:
            return cls()
        names = text.split(",") if isinstance(text, str) else list(text)
        return cls(tuple(str(n).strip() for n in names))

    @property
    def spec(self) -> list[str]:
        return list(self.names)

    @property
    def label(self) -> str:
        return ",".join(self.names)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def leads(self) -> tuple[int, ...]:
        """The lead lengths in characters, one per signature after the body."""
        return tuple(int(name[4:]) for name in self.names[1:])

    def extra_texts(self, text: str) -> list[str]:
        """The texts of the signatures after the body (the body's text is ``text`` itself)."""
        if not self.leads:
            return []
        rule = line_rule()
        return [lead_text(text, n, rule) for n in self.leads]

    def more(self, fingerprint: Callable[[str], int], text: str, body: int) -> tuple[int, ...]:
        """The simhashes of ``text``'s signatures after the body (whose simhash is ``body``),
        made by ``fingerprint``; () for the body alone."""
        results: list[int | str] = []
        for part in self.extra_texts(text):
            try:
                results.append(fingerprint(part))
            except ValueError as e:  # EmptyDocument: no feature in the lead
                results.append(str(e))
        return settled(results, body)

    def probe_masks(self, fingerprinter, text: str, probes: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Per signature, the bits a lookup of ``text`` flips one at a time (``probes[j]`` of
        them: its least sure, ``Fingerprinter.uncertain_bits``); () for a signature without
        probes. A lead without a feature probes the body's bits, as its simhash is the body's."""
        out: list[tuple[int, ...]] = []
        for count, part in zip(probes, [text, *self.extra_texts(text)]):
            try:
                out.append(fingerprinter.uncertain_bits(part, count) if count else ())
            except ValueError:  # EmptyDocument: a lead without a feature
                out.append(fingerprinter.uncertain_bits(text, count))
        return tuple(out)


def settled(results: Sequence[int | str], body: int) -> tuple[int, ...]:
    """The simhashes of the signatures after the body from their fingerprinting's results (a
    simhash, or why there is none: a text without features), the body's where there is none."""
    return tuple(body if isinstance(r, str) else r for r in results)
