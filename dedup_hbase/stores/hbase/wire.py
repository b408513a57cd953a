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
protocol's public calls).
"""

from __future__ import annotations

import functools
import socket
from importlib import resources


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
        self._transport = self._protocol = self._client = None

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
        self._transport, self._protocol = transport, protocol
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
        return self._reply(method)

    def _reply(self, method: str):
        from thriftpy2.thrift import TApplicationException, TMessageType

        protocol = self._protocol
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

    def close(self) -> None:
        """Close the socket (safe to call twice; the next call opens a new one)."""
        transport, self._transport, self._protocol, self._client = self._transport, None, None, None
        if transport is not None:
            try:
                transport.close()
            except Exception:
                pass
