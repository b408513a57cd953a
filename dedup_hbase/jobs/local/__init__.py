"""The local engine: the bulk jobs on this machine's cores (``load``, ``check``, ``groups``),
with the options, reports and outputs the Spark engine shares (options.py, reports.py,
outputs.py)."""

from .check import check_files
from .groups import group_files
from .load import load_files

__all__ = ["check_files", "group_files", "load_files"]
