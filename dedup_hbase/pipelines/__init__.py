"""Steps for the pipelines dataset teams run: the Arrow batch API (``arrow.py``: fingerprints,
check, insert-if-new and groups of pyarrow batches) and its pandas form (``frames.py``), each
a few lines over the library calls of the jobs and the service (docs/pipelines.md)."""
