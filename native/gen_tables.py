"""Generate the core's Unicode tables from the running interpreter (build.rs runs this
with the Python maturin builds for, PYO3_PYTHON), so every character property the core
uses is the one Python's ``str`` methods, ``re`` and ``unicodedata`` use.

Usage: python gen_tables.py OUT.rs

What it writes (all indexed by code point; surrogates are left out, a Rust ``char``
cannot hold one):

* ``FLAG_*`` bits per code point, in a two-level table: ``str.isalnum``, ``str.isalpha``,
  ``str.isdigit``, ``str.isdecimal`` (``re``'s ``\\d``), ``str.isspace`` (``re``'s ``\\s``,
  ``str.strip``, ``str.split``), line boundaries of ``str.splitlines``, whether the
  character changes under ``str.casefold``, and whether NFKC can leave it alone (no
  decomposition, combining class 0, never the second of a composition pair).
* ``DECOMP``: ``unicodedata.normalize("NFKD", ch)`` of every character it changes
  (Hangul syllables included, so the core needs no Hangul arithmetic to decompose).
* ``CCC``: ``unicodedata.combining`` where it is not 0.
* ``COMPOSE``: the pairs NFC composes, found by asking ``unicodedata.normalize("NFC", a + b)``
  for every canonical two-character decomposition (so composition exclusions and
  non-starter decompositions are the interpreter's, by construction), plus the Hangul
  L+V and LV+T pairs.
* ``CASEFOLD``: ``ch.casefold()`` of every character it changes.
* ``PY_SPACE``, ``PY_DECIMAL``, ``PY_WORD``: the ranges of ``re``'s ``\\s``, ``\\d`` and
  ``\\w`` (``str.isalnum()`` or ``_``) as regex class bodies.
"""

import sys
import unicodedata

MAX = 0x110000
SURROGATES = range(0xD800, 0xE000)

FLAG_ALNUM, FLAG_ALPHA, FLAG_DIGIT, FLAG_DECIMAL, FLAG_SPACE, FLAG_LINEBREAK, FLAG_CASEFOLD, FLAG_NFKC_QUICK = (
    1 << i for i in range(8))


def chars():
    return (cp for cp in range(MAX) if cp not in SURROGATES)


def main(out_path: str) -> None:
    decomp, ccc, casefold = {}, {}, {}
    for cp in chars():
        ch = chr(cp)
        nfkd = unicodedata.normalize("NFKD", ch)
        if nfkd != ch:
            decomp[cp] = nfkd
        if unicodedata.combining(ch):
            ccc[cp] = unicodedata.combining(ch)
        if ch.casefold() != ch:
            casefold[cp] = ch.casefold()

    compose = {}
    for cp in chars():
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            if parts[0] in ccc:  # the core composes onto starters only, as NFC does
                raise SystemExit(f"composition pair with a non-starter first: U+{cp:04X}")
            compose[(parts[0], parts[1])] = cp
    # Hangul: L+V -> LV and LV+T -> LVT, checked against the interpreter like the rest
    s_base, l_base, v_base, t_base, l_n, v_n, t_n = 0xAC00, 0x1100, 0x1161, 0x11A7, 19, 21, 28
    for li in range(l_n):
        for vi in range(v_n):
            lv = s_base + (li * v_n + vi) * t_n
            compose[(l_base + li, v_base + vi)] = lv
            for ti in range(1, t_n):
                compose[(lv, t_base + ti)] = lv + ti
    for (a, b), c in compose.items():
        assert unicodedata.normalize("NFC", chr(a) + chr(b)) == chr(c), (a, b, c)
    seconds = {b for (_, b) in compose}

    # normalize.rs maps full-width ASCII and the ideographic space directly
    for cp in range(0xFF01, 0xFF5F):
        assert unicodedata.normalize("NFKC", chr(cp)) == chr(cp - 0xFEE0) and (cp - 0xFEE0) not in seconds
    assert unicodedata.normalize("NFKC", "\u3000") == " "

    flags = [0] * MAX
    for cp in chars():
        ch = chr(cp)
        f = 0
        f |= FLAG_ALNUM if ch.isalnum() else 0
        f |= FLAG_ALPHA if ch.isalpha() else 0
        f |= FLAG_DIGIT if ch.isdigit() else 0
        f |= FLAG_DECIMAL if ch.isdecimal() else 0
        f |= FLAG_SPACE if ch.isspace() else 0
        f |= FLAG_LINEBREAK if len(f"a{ch}b".splitlines()) == 2 else 0
        f |= FLAG_CASEFOLD if cp in casefold else 0
        f |= FLAG_NFKC_QUICK if cp not in decomp and cp not in ccc and cp not in seconds else 0
        flags[cp] = f

    # two-level table: 256 code points a block, identical blocks shared
    blocks, index = {}, []
    for start in range(0, MAX, 256):
        block = tuple(flags[start:start + 256])
        index.append(blocks.setdefault(block, len(blocks)))
    block_list = sorted(blocks, key=blocks.get)

    def ranges(pred):
        out, start = [], None
        for cp in range(MAX + 1):
            ok = cp < MAX and cp not in SURROGATES and pred(cp)
            if ok and start is None:
                start = cp
            elif not ok and start is not None:
                out.append((start, cp - 1))
                start = None
        return "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in out)

    def rs_str(s):
        return '"' + "".join(f"\\u{{{ord(c):x}}}" for c in s) + '"'

    lines = [
        "// @generated by native/gen_tables.py from the interpreter's own Unicode data. Do not edit.",
        f"pub const UNIDATA_VERSION: &str = {unicodedata.unidata_version!r};".replace("'", '"'),
        f"pub const PYTHON_VERSION: &str = {sys.version.split()[0]!r};".replace("'", '"'),
        f"pub static FLAG_INDEX: [u16; {len(index)}] = {index!r};",
        f"pub static FLAG_BLOCKS: [[u8; 256]; {len(block_list)}] = [",
        *(f"    {list(b)!r}," for b in block_list),
        "];",
        f"pub static CCC: [(u32, u8); {len(ccc)}] = [" + ", ".join(f"({k}, {v})" for k, v in sorted(ccc.items())) + "];",
        f"pub static DECOMP: [(u32, &str); {len(decomp)}] = [",
        *(f"    ({k}, {rs_str(v)})," for k, v in sorted(decomp.items())),
        "];",
        f"pub static COMPOSE: [(u64, u32); {len(compose)}] = [",
        *(f"    ({(a << 32) | b}, {c})," for (a, b), c in sorted(compose.items())),
        "];",
        f"pub static CASEFOLD: [(u32, &str); {len(casefold)}] = [",
        *(f"    ({k}, {rs_str(v)})," for k, v in sorted(casefold.items())),
        "];",
        f"pub const PY_SPACE: &str = r\"{ranges(lambda cp: chr(cp).isspace())}\";",
        f"pub const PY_DECIMAL: &str = r\"{ranges(lambda cp: chr(cp).isdecimal())}\";",
        f"pub const PY_WORD: &str = r\"{ranges(lambda cp: chr(cp).isalnum() or cp == 0x5F)}\";",
    ]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
