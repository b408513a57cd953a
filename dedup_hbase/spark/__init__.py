"""``dedup-hbase load --engine spark``: the bulk load as an Apache Spark job (PySpark).

Library entry point: ``spark_load(index, files, ...) -> LoadReport``; see job.py for the
data flow, timestamps and staging files.
"""

from .job import spark_load

__all__ = ["spark_load"]
