"""The Arrow batch API's fingerprints against the per-document API, side by side in one run.

On the shared news corpus (all of it by default), CPU seconds of this process, one thread each,
in rounds; in each round every system fingerprints each chunk of ``--arrow-chunk`` documents in
turn, the order alternating, so that all of them share the shared machine's moments (the ratio
is taken within a round):

* the per-document API: ``Fingerprinter.fingerprint_many(texts)`` on a list of Python ``str``s
  already in memory (their UTF-8 is cached in each ``str`` after the first round: the core's
  own rate, the strictest baseline);
* the same after ``to_pylist()`` of the Arrow column: what a pipeline holding Arrow data pays
  without the batch API;
* ``Fingerprinter.fingerprint_arrow(column)``: the core reading the Arrow buffers;
* ``pipelines.arrow.fingerprints(table)``: the whole batch call (column checks, ids checked,
  the output table with ``simhash`` and ``error``).

Every system's fingerprints are compared with the per-document API's; a difference fails the run.
"""

from __future__ import annotations

import statistics
import time

from .common import Report, progress
from .load import texts


def _cpu(call, *args) -> tuple[float, object]:
    started = time.process_time()
    result = call(*args)
    return time.process_time() - started, result


def run(report: Report, args) -> None:
    import pyarrow as pa

    from dedup_hbase.pipelines import arrow
    from dedup_hbase.text import native
    from dedup_hbase.text.fingerprint import make_fingerprinter

    docs = [r["text"] for r in texts(args.arrow_docs or None)]
    mb = sum(len(t.encode()) for t in docs) / 1e6
    fingerprinter = make_fingerprinter()
    if not fingerprinter.uses_core:
        report.fail(f"the compiled core is not in use: {native.describe()}")
        return
    fingerprinter.fingerprint(docs[0])  # the dictionary loads outside the timing
    column = pa.array(docs, pa.string())
    table = pa.table({"id": [str(i) for i in range(len(docs))], "text": column})

    def simhashes(result) -> list[int | None]:
        """A system's answer as one simhash or None (no fingerprint) a document."""
        if isinstance(result, pa.Table):
            return result.column("simhash").to_pylist()
        hashes, errors = result
        return [None if i in errors else h for i, h in enumerate(hashes.tolist())]

    step = args.arrow_chunk
    cuts = [(i, min(i + step, len(docs))) for i in range(0, len(docs), step)]
    lists = [docs[a:b] for a, b in cuts]
    columns = [column.slice(a, b - a) for a, b in cuts]
    tables = [table.slice(a, b - a) for a, b in cuts]
    systems = {
        "per-document API: fingerprint_many(list of str)": lambda j: fingerprinter.fingerprint_many(lists[j]),
        "per-document API after column.to_pylist()": lambda j: fingerprinter.fingerprint_many(columns[j].to_pylist()),
        "fingerprint_arrow(column): the core reads the buffers": lambda j: fingerprinter.fingerprint_arrow(columns[j]),
        "arrow.fingerprints(table): the whole batch call":
            lambda j: arrow.fingerprints(tables[j], fingerprinter=fingerprinter),
    }
    names = list(systems)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    expected = [simhashes(fingerprinter.fingerprint_many(part)) for part in lists]  # also caches each str's UTF-8
    for r in range(args.arrow_rounds):
        progress(f"arrow: round {r + 1}/{args.arrow_rounds}")
        spent = dict.fromkeys(names, 0.0)
        for j in range(len(cuts)):  # every system on each chunk in turn: they share the machine's moments
            for name in (names if (r + j) % 2 == 0 else names[::-1]):
                cpu, result = _cpu(systems[name], j)
                spent[name] += cpu
                if simhashes(result) != expected[j]:
                    report.fail(f"arrow: {name} gave other fingerprints than the per-document API")
        for name in names:
            seconds[name].append(spent[name])
    base = seconds[names[0]]
    rows = []
    for name in names:
        ratios = [b / s for b, s in zip(base, seconds[name])]
        rows.append([name, f"{min(seconds[name]):.2f}", f"{mb / min(seconds[name]):.1f}",
                     " ".join(f"{x:.3f}" for x in ratios), f"{statistics.median(ratios):.3f}",
                     f"{min(base) / min(seconds[name]):.3f}"])
    report.section(f"Arrow batch fingerprints vs the per-document API ({len(docs):,} news documents, "
                   f"{mb:.1f} MB, one thread, {args.arrow_rounds} rounds, systems alternating per {step} documents)")
    report.table(["system", "CPU s (least round)", "MB per CPU s", "rate / per-document API's, each round",
                  "median", "least / least"], rows)
    report.data["arrow"] = {"docs": len(docs), "mb": mb, "cpu_s": seconds,
                            "ratio_median": statistics.median([b / s for b, s in zip(base, seconds[names[-1]])])}
