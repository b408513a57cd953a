"""Document ids: one rule for every way in (files read by the CLI, requests to the service).

An id is a non-empty string of at most ``MAX_ID_BYTES`` bytes of UTF-8, kept as given. An
input may also give a whole number (a JSON integer, a Parquet integer column): it becomes
its decimal digits, so ``{"id": 42}`` and ``{"id": "42"}`` name the same document. Anything
else is refused, with what it was: a fraction (``1.5``), a boolean, null, an object, an
array, an empty string. Messages show at most ``SHOWN`` characters of an id.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInput

MAX_ID_BYTES = 1024
SHOWN = 40


def shown(doc_id: Any) -> str:
    """An id (or a value given as one) for a message, cut to about ``SHOWN`` characters: a
    string's repr; another value as JSON spells it (``true``, ``{"a": 1}``), else its repr."""
    text = doc_id if isinstance(doc_id, str) else _spelled(doc_id)
    if len(text) <= SHOWN:
        return repr(doc_id) if isinstance(doc_id, str) else text
    return f"{text[:SHOWN]!r}... ({len(text):,} characters)"


def _spelled(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not a JSON value (bytes, a set): Python's spelling
        return repr(value)


def document_id(value: Any, field: str = "id") -> str:
    """``value`` as a document id (see the module docstring); InvalidInput says why not,
    naming the input's ``field``."""
    if isinstance(value, str):
        if not value:
            raise InvalidInput(f"{field!r} is empty")
        encode_id(value)
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        raise InvalidInput(f"{field!r} is null")
    kind = {bool: "a boolean", float: "a fraction", dict: "an object", list: "an array"}.get(type(value), "not text")
    raise InvalidInput(f"bad {field!r}: {shown(value)} is {kind} (an id is a string or a whole number)")


def encode_id(doc_id: str) -> bytes:
    """The UTF-8 bytes of a document id; refuses what is not a non-empty str of at most
    ``MAX_ID_BYTES`` bytes (or cannot be UTF-8: a lone surrogate)."""
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidInput(f"a document id is a non-empty string, not {shown(doc_id)}")
    try:
        raw = doc_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"a document id is valid Unicode text, not {shown(doc_id)}") from None
    if len(raw) > MAX_ID_BYTES:
        raise InvalidInput(f"document id longer than {MAX_ID_BYTES} bytes: {shown(doc_id)}")
    return raw
