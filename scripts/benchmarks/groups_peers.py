"""The peers of ``scripts/bench groups``, each run as its own process by the harness with the
peers' Python (a separate venv: rensa, datatrove, text-dedup and their dependencies stay out of
the project's .venv). Standalone: imports nothing of the project.

  PEERS_PYTHON groups_peers.py SYSTEM INPUT_DIR WORK_DIR

SYSTEM is rensa, datatrove or text-dedup; INPUT_DIR holds ``part-*.jsonl`` (fields ``id``,
``text``). Every peer shingles by character 5-grams (whitespace dropped) and keeps its own
MinHash defaults otherwise; the parameters are printed with the result. The last line on
stdout is one JSON object: documents read, documents removed, parameters.
"""

from __future__ import annotations

import glob
import json
import os
import sys

NGRAM = 5


def chars(text: str) -> list[str]:
    return [c for c in text if not c.isspace()]


def shingles(text: str) -> list[str]:
    cs = chars(text)
    return ["".join(cs[i:i + NGRAM]) for i in range(max(1, len(cs) - NGRAM + 1))]


def read(input_dir: str):
    for path in sorted(glob.glob(os.path.join(input_dir, "part-*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def run_rensa(input_dir: str, _work: str) -> dict:
    """rensa's README way: one RMinHash per document, query the LSH, verify the candidates'
    estimated Jaccard, insert the document when it is not a duplicate. One process, in memory."""
    from rensa import RMinHash, RMinHashLSH

    num_perm, threshold, bands = 128, 0.8, 16
    lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=bands)
    kept: dict[int, RMinHash] = {}
    read_n = removed = 0
    for i, record in enumerate(read(input_dir)):
        read_n += 1
        m = RMinHash(num_perm=num_perm, seed=42)
        m.update(shingles(record["text"]))
        if any(m.jaccard(kept[c]) >= threshold for c in lsh.query(m)):
            removed += 1
            continue
        lsh.insert(i, m)
        kept[i] = m
    return {"read": read_n, "removed": removed,
            "params": f"num_perm {num_perm}, threshold {threshold}, {bands} bands, Jaccard verified"}


def run_datatrove(input_dir: str, work: str) -> dict:
    """datatrove's MinHash deduplication: the four stages of its example, each a
    LocalPipelineExecutor (signatures and filter: 2 tasks; buckets: one task per bucket on 2
    workers; cluster: 1 task, as the clustering is single-process by design)."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.word_tokenizers import WordTokenizer

    class Characters(WordTokenizer):
        """Characters as datatrove's 'words', so that its n-grams are character 5-grams."""

        def word_tokenize(self, text: str) -> list[str]:
            return chars(text)

        def sent_tokenize(self, text: str) -> list[str]:
            return [text]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            return [(0, len(text))]

    config = MinhashConfig(n_grams=NGRAM)
    tasks = 2
    reader = lambda: JsonlReader(input_dir, glob_pattern="part-*.jsonl", text_key="text", id_key="id")
    common = {"skip_completed": False}
    LocalPipelineExecutor(pipeline=[reader(), MinhashDedupSignature(output_folder=f"{work}/sigs", config=config,
                                                                    language=Characters())],
                          tasks=tasks, workers=tasks, logging_dir=f"{work}/logs/sigs", **common).run()
    LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=f"{work}/sigs", output_folder=f"{work}/buckets",
                                                        config=config)],
                          tasks=config.num_buckets, workers=tasks, logging_dir=f"{work}/logs/buckets", **common).run()
    LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=f"{work}/buckets",
                                                        output_folder=f"{work}/remove_ids", config=config)],
                          tasks=1, logging_dir=f"{work}/logs/cluster", **common).run()
    LocalPipelineExecutor(pipeline=[reader(),
                                    MinhashDedupFilter(input_folder=f"{work}/remove_ids",
                                                       exclusion_writer=JsonlWriter(f"{work}/removed",
                                                                                    compression=None)),
                                    JsonlWriter(f"{work}/kept", compression=None)],
                          tasks=tasks, workers=tasks, logging_dir=f"{work}/logs/filter", **common).run()
    count = lambda folder: sum(sum(1 for line in open(p, encoding="utf-8") if line.strip())
                               for p in glob.glob(f"{work}/{folder}/*.jsonl"))
    kept, removed = count("kept"), count("removed")
    return {"read": kept + removed, "removed": removed,
            "params": f"{config.num_buckets} buckets x {config.hashes_per_bucket} hashes, "
                      f"{tasks} tasks (buckets: {config.num_buckets} tasks on {tasks} workers; cluster: 1)"}


class _CharSplit:
    """Stands in for text-dedup's ``NON_ALPHA`` regex (``.split`` makes its 'words'), so that its
    n-grams are character 5-grams like the other peers'."""

    def split(self, text: str) -> list[str]:
        return chars(text)


def run_text_dedup(input_dir: str, work: str) -> dict:
    """text-dedup's ``text_dedup.minhash`` (Hugging Face datasets, multiprocessing) with its
    defaults but character 5-grams, on 2 processes."""
    import datasets
    import text_dedup.minhash as minhash

    minhash.NON_ALPHA = _CharSplit()
    out = f"{work}/out"
    minhash.main(["--path", "json", "--data_files", os.path.join(input_dir, "part-*.jsonl"), "--split", "train",
                  "--cache_dir", f"{work}/cache", "--output", out, "--column", "text", "--num_proc", "2",
                  "--ngram", str(NGRAM)], standalone_mode=False)
    read_n = sum(1 for _ in read(input_dir))
    kept = len(datasets.load_from_disk(out))
    return {"read": read_n, "removed": read_n - kept,
            "params": "num_perm 250, threshold 0.7 (bands from its optimal_param), 2 processes"}


def main(argv: list[str]) -> int:
    system, input_dir, work = argv
    runners = {"rensa": run_rensa, "datatrove": run_datatrove, "text-dedup": run_text_dedup}
    result = runners[system](input_dir, work)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
