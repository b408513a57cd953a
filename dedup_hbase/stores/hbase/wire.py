"""thriftpy2, wrapped once: HBase's Thrift2 IDL (``idl``) and one socket to a Thrift2 gateway
(``Channel``). No other module of the package builds a thriftpy2 client.

Why a wrapper: the data path sends some calls serialized by hand (encoding.py: a
``putMultiple`` or ``getMultiple`` of thousands of cells without a Python object per cell),
and thriftpy2 has no public way to send a message serialized elsewhere: its ``TClient``
serializes every call itself and keeps its protocol and transport private. So a ``Channel``
builds the socket, transport and protocol itself, as ``thriftpy2.rpc.make_client`` does, and
keeps them: typed calls go through a ``TClient`` over that protocol (``call``); a message
serialized by hand is written to the transport the channel owns and its reply read through
the protocol it owns (``call_raw``, which reads a reply the way ``TClient`` does, through the
protocol's public calls). A reply that is a list of rows (``call_results``) is read from the
socket as bytes and decoded into flat lists by the compiled core (results.py says why).
"""

from __future__ import annotations

import functools
import socket
from importlib import resources

from ...text.native import usable_core
from .results import Results

# a read of a reply's bytes asks the socket for at least this many (it gives what it holds): after
# each read the core looks for the reply's end from its start, so the fewer reads the better
READ_BYTES = 1 << 20


@functools.cache
def idl():
    """HBase's Thrift2 IDL, cut to the calls dedup-hbase makes (hbase_thrift2.thrift), loaded
    once per process."""
    import thriftpy2

    path = resources.files("dedup_hbase.stores.hbase").joinpath("hbase_thrift2.thrift")
    with resources.as_file(path) as file:
        return thriftpy2.load(str(file), module_name="hbase_thrift2_thrift")


class Channel:
    """One socket to a Thrift2 gateway (``transport`` buffered or framed, ``protocol`` binary or
    compact, as the gateway speaks). Opens on ``open()`` or on the first call; not thread-safe
    (a pool leases it to one thread at a time); nothing here retries."""

    def __init__(self, host: str, port: int, timeout_ms: int = 60000, transport: str = "buffered",
                 protocol: str = "binary") -> None:
        self.host, self.port, self.timeout_ms = host, port, timeout_ms
        self.transport_name, self.protocol_name = transport, protocol
        self._transport = self._protocol = self._client = self._socket = None

    def open(self) -> None:
        """Connect, unless connected (a refused or unreachable gateway raises
        thriftpy2's ``TTransportException``)."""
        if self._client is not None:
            return
        from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
        from thriftpy2.thrift import TClient
        from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory, TSocket

        sock = TSocket(self.host, self.port, socket_family=socket.AF_INET, socket_timeout=self.timeout_ms)
        framed = self.transport_name == "framed"
        transport = (TFramedTransportFactory() if framed else TBufferedTransportFactory()).get_transport(sock)
        compact = self.protocol_name == "compact"
        protocol = (TCompactProtocolFactory() if compact else TBinaryProtocolFactory()).get_protocol(transport)
        transport.open()
        self._transport, self._protocol, self._socket = transport, protocol, sock
        self._client = TClient(idl().THBaseService, protocol)

    def call(self, method: str, *args):
        """``method(*args)`` of the Thrift2 service; its answer, or the exception HBase raised
        (``TIOError``, ``TIllegalArgument``)."""
        self.open()
        return getattr(self._client, method)(*args)

    def call_raw(self, method: str, message: bytes):
        """Send ``message``, a whole call of ``method`` already serialized in the binary protocol
        (encoding.py), and read its reply as ``call`` does."""
        self.open()
        self._transport.write(message)
        self._transport.flush()
        return read_reply(self._protocol, method)

    def call_results(self, method: str, message: bytes) -> Results:
        """``call_raw`` of a call that answers with a ``list<TResult>``, as ``Results``: its
        bytes read from the socket and decoded by the compiled core when it is there; else, and
        for a reply the core does not take (an exception: raised as ``call`` raises it),
        thriftpy2's decoding, the reference."""
        core = usable_core()
        if not hasattr(core, "thrift_results"):  # no core, or one built before it decoded replies
            return Results.of(self.call_raw(method, message))
        self.open()
        self._transport.write(message)
        self._transport.flush()
        reply = self._reply_bytes(core)
        found = core.thrift_results(reply)
        return Results.decoded(*found) if found is not None else reference_results(method, reply)

    def _reply_bytes(self, core) -> bytes:
        """The next reply message's bytes, read from the socket (a framed one by its length; a
        buffered one until the core finds its end). Nothing is left in the transport's own
        buffer between calls: each reply before this one was read to its end."""
        sock = self._socket
        if self.transport_name == "framed":
            size = int.from_bytes(_read_exactly(sock, 4), "big", signed=True)
            return _read_exactly(sock, size)
        got = bytearray()
        while True:
            got += sock.read(max(READ_BYTES, len(got)))
            try:
                length = core.thrift_reply_length(bytes(got))
            except ValueError as e:
                raise _protocol_error(f"a reply that is not Thrift's binary protocol ({e})") from None
            if length is not None:
                if length != len(got):
                    raise _protocol_error(f"{len(got) - length} bytes after a reply")
                return bytes(got)

    def close(self) -> None:
        """Close the socket (safe to call twice; the next call opens a new one)."""
        transport, self._transport, self._protocol, self._client, self._socket = self._transport, None, None, None, None
        if transport is not None:
            try:
                transport.close()
            except Exception:
                pass


def _read_exactly(sock, n: int) -> bytes:
    """``n`` bytes from a thriftpy2 ``TSocket`` (which raises at the socket's end)."""
    if n < 0:
        raise _protocol_error(f"a frame of {n} bytes")
    got = bytearray()
    while len(got) < n:
        got += sock.read(n - len(got))
    return bytes(got)


def _protocol_error(message: str):
    from thriftpy2.protocol.exc import TProtocolException

    return TProtocolException(TProtocolException.INVALID_DATA, message)


def read_reply(protocol, method: str):
    """The answer of ``method``'s reply read through ``protocol`` (thriftpy2's), the way its
    ``TClient`` reads it: the answer, or the exception the reply carries raised."""
    from thriftpy2.thrift import TApplicationException, TMessageType

    _, kind, _ = protocol.read_message_begin()
    if kind == TMessageType.EXCEPTION:
        error = TApplicationException()
        error.read(protocol)
        protocol.read_message_end()
        raise error
    result = getattr(idl().THBaseService, method + "_result")()
    result.read(protocol)
    protocol.read_message_end()
    for _, name, *_ in result.thrift_spec.values():  # an exception the call declares
        if name != "success" and getattr(result, name, None) is not None:
            raise getattr(result, name)
    return getattr(result, "success", None)


def reference_results(method: str, reply: bytes) -> Results:
    """The reference decoding of a whole binary-protocol reply of ``method`` (a
    ``list<TResult>``): thriftpy2's, as ``Results``."""
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.transport import TMemoryBuffer

    return Results.of(read_reply(TBinaryProtocol(TMemoryBuffer(reply)), method))
