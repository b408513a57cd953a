"""The dedup service: one index shared by concurrent requests (``online``), served as JSON over HTTP."""
