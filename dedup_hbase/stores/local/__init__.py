"""The embedded store (``PATH`` or ``local:PATH``): RocksDB in a folder.

``store`` is the Store; ``packed`` keeps the index table as one record per scan prefix;
``records`` is that record's format (one prefix's cells), ``batch`` many prefixes' cells in
numpy columns, sorted, merged and packed into records; ``rocks`` holds two RocksDB helpers. Nothing outside
this package imports from it but the store factory (stores/__init__.py).
"""

from .store import LocalStore

__all__ = ["LocalStore"]
