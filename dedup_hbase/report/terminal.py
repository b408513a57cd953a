"""A pair of documents, or a group, shown in a terminal.

Two texts side by side when the terminal is wide enough for two columns of ``MIN_COLUMN``
cells, else one above the other. What differs is marked: in colour on a terminal (red for
what only the left/upper text has, green for what only the other has), and, without colour
(a pipe, a file, ``--no-color``), as ``[-only a's-]`` and ``{+only b's+}``. Widths count the
cells a character takes (two for East Asian wide characters). Then the distance beside the
character-bigram Jaccard of the bodies, the bits that differ, what the short-text rule says of
the pair (explain.py's ``rule_lines``) and each text's weightiest terms (``*`` a term both texts
have).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import InvalidInput
from ..index.confirm import check_short
from ..jobs.corpus import Fields
from ..text.fingerprint import Fingerprinter
from ..text.units import WORDS
from . import sources
from .explain import Pair, Side, document_lines, explain_document, explain_pair, rule_lines

MIN_COLUMN = 40  # cells of one column, side by side
GAP = " │ "
RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"


def cells(ch: str) -> int:
    """The terminal cells of one character."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


@dataclass(frozen=True)
class Style:
    color: bool

    def marks(self, mine: str) -> tuple[str, str]:
        """The (opening, closing) marks of a piece only one side has (``mine``: "a" or "b")."""
        if self.color:
            return (RED if mine == "a" else GREEN), RESET
        return ("[-", "-]") if mine == "a" else ("{+", "+}")


def marked(pair: Pair, which: str, style: Style) -> list[tuple[str, bool]]:
    """One side's text as (token, is_mark) runs: its pieces, the ones only it has between marks."""
    runs: list[tuple[str, bool]] = []
    for op, a, b in pair.pieces:
        text = a if which == "a" else b
        if not text:
            continue
        if op == "equal":
            runs.append((text, False))
        else:
            opening, closing = style.marks(which)
            runs += [(opening, True), (text, False), (closing, True)]
    return runs


def wrap(runs: list[tuple[str, bool]], width: int, style: Style) -> list[str]:
    """``runs`` cut into lines of at most ``width`` cells (a newline in the text ends a line);
    a coloured mark open at a line's end is closed there and opened again on the next."""
    lines, line, used, open_mark = [], [], 0, ""
    for text, is_mark in runs:
        if is_mark:
            width_of = 0 if style.color else len(text)
            if used + width_of > width:
                lines.append("".join(line) + (RESET if open_mark else ""))
                line, used = [open_mark], 0
            line.append(text)
            used += width_of
            open_mark = "" if text in (RESET, "-]", "+}") else (text if style.color else "")
            continue
        for ch in text:
            if ch == "\n":
                lines.append("".join(line) + (RESET if open_mark else ""))
                line, used = [open_mark], 0
                continue
            w = cells(ch)
            if used + w > width:
                lines.append("".join(line) + (RESET if open_mark else ""))
                line, used = [open_mark], 0
            line.append(ch)
            used += w
    lines.append("".join(line))
    return lines


def visible(line: str) -> int:
    """The cells of a rendered line, colour codes left out."""
    for code in (RED, GREEN, RESET):
        line = line.replace(code, "")
    return sum(cells(ch) for ch in line)


def render_pair(pair: Pair, width: int = 100, color: bool = False, title: str = "") -> Iterator[str]:
    """The lines that show ``pair`` in a terminal ``width`` cells wide."""
    style = Style(color)
    a, b = pair.a, pair.b
    distance = "no fingerprint" if pair.distance is None else f"{pair.distance} bits"
    yield (f"{title}{a.id} ~ {b.id}: distance {distance}, bigram Jaccard {pair.bigrams:.2f}, "
           f"{pair.similarity:.0%} of the text the same")
    if pair.distance:
        yield f"  bits that differ: {', '.join(map(str, pair.differing_bits))}"
    yield f"  {a.id}: {_hex(a.simhash)}    {b.id}: {_hex(b.simhash)}"
    for line in rule_lines(pair):
        yield f"  {line}"
    column = (width - len(GAP)) // 2
    if column >= MIN_COLUMN:
        left, right = wrap(marked(pair, "a", style), column, style), wrap(marked(pair, "b", style), column, style)
        yield _cut(a.id, column) + " " * (column - visible(_cut(a.id, column))) + GAP + _cut(b.id, column)
        for i in range(max(len(left), len(right))):
            x = left[i] if i < len(left) else ""
            y = right[i] if i < len(right) else ""
            yield x + " " * (column - visible(x)) + GAP + y
    else:
        for which, doc in (("a", a), ("b", b)):
            yield f"── {doc.id}"
            yield from wrap(marked(pair, which, style), max(width, 10), style)
    yield "  terms that weigh most (* in both):"
    for doc in (a, b):
        yield f"  {doc.id}: " + ", ".join(f"{'*' if t.shared else ''}{_term(t.term)} {t.weight}" for t in doc.terms)
    if a.own or b.own:
        yield "  terms only one has, weightiest first:"
        for doc in (a, b):
            yield f"  {doc.id}: " + (", ".join(f"{_term(t.term)} {t.weight}" for t in doc.own) or "none")


def _term(term: str) -> str:
    """A term as shown: a character 4-gram of a word (a leading space marks its start) quoted."""
    return repr(term) if term != term.strip() else term


def _hex(simhash: int | None) -> str:
    return "none" if simhash is None else f"{simhash:016x}"


def _cut(text: str, width: int) -> str:
    out, used = [], 0
    for ch in text:
        used += cells(ch)
        if used > width:
            break
        out.append(ch)
    return "".join(out)


@dataclass
class Shown:
    """What ``explain`` shows: the pairs, and for a group its members (``id``, ``keep``,
    ``via``, ``distance``, in input order; empty for a pair asked for by its two ids); for one
    id alone, that ``document`` (no pairs), judged under ``short_texts``."""

    pairs: list[Pair]
    group: str | None = None
    members: list[dict] = field(default_factory=list)
    document: Side | None = None
    short_texts: str | None = None

    def to_dict(self) -> dict:
        out = {"group": self.group, "members": self.members, "pairs": [p.to_dict() for p in self.pairs]}
        if self.document is not None:
            out["document"] = {**self.document.to_dict(), "short_rule": document_lines(self.document, self.short_texts)}
        return out


def explain(paths: list[str], ids: list[str], fingerprinter: Fingerprinter, groups_dir: str | None = None,
            fmt: str = "auto", fields: Fields = Fields(), top: int = 10, max_pairs: int = 10,
            short_texts: str | None = None) -> Shown:
    """Two ids: that pair. One id and a groups output (``groups_dir``): its group, each dropped
    member beside its via (the id's own pair first, at most ``max_pairs`` pairs). One id alone:
    that document (its fingerprint, terms and the short-text rule's view of it). Texts from
    ``paths`` (the inputs of the groups job). Pairs judged under the short-text rule
    ``short_texts`` ("words"; None: off), else the one the groups output was made with (a run
    of the rule before, by character sketches, is judged under this one)."""
    short_texts = check_short(short_texts)
    if groups_dir:
        made = (sources.summary(groups_dir) or {}).get("short_texts")
        made = None if made is None else WORDS
        if short_texts is None and made is not None:
            short_texts = made
    if len(ids) == 2:
        wanted = [tuple(ids)]
        shown = Shown([])
    elif len(ids) == 1 and not groups_dir:
        texts = sources.texts_of(paths, ids, fmt, fields)
        if ids[0] not in texts:
            raise InvalidInput(f"no text for {ids[0]!r} in {', '.join(paths)}: give the inputs the document was read from")
        return Shown([], document=explain_document(ids[0], texts[ids[0]].text, fingerprinter, top), short_texts=short_texts)
    elif len(ids) == 1:
        shown = group_of(groups_dir, ids[0])
        dropped = [(m["via"], m["id"]) for m in shown.members if not m["keep"]]
        dropped.sort(key=lambda pair: pair[1] != ids[0])  # stable: the id's own pair first
        wanted = dropped[:max_pairs]
    else:
        raise InvalidInput("give one id (a document), two (a pair), or one id and groups_dir=DIR (its group)",
                           arguments=("groups_dir",))
    texts = sources.texts_of(paths, {x for pair in wanted for x in pair}, fmt, fields)
    missing = sorted({x for pair in wanted for x in pair} - set(texts))
    if missing:
        raise InvalidInput(f"no text for {', '.join(map(repr, missing[:5]))} in {', '.join(paths)}: "
                           "give the inputs the documents were read from")
    shown.pairs = [explain_pair(a, texts[a].text, b, texts[b].text, fingerprinter, top, short_texts) for a, b in wanted]
    return shown


def group_of(groups: str, doc_id: str) -> Shown:
    """The group of ``doc_id`` in a groups output: its members with their vias."""
    found = sources.documents(groups, ["id", "group"], where=("id", doc_id)).to_pylist()
    if not found:
        raise InvalidInput(f"{doc_id!r} is not a document of the groups output {groups}")
    group = found[0]["group"]
    members = sources.documents(groups, ["id", "keep", "via", "distance"], where=("group", group)).to_pylist()
    return Shown([], group, members)


def render(shown: Shown, width: int = 100, color: bool = False) -> Iterator[str]:
    """The lines of ``shown`` for a terminal ``width`` cells wide."""
    if shown.document is not None:
        doc = shown.document
        yield f"{doc.id}: fingerprint {_hex(doc.simhash)}"
        for line in document_lines(doc, shown.short_texts):
            yield f"  {line}"
        yield "  terms that weigh most: " + ", ".join(f"{_term(t.term)} {t.weight}" for t in doc.terms)
        return
    if shown.group is not None:
        yield f"group {shown.group}: {len(shown.members)} documents, keep {shown.group}"
        for m in shown.members:
            yield f"  {m['id']}" + ("  (kept)" if m["keep"] else f"  via {m['via']}, {m['distance']} bits")
        yield ""
    for n, pair in enumerate(shown.pairs, 1):
        yield from render_pair(pair, width, color, f"[{n}/{len(shown.pairs)}] " if len(shown.pairs) > 1 else "")
        yield ""
