"""Bytes to text: the encodings inputs come in, byte-order marks, and the one test of whether
a file's first bytes are text at all.

``--encoding`` names one: ``utf-8`` (the default), ``gb18030`` (a superset of GBK and GB2312,
which are read as it), ``big5``, any other text codec Python knows, or ``auto``: each file's
first bytes decide (a byte-order mark; else UTF-8 when they are UTF-8; else what
charset-normalizer, a maintained detector, finds most likely). A UTF-8 byte-order mark is
dropped from the start of any input, whatever the encoding (a GB18030 one too, under gb18030).
"""

from __future__ import annotations

import codecs
import re

from ..errors import InvalidInput

DEFAULT = "utf-8"
AUTO = "auto"
NAMED = (DEFAULT, "gb18030", "big5", AUTO)  # the ones --help lists
# what a name means here: GBK and GB2312 are read by their superset GB18030
_SAME = {"gbk": "gb18030", "gb2312": "gb18030", "cp936": "gb18030", "hz": "gb18030", "utf-8-sig": DEFAULT,
         "cp950": "big5"}
_BOMS = ((codecs.BOM_UTF8, DEFAULT), (b"\x84\x31\x95\x33", "gb18030"))
_LABELS = {DEFAULT: "UTF-8", "gb18030": "GB18030", "big5": "Big5"}
_NON_TEXT_SHARE = 0.1  # a head with more undecodable bytes than this is binary
_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';\s]+)""", re.IGNORECASE)


def check_encoding(name: str) -> str:
    """The encoding ``name`` means (``GBK`` -> ``gb18030``, ``UTF8`` -> ``utf-8``), or ``auto``;
    a name Python does not know as a text encoding is refused."""
    wanted = name.strip().lower()
    if wanted == AUTO:
        return AUTO
    try:
        info = codecs.lookup(wanted)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise InvalidInput(f"unknown encoding {name!r}: choose {', '.join(NAMED)} (auto: detected per file), "
                           "or another Python codec name")
    return _SAME.get(info.name, info.name)


def label(encoding: str) -> str:
    """How a message names an encoding: UTF-8, GB18030, Big5, else its codec name."""
    return _LABELS.get(encoding, encoding)


def bom(head: bytes, encoding: str = AUTO) -> tuple[str, int] | None:
    """(the encoding, its length) of a byte-order mark at the start of ``head`` that reading
    in ``encoding`` drops (a UTF-8 one always; a GB18030 one under gb18030 or auto), or None."""
    for mark, named in _BOMS:
        if head.startswith(mark) and (named == DEFAULT or encoding in (named, AUTO)):
            return named, len(mark)
    return None


def cut_at_line_ends(encoding: str) -> bool:
    """Whether a file in ``encoding`` can be cut into lines at its CR and LF bytes, as Hadoop's
    line reader cuts it: ASCII is itself in it (so those bytes end lines), no other character
    holds them and nothing carries from one line to the next (UTF-8, GB18030, Big5, Shift-JIS,
    the ISO 8859 and Windows code pages; not UTF-16 or UTF-32, UTF-7, ISO-2022 or EBCDIC)."""
    name = codecs.lookup(encoding).name
    if name.startswith(("utf-16", "utf-32", "utf-7", "iso2022", "hz")):
        return False
    ascii_ = bytes(range(128))
    try:
        return ascii_.decode(encoding) == ascii_.decode("ascii")
    except UnicodeDecodeError:
        return False


def detect(head: bytes) -> str | None:
    """The encoding of a file whose first bytes are ``head``: its byte-order mark's; UTF-8 when
    they are UTF-8 (a character cut at the end of the head aside); else charset-normalizer's best
    guess (GBK and GB2312 as gb18030); None when no encoding fits."""
    marked = bom(head)
    if marked:
        return marked[0]
    try:
        head.decode("utf-8")
        return DEFAULT
    except UnicodeDecodeError as e:
        if e.start >= len(head) - 3 and e.reason == "unexpected end of data":
            return DEFAULT
    from charset_normalizer import from_bytes

    whole_lines = head[:head.rfind(b"\n") + 1] or head  # a multi-byte character cut at the end misleads it
    best = from_bytes(whole_lines).best()
    return check_encoding(best.encoding) if best is not None else None


def binary_reason(head: bytes, encoding: str = DEFAULT) -> str | None:
    """Why the first bytes of a file say it is not text in ``encoding`` (a NUL byte, or mostly
    bytes that are not of that encoding), or None. A binary file read line by line would index
    junk."""
    nul = head.find(b"\0")
    if nul >= 0:
        return f"binary data, not text (a NUL byte at byte {nul})"
    decoded = head[:-3].decode(encoding, "replace") if len(head) > 3 else ""
    if decoded and decoded.count("\ufffd") > _NON_TEXT_SHARE * len(decoded):
        hint = "; --encoding gb18030, big5 or auto reads other encodings" if encoding == DEFAULT else ""
        return f"binary data, not text (mostly bytes that are not {label(encoding)}{hint})"
    return None


def decode(data: bytes, encoding: str = DEFAULT) -> str:
    """A whole text in ``encoding`` (``auto``: detected), its byte-order mark dropped;
    UnicodeDecodeError where it is not of that encoding."""
    chosen = (detect(data[:1 << 16]) or DEFAULT) if encoding == AUTO else encoding
    marked = bom(data, chosen)
    return data[marked[1] if marked else 0:].decode(chosen)


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` of a Content-Type header's value (``application/json; charset=gbk``), or None."""
    found = _CHARSET.search(content_type or "")
    return found.group(1) if found else None
