"""What a person looks at: the outputs of the jobs made readable.

Modules, lowest first: ``sources`` (a groups output folder and the texts of chosen ids from
the inputs), ``explain`` (one pair of documents: the fingerprints, the distance, the
differences of the texts, the terms that weigh most), ``terminal`` (a pair or a group in the
terminal), ``page`` (one self-contained HTML report of a groups output). The CLI's
``explain`` and ``report`` commands are thin shells over ``terminal`` and ``page``.
"""
