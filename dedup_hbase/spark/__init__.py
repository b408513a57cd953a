"""``dedup-hbase load --engine spark``: the bulk load as an Apache Spark job (PySpark).

Library entry point: ``spark_load_files(index, paths, LoadOptions, SparkOptions)``, as
``loader.load_files`` (engines.py picks the engine); see job.py for the data flow and
timestamps, bulk.py for HFiles, the bulk load and staging files. ``check --engine spark``:
``spark_check_files(index, paths, CheckOptions, SparkOptions)`` (check.py).
"""

from .check import CheckOptions, CheckReport, spark_check_files
from .job import SparkOptions, spark_load_files

__all__ = ["CheckOptions", "CheckReport", "SparkOptions", "spark_check_files", "spark_load_files"]
