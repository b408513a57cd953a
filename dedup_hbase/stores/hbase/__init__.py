"""Apache HBase through its Thrift gateways (``hbase://HOST:PORT/?...``), in parts, lowest first:
thriftpy2 wrapped once (``wire``), calls serialized by hand (``encoding``), tables and keys as
cells (``tables``), connections and the one retry loop (``connections``), the data path
interface (``datapath``) and its implementation (``thrift2``), table admin
(``admin``), the fleet locks (``locks``), and the store that composes them (``store``).

The package's public face: ``stores.open_store`` builds an ``HBaseStore`` from a URL, and
``AdminGatewayUnreachable`` (here, re-exported by ``stores``) is the one error of this
package a caller may want to tell apart.
"""

from ...errors import StoreError


class GatewayUnreachable(StoreError):
    """No gateway listens at ``port`` at a pool's first connection (``reason``: the socket's error)."""

    def __init__(self, host: str, port: int, reason: str, gateway: str = "") -> None:
        super().__init__(f"cannot reach HBase{gateway} at {host}:{port}: {reason}")
        self.host, self.port, self.reason = host, port, reason


class AdminGatewayUnreachable(StoreError):
    """No Thrift2 gateway answers where tables are to be created."""
