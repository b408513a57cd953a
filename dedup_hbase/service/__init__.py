"""The dedup service: one index shared by concurrent requests, served as JSON over HTTP.

Its modules, lowest first: ``batcher`` (concurrent calls joined into one), ``online`` (the
index shared by concurrent callers: insert-if-new, locks), ``documents`` (a request's documents
checked, the JSON read and written), ``access`` (bearer tokens with scopes), ``metrics`` (the
counts of ``GET /metrics`` and the access log), ``probes`` (readiness, the index's document
count), ``handlers`` (what each endpoint does over one ``OnlineIndex``, and the status of each
error), ``app`` (the routes and the one ``Dispatch`` every request goes through), ``http_lane``
(the document endpoints' fast lane), ``server`` (the socket, uvicorn, TLS, signals, start and
stop). Running it in production: docs/service.md.
"""
