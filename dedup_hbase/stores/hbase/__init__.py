"""Apache HBase through its Thrift gateways: the store (``store``), its tables created through
Thrift2 (``admin``), its data paths (``paths``), the Thrift2 client (``thrift2``) and the leases of
insert-if-new across servers (``locks``)."""
