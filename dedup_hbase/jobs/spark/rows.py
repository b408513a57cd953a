"""The index and document rows of a Spark load as Spark SQL expressions: built in the JVM,
no Python call per row.

An index row key is bit fields of the simhash (layout.py): segment (4 bytes, the chosen
blocks' bits, left-aligned) | flag (1 byte) | simhash (8 bytes), all big-endian; the
expressions here are generated from the index's ``Scheme`` (its widths, shifts and block
combinations), so any scheme gets its keys and there is one description of the layout.
In an index of several signatures (text/signatures.py) each signature's simhash (``more``
after the body's) gets the rows of its own scheme (``Index.schemes``: the same blocks, flags
of its own). A document row's value is ``index.document_value`` of ``index.document_meta``:
the 8-byte simhash of each signature, with a confirmation the 8-byte sketch, then the metadata as compact JSON with non-ASCII kept
(``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, its escapes reproduced here).
tests/test_spark.py proves both bit-identical to the Python reference.

Every row also gets ``part``: the Spark partition meant for it (its HBase region's, see
``partition_targets``), so one shuffle puts each region's rows in partitions of their own.
"""

from __future__ import annotations

import struct

from ...index.layout import SEGMENT_BITS, Scheme

ROW_COLUMNS = ("part", "key", "qualifier", "value")
# what json.dumps escapes in a string (ensure_ascii=False): these short forms, other
# control characters as \\u00xx (lowercase hex)
_SHORT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = '[\\x00-\\x1f"\\\\]'  # a Java regex


def partition_targets(partitions: int) -> list[int]:
    """For each Spark partition t < ``partitions``, an int whose Spark hash partitioning
    (Murmur3 of the int, seed 42, modulo ``partitions``) is exactly t, so a column of these
    values puts every row where it is meant to go (``repartition(partitions, "part")``)."""
    import mmh3

    found: dict[int, int] = {}
    value = 0
    while len(found) < partitions:
        found.setdefault(mmh3.hash(struct.pack("<i", value), 42) % partitions, value)
        value += 1
    return [found[t] for t in range(partitions)]


def _big_endian(value, width: int):
    """The low ``width`` bytes of a bigint column, big-endian (hex of a negative long is its
    two's complement: 16 digits)."""
    from pyspark.sql import functions as F

    return F.unhex(F.lpad(F.hex(value), 2 * width, "0"))


def segment(scheme: Scheme, flag: int, simhash):
    """``Scheme.segment`` of a bigint column (the simhash's 64 bits, signed), as a bigint."""
    from pyspark.sql import functions as F

    value, bits = F.lit(0).cast("bigint"), 0
    for i in scheme.flags[flag - 1]:
        value = F.shiftleft(value, scheme.widths[i]).bitwiseOR(block(scheme, i, simhash))
        bits += scheme.widths[i]
    return F.shiftleft(value, SEGMENT_BITS - bits)


def block(scheme: Scheme, index: int, simhash):
    """Block ``index`` of ``scheme`` of a bigint column (the simhash's 64 bits, signed), as a bigint."""
    from pyspark.sql import functions as F

    return F.shiftrightunsigned(simhash, scheme.shifts[index]).bitwiseAND(F.lit((1 << scheme.widths[index]) - 1)
                                                                         .cast("bigint"))


def row_keys(scheme: Scheme, simhash) -> list:
    """The 13-byte row keys of a simhash column (``Scheme.row_keys``): one column per flag, in
    flag order."""
    from pyspark.sql import functions as F

    whole = _big_endian(simhash, 8)
    return [F.concat(_big_endian(segment(scheme, flag, simhash), 4), F.lit(bytes([scheme.first_flag + flag - 1])),
                     whole)
            for flag in range(1, len(scheme.flags) + 1)]


def region(key, splits: list[bytes]):
    """The region of a binary key: how many of the sorted region start keys ``splits`` are
    at most the key (a binary search as nested CASE; binary compares unsigned, byte by byte)."""
    from pyspark.sql import functions as F

    def search(lo: int, part: list[bytes]):
        if not part:
            return F.lit(lo)
        mid = len(part) // 2
        return F.when(key < F.lit(part[mid]), search(lo, part[:mid])).otherwise(search(lo + mid + 1, part[mid + 1:]))
    return search(0, sorted(splits))


def _part(key, spread, splits: list[bytes], targets: list[int], per_region: int):
    """``targets[region * per_region + spread % per_region]``: the Spark partition of a row."""
    from pyspark.sql import functions as F

    slot = region(key, splits) * per_region + (spread % per_region).cast("int")
    return F.element_at(F.array(*[F.lit(t) for t in targets]), slot + 1).alias("part")


def signature_simhash(j: int):
    """The simhash column of signature ``j``: the body's (``simhash``), else ``more``'s j-th."""
    from pyspark.sql import functions as F

    return F.col("simhash") if j == 0 else F.element_at(F.col("more"), j)


def cell_qualifier(id_bytes, sketch, kept=None):
    """``layout.cell_qualifier`` of a binary id column and a bigint sketch column: the id with
    each 0x00 byte as 0x00 0xFF (hex pairs rewritten, for the ids that hold one), 0x00 0x00, the
    sketch's 8 bytes, then (``kept``: a string column, the short-text rule's) the kept text's UTF-8."""
    from pyspark.sql import functions as F

    hexed = F.hex(id_bytes)
    pairs = F.split(F.regexp_replace(hexed, "(..)", "$1 "), " ")
    escaped = F.unhex(F.array_join(F.transform(pairs, lambda p: F.when(p == "00", "00FF").otherwise(p)), ""))
    zero = hexed.rlike("^(..)*00")  # a 0x00 byte: "00" at an even place of the hex
    return F.concat(F.when(zero, escaped).otherwise(id_bytes), F.lit(b"\x00\x00"), _big_endian(sketch, 8),
                    *([F.encode(F.coalesce(kept, F.lit("")), "UTF-8")] if kept is not None else []))


def _keyed(winners, schemes: list[Scheme], sketch: bool = False, kept: bool = False):
    """winners with each signature's and flag's row key as a column (``_k0_1`` ...), the id's
    bytes (``_id``) and the column of its index cells (``_q``: the id, or with ``sketch``
    ``cell_qualifier``, with ``kept`` of the column ``kept``), computed once per document in their own projection: a struct column
    built on them refers to a key several times (its region), which Spark would compute again in
    each place."""
    from pyspark.sql import functions as F

    keys = [key.alias(f"_k{j}_{flag}") for j, scheme in enumerate(schemes)
            for flag, key in enumerate(row_keys(scheme, signature_simhash(j)), 1)]
    raw = F.col("id").cast("binary")
    qualifier = cell_qualifier(raw, F.col("sketch"), F.col("kept") if kept else None) if sketch else raw
    return winners.select("*", raw.alias("_id"), qualifier.alias("_q"), *keys)


def index_cells(schemes: list[Scheme], splits: list[bytes], targets: list[int], per_region: int) -> list:
    """Struct columns (part, key, qualifier, value) over ``_keyed`` winners: a document's index
    rows, one per signature and flag: key = row key, qualifier = ``_q`` (the id's UTF-8 bytes;
    with a confirmation, with the sketch), empty value; ``part`` from the key's region, spread
    over its partitions by the simhash's low byte."""
    from pyspark.sql import functions as F

    out = []
    for j, scheme in enumerate(schemes):
        spread = signature_simhash(j).bitwiseAND(F.lit(255).cast("bigint"))
        for flag in range(1, len(scheme.flags) + 1):
            key = F.col(f"_k{j}_{flag}")
            out.append(F.struct(_part(key, spread, splits, targets, per_region), key.alias("key"),
                                F.col("_q").alias("qualifier"), F.lit(b"").alias("value")))
    return out


def index_rows(winners, scheme: Scheme, splits: list[bytes], targets: list[int], per_region: int):
    """(id, simhash) -> index rows (ROW_COLUMNS), ``index_cells`` of each."""
    from pyspark.sql import functions as F

    structs = index_cells([scheme], splits, targets, per_region)
    return _keyed(winners, [scheme]).select(F.explode(F.array(*structs)).alias("c")).select("c.*")


def json_string(text):
    """A string column as a JSON string literal, escaped as Python's json.dumps escapes it
    with ensure_ascii=False."""
    from pyspark.sql import functions as F

    escaped = text
    for char, replacement in _SHORT.items():
        escaped = F.replace(escaped, F.lit(char), F.lit(replacement))
    for code in range(0x20):
        if chr(code) not in _SHORT:
            escaped = F.replace(escaped, F.lit(chr(code)), F.lit(f"\\u{code:04x}"))
    return F.concat(F.lit('"'), F.when(text.rlike(_NEEDS_ESCAPE), escaped).otherwise(text), F.lit('"'))


def document_value(loaded: int, simhash, source, line, title, length, more: int = 0, sketch: bool = False,
                   kept: bool = False):
    """``index.document_value`` of ``index.document_meta(loaded, source, line, title, length)``
    (source and line given, as a load gives them); ``more``: the signatures after the body (their
    simhashes in the column ``more``); ``sketch``: an index with sketches (the column
    ``sketch``); ``kept``: the short-text rule (the column ``kept``, the metadata's last entry
    where not empty)."""
    from pyspark.sql import functions as F

    meta = F.concat(
        F.lit('{"source":'), json_string(source), F.lit(',"line":'), line.cast("string"),
        F.lit(f',"loaded":{int(loaded)}'),
        F.when(title.isNotNull() & (F.length(title) > 0), F.concat(F.lit(',"title":'), json_string(title)))
        .otherwise(F.lit("")),
        F.when(length.isNotNull(), F.concat(F.lit(',"length":'), length.cast("string"))).otherwise(F.lit("")),
        *([F.when(F.coalesce(F.length("kept"), F.lit(0)) > 0, F.concat(F.lit(',"kept":'), json_string(F.col("kept"))))
           .otherwise(F.lit(""))] if kept else []),
        F.lit("}"))
    return F.concat(_big_endian(simhash, 8), *[_big_endian(signature_simhash(j), 8) for j in range(1, more + 1)],
                    *([_big_endian(F.col("sketch"), 8)] if sketch else []), meta.cast("binary"))


def doc_cell(splits: list[bytes], targets: list[int], per_region: int):
    """A struct column (part, key, qualifier, value) over ``_valued`` winners: the document
    row: key = the id's UTF-8 bytes, empty qualifier, value = ``document_value``; spread by the
    id's CRC-32."""
    from pyspark.sql import functions as F

    key = F.col("_id")
    value = F.col("_value")
    return F.struct(_part(key, F.crc32(key), splits, targets, per_region), key.alias("key"),
                    F.lit(b"").alias("qualifier"), value.alias("value"))


def _valued(winners, loaded: int, more: int = 0, sketch: bool = False, kept: bool = False):
    """winners with the id's bytes (``_id``) and the document row's value (``_value``)."""
    from pyspark.sql import functions as F

    value = document_value(loaded, F.col("simhash"), F.col("source"), F.col("line"), F.col("title"), F.col("length"),
                           more, sketch, kept)
    return winners.select("*", F.col("id").cast("binary").alias("_id"), value.alias("_value"))


def doc_rows(winners, loaded: int, splits: list[bytes], targets: list[int], per_region: int):
    """winners (id, simhash, source, line, title, length) -> document rows (ROW_COLUMNS)."""
    return _valued(winners, loaded).select(doc_cell(splits, targets, per_region).alias("c")).select("c.*")


def cells(winners, schemes: list[Scheme], loaded: int, index: tuple, docs: tuple, sketch: bool = False,
          kept: bool = False):
    """Both tables' rows of the winners in one pass (each winner read once): every signature's
    index rows (``schemes``: the index's, the body's first) and the document rows as one column
    of ROW_COLUMNS; ``index`` and ``docs``: (splits, targets, per_region) of each table;
    ``sketch``: the cells and document rows keep each winner's (an index with sketches), and
    with ``kept`` (the short-text rule) its kept text."""
    from pyspark.sql import functions as F

    structs = index_cells(schemes, *index) + [doc_cell(*docs)]
    prepared = _keyed(winners, schemes, sketch, kept).drop("_id")
    return (_valued(prepared, loaded, len(schemes) - 1, sketch, kept).select(F.explode(F.array(*structs)).alias("c"))
            .select("c.*"))
