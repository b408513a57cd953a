"""The documents of a request and the JSON of the service: a body read and checked whole, an
answer written.

A request body is a JSON array of documents ``{"id", "text"}`` or ``{"id", "simhash"}``.
``parse_documents`` checks all of them before any is used and raises ``RequestError`` (the
HTTP status and the JSON error body) naming the first bad one by position and, when it has a
valid one, by id: 400 (not JSON, not an array, a document that is not an object, no id or a
bad one by the rule of ids.py, neither or both of text and simhash, a bad simhash, a text that
is not a string), 413 (more documents than ``Limits.max_docs``, a text over
``Limits.max_text_bytes``). It does not fingerprint a text (an empty fingerprint is an answer,
not an error of the request: handlers.py) nor look at the query string (app.py).

JSON is read and written by orjson when it is installed, with the json module's values, errors
and bytes (``load_json``, ``render_documents``); ``render`` is the json module's compact UTF-8.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

try:  # JSON in C for the document endpoints; the json module when it is missing (the same bytes and values)
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

from ..errors import InvalidInput
from ..index.ids import document_id
from ..text import encodings
from ..text.encodings import charset_of, check_encoding
from ..text.fingerprint import parse_hex


@dataclass(frozen=True)
class Limits:
    """What one request may hold."""

    max_docs: int = 1000
    max_text_bytes: int = 1 << 20
    max_body_bytes: int = 64 << 20
    max_matches: int = 1000  # matches listed per document; more are counted ("match_count")

    def __post_init__(self) -> None:
        for name in ("max_docs", "max_text_bytes", "max_body_bytes", "max_matches"):
            if getattr(self, name) < 1:
                raise InvalidInput(f"{name} must be >= 1, not {getattr(self, name)}")


class RequestError(Exception):
    """A request the service refuses: the HTTP status and the JSON error body (``document``
    and ``id`` name the document at fault, when one is)."""

    def __init__(self, status: int, message: str, position: int | None = None, doc_id: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"error": message}
        if position is not None:
            self.body.update(document=position, id=doc_id)


@dataclass(slots=True)
class RequestDoc:
    """One document of a request: position, id, and either its text or its simhash; the
    simhash of a text and the error of a text without features are set by the handlers."""

    position: int
    id: str
    text: str | None
    simhash: int | None
    error: str | None = None
    more: tuple[int, ...] = ()        # an index of several signatures: the others' simhashes
    masks: tuple[tuple[int, ...], ...] = ()  # an index with probes: per signature, the bits flipped
    sketch: int | None = None         # an index with a confirmation: the text's sketch
    kept: str = ""                    # the short-text rule: a short text as the index keeps it


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, for a message."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def load_json(body: bytes) -> Any:
    """``json.loads(body)``: the same value, or the same error. orjson when installed and it
    takes the body and gives no float where a document has its id, text or simhash (it reads
    an integer beyond 64 bits as a float, json as an int); otherwise the json module (orjson
    refuses some of what json takes: NaN, lone surrogates, UTF-16 and UTF-32)."""
    if orjson is not None:
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError:
            return json.loads(body)
        if not has_floats(items):
            return items
    return json.loads(body)


def has_floats(items: Any) -> bool:
    """Whether ``items`` is a float or has one as a document's id, text or simhash."""
    if isinstance(items, list):
        return any(isinstance(item, dict) and float in (type(item.get("id")), type(item.get("text")),
                                                        type(item.get("simhash"))) for item in items)
    return isinstance(items, float)


def decoded_body(headers: list[tuple[bytes, bytes]], body: bytes, limits: Limits) -> bytes:
    """A request body as sent with ``Content-Encoding: gzip`` (or none, or ``identity``) made
    plain, at most ``limits.max_body_bytes`` of it (else 413), in UTF-8 (``charset_body``);
    another encoding is a 415, a body that is not the gzip it says a 400."""
    return charset_body(headers, plain_body(headers, body, limits))


def charset_body(headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """A body in the charset its Content-Type names (``application/json; charset=gbk``) as
    UTF-8; none named: as it is (JSON's own, UTF-8). A charset Python does not know is a 415,
    a body that is not in its charset a 400."""
    content_type = next((value for name, value in headers if name == b"content-type"), b"")
    charset = charset_of(content_type.decode("latin-1"))
    if charset is None:
        return body
    try:
        encoding = check_encoding(charset)
    except InvalidInput:
        encoding = encodings.AUTO
    if encoding == encodings.AUTO:
        raise RequestError(415, f"charset {charset!r} is not supported: send UTF-8, GB18030 (GBK), Big5 or "
                                "another charset Python reads")
    if encoding == encodings.DEFAULT:
        return body
    try:
        return encodings.decode(body, encoding).encode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        raise RequestError(400, f"the body is not {encodings.label(encoding)}, as its Content-Type says: "
                                f"a bad byte at byte {e.start}") from None


def plain_body(headers: list[tuple[bytes, bytes]], body: bytes, limits: Limits) -> bytes:
    """``decoded_body`` before its charset."""
    encoding = next((value for name, value in headers if name == b"content-encoding"), b"identity")
    encoding = encoding.strip().lower()
    if encoding in (b"identity", b""):
        return body
    if encoding not in (b"gzip", b"x-gzip"):
        raise RequestError(415, f"Content-Encoding {encoding.decode('latin-1')!r} is not supported: send gzip, or "
                                "the body as it is")
    inflate = zlib.decompressobj(31)
    try:
        plain = inflate.decompress(body, limits.max_body_bytes + 1)
    except zlib.error as e:
        raise RequestError(400, f"the body is not gzip data, as its Content-Encoding says: {e}") from None
    if len(plain) > limits.max_body_bytes:
        raise RequestError(413, f"the body is over the limit of {limits.max_body_bytes:,} bytes once decompressed")
    if not inflate.eof:
        raise RequestError(400, "the body's gzip data is cut off")
    return plain


def parse_documents(body: bytes, limits: Limits) -> list[RequestDoc]:
    """The documents of a request body, every one checked; RequestError names the first bad one."""
    try:
        items = load_json(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RequestError(400, f"the body is not JSON: {e}") from None
    except RecursionError:
        raise RequestError(400, "the body is not JSON this service reads: nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise RequestError(400, f"the body is not JSON this service reads: {e}") from None
    if not isinstance(items, list):
        raise RequestError(400, f"the body is a JSON array of documents, not a JSON {json_type(items)}")
    if len(items) > limits.max_docs:
        raise RequestError(413, f"a request holds at most {limits.max_docs} documents, not {len(items)}")
    return [parse_document(position, item, limits) for position, item in enumerate(items)]


def parse_document(position: int, item: Any, limits: Limits) -> RequestDoc:
    """Document ``position`` of a request, checked; RequestError says what is wrong with it."""
    if not isinstance(item, dict):
        raise bad(position, f"a document is a JSON object, not a JSON {json_type(item)}")
    if "id" not in item:
        raise bad(position, "no id (a string or a whole number)")
    try:
        doc_id = document_id(item["id"])  # the rule of ids.py, as for files the CLI reads
    except InvalidInput as e:
        raise bad(position, str(e)) from None
    text, simhash = item.get("text"), item.get("simhash")
    if (text is None) == (simhash is None):
        raise bad(position, "give its text or its simhash" if text is None
                  else "give its text or its simhash, not both", doc_id=doc_id)
    if text is None:
        try:
            return RequestDoc(position, doc_id, None, parse_hex(simhash if isinstance(simhash, str) else ""))
        except InvalidInput:
            raise bad(position, f"the simhash is 16 hex digits, not {simhash!r}", doc_id=doc_id) from None
    if not isinstance(text, str):
        raise bad(position, f"the text is a JSON {json_type(text)}, not a string", doc_id=doc_id)
    if len(text) * 4 > limits.max_text_bytes:  # else within the limit (at most 4 bytes a character)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_text_bytes:
            raise bad(position, f"the text is {size:,} bytes, over the limit of {limits.max_text_bytes:,}", 413,
                      doc_id=doc_id)
    return RequestDoc(position, doc_id, text, None)


def needs_texts(docs: list[RequestDoc], what: str | None) -> None:
    """Refuse (400) a document given by its simhash to an index that looks up ``what`` (several
    signatures or probes: ``Index.lookup_options``), whose lead and least sure bits need the text."""
    if what is not None:
        for doc in docs:
            if doc.text is None:
                raise bad(doc.position, f"this index looks up {what}: give the document's text, not its simhash",
                          doc_id=doc.id)


def bad(position: int, message: str, status: int = 400, doc_id: Any = None) -> RequestError:
    """The error of document ``position`` (named by its id when it has a valid one)."""
    named = f" ({doc_id!r})" if doc_id is not None else ""
    return RequestError(status, f"document {position}{named}: {message}", position, doc_id)


_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode


def render(body: Any) -> bytes:
    """A JSON answer's bytes: compact UTF-8, non-ASCII as is (one encoder made once:
    ``json.dumps`` with options makes one per call)."""
    return _ENCODE(body).encode("utf-8")


def render_documents(body: Any) -> bytes:
    """``render`` of a body without floats (the answers of ``/v1/check`` and ``/v1/add``, and
    errors: orjson writes some floats differently), by orjson when installed: the same bytes
    (strings, ints, booleans and null are written alike); what orjson refuses (an int beyond
    64 bits, a lone surrogate) goes to ``render``."""
    if orjson is not None:
        try:
            return orjson.dumps(body)
        except TypeError:
            pass
    return render(body)
