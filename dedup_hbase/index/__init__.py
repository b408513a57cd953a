"""The index: document ids (``ids``), the row key (``layout``), each scheme's cost (``plan``), the
tables (``schema``), what the index needs of a store (``store``: the contract every store
implements), near pairs inside a set of fingerprints (``neardup``), candidates compared once per
distinct fingerprint with the one compare policy and the match count (``candidates``), retention
(``retention``), a document and its row (``documents``), the lookup (``lookup``), and ``Index``
itself (``index``)."""
