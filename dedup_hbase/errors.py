"""The package's exceptions. Every error a user can cause is a DedupError.

Messages say what is wrong and with which input; they do not name command-line
commands (the CLI adds what to run) or flags: an argument is named as Python calls it,
``confirm=14`` (``confirm=True`` for a flag, ``confirm=`` alone), and listed in the error's
``arguments``, which the CLI turns into its flags (``--confirm 14``) in one place. A caller that wants to tell user errors from
bugs catches DedupError: anything else escaping the library is a bug.
"""


class DedupError(Exception):
    """Base class: a problem with input, configuration or a store, with a clear message.
    ``arguments``: the Python arguments the message names (as ``name=``), for the CLI."""

    def __init__(self, *args, arguments: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.arguments = tuple(arguments)


class InvalidInput(DedupError, ValueError):
    """An argument or an input value is not valid: a scheme, a k, a simhash, a document id,
    a store URL, an input format. Also a ValueError, so library callers may catch either."""


class EmptyDocument(InvalidInput):
    """The text yields no features (empty, only punctuation, stop words or single characters).
    Its message is one of the two below, whichever path fingerprinted the text."""

    EMPTY_TEXT = "empty text"
    NO_FEATURES = "no features (only punctuation, white space, stop words or single characters)"
    REASON = "featureless text"  # what a bulk job's reject says first: "featureless text: <message>"


class IndexNotFound(DedupError):
    """The store holds no index."""


class IndexMismatch(DedupError):
    """The index was built with another scheme, format or featurizer than the one asked for."""


class FeaturizerVersionMismatch(IndexMismatch):
    """The index was built with another version of its featurizer than this package has:
    its fingerprints are not comparable; the documents have to be indexed again."""


class IndexOutdated(IndexMismatch):
    """The index was made by an earlier dedup-hbase in a form this one does not read: it has to
    be made again, with the same options, and its documents loaded again."""


class StoreError(DedupError):
    """A store could not be opened, reached or written."""


# The extra (pyproject.toml) that brings each optional package.
_EXTRAS = {"happybase": "hbase", "thriftpy2": "hbase", "uvicorn": "service", "prometheus_client": "service",
           "pyspark": "spark", "pandas": "spark", "zstandard": "zstd"}


def missing_package(e: ModuleNotFoundError) -> str:
    """What to tell a user whose command needs a package that is not installed: its name and
    how to install it (the one extra that brings it, from a clone of dedup-hbase; editable, ``-e``,
    when dedup-hbase is installed editable, so that the hint does not replace it by a copy)."""
    name = (e.name or str(e)).split(".")[0]
    extra = _EXTRAS.get(name)
    how = (f"pip install {'-e ' if _editable() else ''}'.[{extra}]' in the dedup-hbase folder" if extra
           else f"pip install {name}")
    return f"this needs the Python package {name}, which is not installed: {how}"


def _editable() -> bool:
    """Whether dedup-hbase is installed editable (pip's direct_url.json says so)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        direct = distribution("dedup-hbase").read_text("direct_url.json")
    except PackageNotFoundError:
        return False
    return bool(direct) and json.loads(direct).get("dir_info", {}).get("editable", False)
