"""The command line ``dedup-hbase``: each command a few lines over one library call."""
