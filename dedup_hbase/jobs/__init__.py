"""The bulk jobs (load, check, groups) and their engines: this machine's cores, or Spark (``spark``).

Imports nothing: ``spark_daemon`` is imported by Spark's Python daemon before it forks."""
