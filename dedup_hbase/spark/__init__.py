"""``dedup-hbase load --engine spark``: the bulk load as an Apache Spark job (PySpark).

Library entry points: ``spark_load_files(index, paths, LoadOptions, SparkOptions)``, as
``loader.load_files``, and
``spark_load(index, files, ...) -> LoadReport``; see job.py for the data flow, timestamps and
staging files.
"""

from .job import SparkOptions, spark_load, spark_load_files

__all__ = ["SparkOptions", "spark_load", "spark_load_files"]
