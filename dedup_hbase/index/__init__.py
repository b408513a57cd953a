"""The index: document ids (``ids``), the row key (``layout``), each scheme's cost (``plan``), the
tables (``schema``), what the index needs of a store (``store``: the contract every store
implements), candidates compared once per distinct fingerprint (``candidates``), near pairs inside
a set of fingerprints (``neardup``), retention (``retention``), and ``Index`` itself (``index``)."""
