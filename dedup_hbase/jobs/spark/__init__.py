"""``dedup-hbase load --engine spark``: the bulk load as an Apache Spark job (PySpark).

Library entry point: ``spark_load_files(index, paths, LoadOptions, SparkOptions)``, as
``loader.load_files`` (engines.py picks the engine); see job.py for the data flow and
timestamps, bulk.py for HFiles, the bulk load and staging files. ``spark_group_files``: the
near-duplicate groups of a corpus (groups.py's job; pairs.py, components.py). ``check --engine
spark``: ``spark_check_files(index, paths, CheckOptions, SparkOptions)`` (check.py).
"""

from .check import CheckOptions, CheckReport, spark_check_files
from .groups import spark_group_files
from .job import SparkOptions, spark_load_files

__all__ = ["CheckOptions", "CheckReport", "SparkOptions", "spark_check_files", "spark_group_files", "spark_load_files"]
