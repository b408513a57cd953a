"""The Python daemon of the Spark jobs' workers (``spark.python.daemon.module``): PySpark's own
daemon, with ``pyspark.worker`` imported before it forks a worker for each task slot.

Spark puts its zip of PySpark first on the workers' path, and Python keeps no compiled
bytecode of a zip: each worker would compile ``pyspark.worker`` and what it imports again.
Here the installed PySpark is imported instead when it is the same as the zip (a local job:
Spark's home is the installed package), with its compiled bytecode, once, and every fork has
it. Only that is imported: numpy and pyarrow start threads on
import, which must not exist when the daemon forks (PySpark's daemon imports the worker
after the fork for that reason).
"""

import importlib.machinery
import os
import sys
import zipfile


def installed_first() -> bool:
    """Move Spark's PySpark zip behind the rest of ``sys.path`` when the PySpark installed there
    has the same ``version.py``; True if it did."""
    zips = [p for p in sys.path if os.path.basename(p) == "pyspark.zip"]
    rest = [p for p in sys.path if p not in zips]
    if not zips:
        return False
    try:
        with zipfile.ZipFile(zips[0]) as z:
            zipped = z.read("pyspark/version.py")
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    found = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if found is None or not found.submodule_search_locations:
        return False
    try:
        with open(os.path.join(list(found.submodule_search_locations)[0], "version.py"), "rb") as f:
            if f.read() != zipped:
                return False
    except OSError:
        return False
    sys.path[:] = rest + zips
    return True


if __name__ == "__main__":
    installed_first()
    import pyspark.worker  # noqa: F401  (pure Python: starts no thread)
    from pyspark.daemon import manager

    manager()
