"""The Python daemon of the Spark jobs' workers (``spark.python.daemon.module``): PySpark's own
daemon, with ``pyspark.worker`` imported before it forks a worker for each task slot.

Spark runs its workers' PySpark from its zip file, from which Python cannot keep compiled
bytecode: each worker compiled ``pyspark.worker`` and what it imports again, about a second
of CPU (on 2 cores, 4% of a load of 460 MB of text). Imported once here, every fork has it.
Only that is imported: numpy and pyarrow start threads on import, which must not exist when
the daemon forks (PySpark's daemon imports the worker after the fork for that reason).
"""

import pyspark.worker  # noqa: F401  (pure Python: starts no thread)
from pyspark.daemon import manager

if __name__ == "__main__":
    manager()
