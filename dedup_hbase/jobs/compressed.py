"""Compressed input: the decompressor a stream's first bytes call for (gzip, bzip2, xz, and zstd
with the ``zstandard`` package), and damage to the compressed data raised as one exception.

A stream cut off before its end marker (a half-downloaded file) or holding corrupt data raises
``DamagedInput`` from the read that reaches the damage; every byte returned before it was
decompressed from good data (gzip's and xz's checksums are checked when a member ends, so a
corrupt member may already have returned some of its bytes). The readers (corpus.py) turn it
into a rejected record after the last whole record. A read error of the underlying file (an
``OSError`` with an errno) is not damage and passes through as it is.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from typing import IO

from ..errors import DedupError

MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
CUT_OFF = "cut-off input"
CORRUPT = "corrupt input"
UNREADABLE = "unreadable input"  # a file or folder that cannot be opened or listed (no permission, an I/O error)
DAMAGED = (CUT_OFF, CORRUPT, UNREADABLE)  # the reasons a damaged input's reject is counted under
_BUFFER = 1 << 16
_ZSTD_CHUNK = 1 << 14  # compressed bytes fed to zstd at a time


class DamagedInput(DedupError):
    """A compressed input cannot be read to its end: ``reason`` is ``CUT_OFF`` or ``CORRUPT``,
    ``detail`` says what was found."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def kind_of(head: bytes) -> str | None:
    """The compression a stream starting with these bytes uses ("gzip", "bzip2", "xz", "zstd"), or None."""
    return next((kind for magic, kind in MAGIC if head.startswith(magic)), None)


def is_compressed(head: bytes) -> bool:
    """Whether a file starting with these bytes is read through a decompressor."""
    return kind_of(head) is not None


def decompressed(raw: IO[bytes]) -> IO[bytes]:
    """``raw`` read through the decompressor its magic bytes call for, raising ``DamagedInput``
    where the compressed data is cut off or corrupt; or ``raw`` as it is (buffered)."""
    stream = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    kind = kind_of(stream.peek(6)[:6])
    if kind is None:
        return stream
    if kind == "zstd":
        return io.BufferedReader(_Zstd(stream), _BUFFER)
    opener = {"gzip": lambda s: gzip.GzipFile(fileobj=s), "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}[kind]
    return checked(opener(stream), kind)


def checked(inner: IO[bytes], kind: str) -> IO[bytes]:
    """A decompressor file of the standard library's kind (``read1``; cut-off data raises
    EOFError, corrupt data zlib.error, lzma.LZMAError or an OSError without an errno), e.g.
    ISA-L's gzip, whose damage errors are ``DamagedInput``; ``kind`` names it in messages."""
    return io.BufferedReader(_Checked(inner, kind), _BUFFER)


class _Checked(io.RawIOBase):
    """A decompressor file (gzip, bz2, lzma) whose damage errors are ``DamagedInput``."""

    def __init__(self, inner: IO[bytes], kind: str) -> None:
        self._inner, self._kind = inner, kind

    @property
    def decompressor(self) -> IO[bytes]:
        """The decompressor file read (which library's: tests ask)."""
        return self._inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:  # read1: one read of the decompressor, so no bytes are lost when the next one fails
            data = self._inner.read1(len(buffer))
        except EOFError as e:
            raise cut_off(self._kind) from e
        except (zlib.error, lzma.LZMAError) as e:
            raise DamagedInput(CORRUPT, f"the {self._kind} data is corrupt ({e})") from e
        except OSError as e:
            if e.errno is not None:  # the file could not be read: not the data's fault
                raise
            raise DamagedInput(CORRUPT, f"the {self._kind} data is corrupt ({e})") from e  # gzip's CRC, bz2's stream
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._inner.close()
        super().close()


def cut_off(kind: str) -> DamagedInput:
    return DamagedInput(CUT_OFF, f"the {kind} data ends before its end marker (a partial download or copy?)")


class _Zstd(io.RawIOBase):
    """zstd frames one after another, decompressed with ``zstandard``'s decompression objects:
    unlike its stream reader, they tell a frame cut off (no end yet when the input ends)."""

    def __init__(self, stream: IO[bytes]) -> None:
        try:
            import zstandard
        except ImportError:
            raise ModuleNotFoundError("No module named 'zstandard'", name="zstandard") from None
        self._zstd, self._stream = zstandard, stream
        self._decompressor = zstandard.ZstdDecompressor()
        self._object = self._decompressor.decompressobj()
        self._pending, self._at = b"", 0  # decompressed bytes not yet read: self._pending[self._at:]
        self._started = False  # the current frame has been fed some bytes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._at == len(self._pending):
            chunk = self._stream.read(_ZSTD_CHUNK)
            if not chunk:
                if self._started and not self._object.eof:
                    raise cut_off("zstd")
                return 0
            self._pending, self._at = self._decompress(chunk), 0
        n = min(len(buffer), len(self._pending) - self._at)
        buffer[:n] = memoryview(self._pending)[self._at:self._at + n]
        self._at += n
        return n

    def _decompress(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            try:
                out.append(self._object.decompress(chunk))
            except self._zstd.ZstdError as e:
                raise DamagedInput(CORRUPT, f"the zstd data is corrupt ({e})") from e
            self._started = True
            chunk = self._object.unused_data if self._object.eof else b""
            if self._object.eof:
                self._object, self._started = self._decompressor.decompressobj(), bool(chunk)
        return b"".join(out)
