"""The package's exceptions. Every error a user can cause is a DedupError."""


class DedupError(Exception):
    """Base class: a problem with input, configuration or a store, with a clear message."""


class EmptyDocument(DedupError, ValueError):
    """The text yields no features (empty, only punctuation, stop words or single characters)."""


class IndexNotFound(DedupError):
    """The store holds no index (run ``dedup-hbase init``)."""


class IndexMismatch(DedupError):
    """The index was built with another scheme or featurizer than the one asked for."""


class StoreError(DedupError):
    """A store could not be opened, reached or written."""
