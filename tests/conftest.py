"""Fixtures: a real HBase, and the shared development corpus.

HBase is found, in order: an existing server named by DEDUP_HBASE_TEST_URL
(hbase://HOST:PORT, as scripts/test sets it); the project's launcher scripts/hbase-local
(Java and Maven present); else the HBase tests skip with the reason, or fail when
DEDUP_HBASE_REQUIRE=1 (as in CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
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
