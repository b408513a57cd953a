"""The dedup service: one index shared by concurrent requests, served as JSON over HTTP.

Its modules, lowest first: ``batcher`` (concurrent calls joined into one), ``online`` (the
index shared by concurrent callers: insert-if-new, locks), ``documents`` (a request's documents
checked, the JSON read and written), ``handlers`` (what each endpoint does over one
``OnlineIndex``, and the status of each error), ``app`` (the one ASGI application every request
goes through), ``server`` (the socket, uvicorn, start and stop).
"""
