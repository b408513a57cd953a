"""The Spark engine: the bulk jobs as Apache Spark jobs (PySpark), with the options, reports and
outputs the local engine shares (options.py, reports.py, outputs.py) and one harness
(harness.py: session, step clock, interrupts, persistence).

``spark_load_files(index, paths, LoadOptions, SparkOptions)`` (load.py; HFiles and the bulk
load: bulk.py), ``spark_check_files(index, paths, CheckOptions, SparkOptions)`` (check.py; its
``--add-new``: adding.py), ``spark_group_files(paths, out, GroupsOptions, SparkOptions,
fingerprinter)`` (groups.py; pairs.py, components.py); engines.py picks the engine.
"""

from ..options import SparkOptions
from .check import spark_check_files
from .groups import spark_group_files
from .load import spark_load_files

__all__ = ["SparkOptions", "spark_check_files", "spark_group_files", "spark_load_files"]
