"""Fixtures: a fresh store of every kind, and a real HBase.

HBase is found, in order: an existing server named by DEDUP_HBASE_TEST_URL
(hbase://HOST:PORT); the project's launcher scripts/hbase-local (Java and Maven
present); testcontainers (a Docker engine present); else the HBase tests skip with
the reason, or fail when DEDUP_HBASE_REQUIRE=1 (as in CI).
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


def _docker_running() -> bool:
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


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
    if _docker_running():
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.waiting_utils import wait_for_logs

        with DockerContainer("dajobe/hbase:latest").with_exposed_ports(9090, 9095) as c:
            wait_for_logs(c, "Started ServerConnector", timeout=180)
            yield f"hbase://{c.get_container_host_ip()}:{c.get_exposed_port(9090)}/"
        return
    require_or_skip("no HBase: set DEDUP_HBASE_TEST_URL, or install Java 17 + Maven "
                     "(scripts/hbase-local), or run a Docker engine (testcontainers)")


def hbase_store_url(base: str) -> str:
    """A URL for a fresh set of tables under a unique prefix."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}table_prefix=t{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["memory", "local", pytest.param("hbase", marks=pytest.mark.hbase)])
def store_url(request, tmp_path):
    """URL of a fresh, not yet created store of each kind; dropped afterwards."""
    if request.param == "memory":
        yield "memory:"
    elif request.param == "local":
        yield str(tmp_path / "store")
    else:
        from dedup_hbase.stores import open_store

        url = hbase_store_url(request.getfixturevalue("hbase_url"))
        yield url
        with open_store(url) as store:
            if store.exists():
                store.drop()


@pytest.fixture(scope="session")
def xwlb_path():
    path = SHARED_DATA / "xwlb_zh.jsonl.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (shared development data)")
    return path
