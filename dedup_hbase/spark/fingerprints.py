"""``--fingerprints`` inputs parsed by Spark's own readers in the JVM (not yet: every file
goes through inputs.py's Python readers)."""

from __future__ import annotations

from .inputs import InputFile


def split(planned: list[InputFile]) -> tuple[list[InputFile], list[InputFile]]:
    """(the files the JVM reads, the rest)."""
    return [], planned


def read(spark, files: list[InputFile], fields):
    raise NotImplementedError
