"""The bulk jobs (``load``, ``check``, ``groups``), one model with two engines.

The model, the same for both engines: what a job is asked (options.py), what it reports and
how it accounts for every record (reports.py), what it writes (outputs.py), read from corpus.py
and fingerprinted by batches.py and workers.py. The engines: ``local`` (this machine's cores)
and ``spark`` (Apache Spark jobs, one harness for the three), picked by engines.py.

Imports nothing: ``spark_daemon`` is imported by Spark's Python daemon before it forks."""
