"""Fixtures: a real HBase, and the shared development corpora with their reference features.

HBase is found, in order: an existing server named by DEDUP_HBASE_TEST_URL
(hbase://HOST:PORT, as scripts/test sets it); the project's launcher scripts/hbase-local
(Java and Maven present); else the HBase tests skip with the reason, or fail when
DEDUP_HBASE_REQUIRE=1 (as in CI).
"""

from __future__ import annotations

import functools
import gzip
import json
import multiprocessing
import os
import shutil
import subprocess
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def require_or_skip(reason: str):
    """Skip, or fail when DEDUP_HBASE_REQUIRE=1 (CI): there, an HBase test must run."""
    if os.environ.get("DEDUP_HBASE_REQUIRE") == "1":
        pytest.fail(f"HBase is required (DEDUP_HBASE_REQUIRE=1) but unavailable: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def hbase_url():
    """Base URL of a running HBase Thrift gateway (``hbase://HOST:PORT/``)."""
    url = os.environ.get("DEDUP_HBASE_TEST_URL")
    if url:
        yield url
        return
    launcher = ROOT / "scripts" / "hbase-local"
    if shutil.which("java") and shutil.which("mvn") and launcher.exists():
        port = os.environ.get("DEDUP_HBASE_THRIFT_PORT", "9090")
        started = subprocess.run([str(launcher), "status"], capture_output=True).returncode != 0
        if started:
            result = subprocess.run([str(launcher), "start"], capture_output=True, text=True)
            if result.returncode != 0:
                require_or_skip(f"scripts/hbase-local start failed:\n{result.stdout}\n{result.stderr}")
        admin = os.environ.get("DEDUP_HBASE_THRIFT2_PORT", "9091")
        yield f"hbase://127.0.0.1:{port}/?admin_port={admin}"
        if started:
            subprocess.run([str(launcher), "stop"], capture_output=True)
        return
    require_or_skip("no HBase: set DEDUP_HBASE_TEST_URL, or install Java 17 + Maven (scripts/hbase-local)")


def hbase_store_url(base: str) -> str:
    """A URL for a fresh set of tables under a unique prefix."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}table_prefix=t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def xwlb_path():
    path = SHARED_DATA / "xwlb_zh.jsonl.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (shared development data)")
    return path


# -- the shared corpora and what the Python reference makes of them -------------------------


@functools.cache
def shared_texts(path: Path) -> tuple[str, ...]:
    """The texts of a shared corpus (JSON lines, gzip), in file order; read once per session."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return tuple(json.loads(line)["text"] for line in f)


@functools.cache
def _reference_featurizer(name: str):
    from dedup_hbase.features import JiebaFeaturizer, ShingleFeaturizer

    return JiebaFeaturizer(fast=False) if name == "jieba" else ShingleFeaturizer(int(name.removeprefix("shingles")))


def _reference_chunk(name: str, texts: list[str]) -> list[dict[str, int]]:
    featurizer = _reference_featurizer(name)
    return [featurizer.features(text) for text in texts]


@functools.cache
def reference_features(path: Path, name: str) -> tuple[dict[str, int], ...]:
    """The Python reference's features (pure jieba, never rjieba or the core; or shingles) of
    every text of a shared corpus, in order: computed once per session, on every core (the
    compiled core's and the rjieba path's tests both compare against it)."""
    texts = shared_texts(path)
    chunks = [list(texts[i:i + 500]) for i in range(0, len(texts), 500)]
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = pool.map(_reference_chunk, [name] * len(chunks), chunks)
        return tuple(features for part in parts for features in part)
