"""Who may call the service: bearer tokens with scopes, read from a file.

The tokens file (``serve --tokens FILE``) holds one token a line with its scopes, separated by
white space::

    # the crawlers: check and add
    3f9c1e0b7a2d4c6e8f0a1b2c3d4e5f60 read,write
    # the operators' tool: everything
    9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d read,write,delete

A token is 16 or more characters of RFC 6750's ``b64token`` (letters, digits, ``-._~+/``,
then ``=`` padding); the scopes are ``read`` (``POST /v1/check``, ``GET /v1/docs/ID``,
``GET /v1/stats``, ``GET /metrics``), ``write`` (``POST /v1/add``) and ``delete`` (``DELETE
/v1/docs/ID``), comma-separated. Blank lines and lines whose first character that is not
white space is ``#`` are skipped. A line that breaks a rule, a token given twice, or a file
with no token is refused whole (``InvalidInput`` naming the file and the line), so a mistake
never leaves the service with part of a file.

A request sends ``Authorization: Bearer TOKEN``. ``Access.refusal`` compares its SHA-256
digest with every known token's digest by ``hmac.compare_digest``, all of them whatever
matched (the time taken says nothing of which token, or of how much of one, matched), and
answers: none (allowed), 401 (no token, not a bearer token, an unknown token; with
``WWW-Authenticate: Bearer``), 403 (a known token without the scope). The tokens themselves
are kept only as digests; nothing here logs or returns them. ``Access.tokens`` is replaced
whole when the file is read again (``reload``), on the thread that checks requests.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

from ..errors import InvalidInput

SCOPES = ("read", "write", "delete")
MIN_TOKEN_CHARS = 16
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750, section 2.1: b64token
CHALLENGE = ((b"www-authenticate", b"Bearer"),)  # the header of every 401


def parse_tokens(text: str, source: str) -> tuple[tuple[bytes, frozenset[str]], ...]:
    """The (SHA-256 digest, scopes) of every token of a tokens file's ``text`` (see the module
    docstring); InvalidInput naming ``source`` and the line at the first line that breaks a rule."""
    found: dict[bytes, frozenset[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        where = f"{source}, line {number}"
        if len(words) != 2:
            raise InvalidInput(f"{where}: a line is a token and its scopes (e.g. 'TOKEN read,write'), "
                               f"not {len(words)} words")
        token, scopes = words[0], words[1].split(",")
        if not _TOKEN.fullmatch(token) or len(token) < MIN_TOKEN_CHARS:
            raise InvalidInput(f"{where}: a token is at least {MIN_TOKEN_CHARS} characters of letters, digits "
                               f"and -._~+/ (then = padding); this one is {len(token)} characters"
                               f"{'' if _TOKEN.fullmatch(token) else ' with others among them'}")
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise InvalidInput(f"{where}: unknown scope {unknown[0]!r} (the scopes: {', '.join(SCOPES)}, "
                               "comma-separated)")
        digest = hashlib.sha256(token.encode()).digest()
        if digest in found:
            raise InvalidInput(f"{where}: this token was given on an earlier line already")
        found[digest] = frozenset(scopes)
    if not found:
        raise InvalidInput(f"{source} holds no token (a line is a token and its scopes, e.g. 'TOKEN read,write')")
    return tuple(found.items())


def read_tokens(path: str | Path) -> tuple[tuple[bytes, frozenset[str]], ...]:
    """``parse_tokens`` of the file at ``path``; InvalidInput when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"cannot read the tokens file {path}: {e}") from None
    return parse_tokens(text, f"tokens file {path}")


class Access:
    """The tokens of one file and the check of a request's (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.tokens = read_tokens(path)

    def reload(self) -> int:
        """Read the file again: its tokens replace the old ones, whose count is returned; on
        InvalidInput (a bad or unreadable file) the old ones stay."""
        self.tokens = read_tokens(self.path)
        return len(self.tokens)

    def refusal(self, headers: list[tuple[bytes, bytes]], scope: str) -> tuple[int, str] | None:
        """None when the request's headers (names in lower case) carry a token with ``scope``;
        else the status (401, 403) and why."""
        given = None
        for name, value in headers:
            if name == b"authorization":
                given = value
                break
        if given is None:
            return 401, f"this needs a token with the scope {scope}: send the header Authorization: Bearer TOKEN"
        kind, _, token = given.strip().partition(b" ")
        if kind.lower() != b"bearer" or not token.strip():
            return 401, "the Authorization header is not 'Bearer TOKEN'"
        digest, granted = hashlib.sha256(token.strip()).digest(), None
        for known, scopes in self.tokens:  # every one, whichever matches: no early exit
            if hmac.compare_digest(digest, known):
                granted = scopes
        if granted is None:
            return 401, "unknown token"
        if scope not in granted:
            return 403, f"this token lacks the scope {scope}"
        return None
