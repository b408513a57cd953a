"""dedup-hbase: near-duplicate detection with 64-bit SimHash over a prefix-scan index.

>>> from dedup_hbase import Index, open_store
>>> index = Index.create(open_store("memory:"), scheme=4, k=3)
>>> index.add("a", "国家卫生健康委通报最新疫情")
>>> index.query(index.fingerprint("国家卫生健康委通报最新疫情"))
"""

__version__ = "0.2.0"  # the one place; pyproject.toml reads it

from .errors import DedupError, EmptyDocument, IndexMismatch, IndexNotFound, InvalidInput, StoreError
from .features import JiebaFeaturizer, ShingleFeaturizer, make_featurizer
from .fingerprint import Fingerprinter, hamming, make_fingerprinter, parse_hex, to_hex
from .index import Document, Index, Match
from .layout import Scheme
from .stores import Store, open_store, parse_store_url

__all__ = [
    "DedupError", "Document", "EmptyDocument", "Fingerprinter", "Index", "IndexMismatch",
    "IndexNotFound", "InvalidInput", "JiebaFeaturizer", "Match", "Scheme", "ShingleFeaturizer", "Store",
    "StoreError", "hamming", "make_featurizer", "make_fingerprinter", "open_store", "parse_hex",
    "parse_store_url", "to_hex",
]
