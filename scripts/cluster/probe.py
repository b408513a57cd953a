"""Readiness probes and HDFS set-up for scripts/cluster-local (run with a Python that has happybase
and thriftpy2, e.g. the project's .venv). Every wait is a real call to the service, not an open
port, and gives up at once when one of the given processes has exited.

    probe.py zk PORT
    probe.py hdfs NN_HTTP_PORT DATANODES
    probe.py hdfs-setup NN_HTTP_PORT SUPERUSER HBASE_USER SPARK_USER CLIENT_USER
    probe.py hbase MASTER_INFO_PORT REGIONSERVERS THRIFT_PORT THRIFT2_PORT THRIFT_JAR
    probe.py spark WEB_PORT WORKERS
    probe.py yarn RM_WEB_PORT NODEMANAGERS
    probe.py regions RS_INFO_PORT...           (each region server's region and request counts)

Options (before the command): --deadline SECONDS (default 240), --pids PID,PID,... (processes that
must stay alive while waiting), --mode quick|meta|full (hbase: how deep the gateway round trips go;
see hbase_gateways).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


class NotYet(Exception):
    """The service answers, but is not ready yet (or does not answer yet)."""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait(what: str, step, deadline: float, pids: list[int], pause: float = 0.5):
    last = "no answer yet"
    while True:
        for pid in pids:
            if not alive(pid):
                sys.exit(f"{what}: process {pid} exited while waiting (last: {last})")
        try:
            return step()
        except Exception as e:
            text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
            last = f"{type(e).__name__}: {text}"
        if time.time() > deadline:
            sys.exit(f"{what}: not ready in time; last: {last}")
        time.sleep(pause)


def http_json(port: int, path: str, method: str = "GET", timeout: float = 10) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=b"" if method == "PUT" else None)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"{}")


def jmx(port: int, query: str) -> dict:
    beans = http_json(port, "/jmx?qry=" + urllib.parse.quote(query, safe=":=,")).get("beans") or []
    if not beans:
        raise NotYet(f"no JMX bean {query} yet")
    return beans[0]


# ------------------------------------------------------------------------------------------ zk

def zk(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(b"ruok")
        if s.recv(16) != b"imok":
            raise NotYet("ZooKeeper did not answer imok")


# ---------------------------------------------------------------------------------------- hdfs

def hdfs(port: int, datanodes: int) -> str:
    state = jmx(port, "Hadoop:service=NameNode,name=FSNamesystemState")
    info = jmx(port, "Hadoop:service=NameNode,name=NameNodeInfo")
    live = state.get("NumLiveDataNodes", 0)
    if info.get("Safemode"):
        raise NotYet(f"NameNode in safe mode: {info['Safemode'][:200]}")
    if live < datanodes:
        raise NotYet(f"{live} live DataNodes of {datanodes}")
    return f"{live} live DataNodes, {state.get('FSState')}"


def webhdfs(port: int, path: str, user: str, op: str, **params: str) -> dict:
    query = urllib.parse.urlencode({"op": op, "user.name": user, **params})
    return http_json(port, f"/webhdfs/v1{path}?{query}", method="PUT")


def hdfs_setup(port: int, superuser: str, hbase_user: str, spark_user: str, client_user: str) -> None:
    """The folders a real cluster has before HBase and Spark jobs start (made as the superuser)."""
    dirs = [
        # path, owner, permission
        ("/hbase", hbase_user, "755"),          # hbase.rootdir: HBase makes everything below
        ("/tmp", superuser, "1777"),            # like /tmp: anyone writes, only owners delete
        ("/tmp/dedup-hbase-spark", superuser, "1777"),  # HFiles of Spark bulk loads (--staging)
        ("/user", superuser, "755"),
    ]
    for user in dict.fromkeys([client_user, spark_user, hbase_user]):
        dirs.append((f"/user/{user}", user, "755"))
    for path, owner, perm in dirs:
        r = webhdfs(port, path, superuser, "MKDIRS", permission=perm)
        if not r.get("boolean"):
            raise SystemExit(f"WebHDFS MKDIRS {path} failed: {r}")
        webhdfs(port, path, superuser, "SETPERMISSION", permission=perm)  # MKDIRS applies the umask
        if owner != superuser:
            webhdfs(port, path, superuser, "SETOWNER", owner=owner, group=owner)


# --------------------------------------------------------------------------------------- hbase

PROBE = b"__cluster_local_probe"


def hbase_master(port: int, regionservers: int) -> str:
    bean = jmx(port, "Hadoop:service=HBase,name=Master,sub=Server")
    if str(bean.get("tag.isActiveMaster")).lower() != "true":
        raise NotYet("master not active yet")
    n = bean.get("numRegionServers", 0)
    if n < regionservers:
        raise NotYet(f"{n} live region servers of {regionservers}")
    return f"{n} region servers"


def thrift2_module(thrift_jar: str):
    import zipfile

    import thriftpy2
    idl = os.path.join(tempfile.mkdtemp(prefix="cluster-local-"), "hbase_thrift2.thrift")
    with zipfile.ZipFile(thrift_jar) as z, open(idl, "wb") as f:
        f.write(z.read("org/apache/hadoop/hbase/thrift2/hbase.thrift"))
    return thriftpy2.load(idl, module_name="cluster_local_probe_thrift")


def thrift2_client(hb2, port: int):
    from thriftpy2.protocol import TBinaryProtocolFactory
    from thriftpy2.rpc import make_client
    from thriftpy2.transport import TBufferedTransportFactory
    return make_client(hb2.THBaseService, "127.0.0.1", port, timeout=30000,
                       trans_factory=TBufferedTransportFactory(), proto_factory=TBinaryProtocolFactory())


def hbase_gateways(thrift_port: int, thrift2_port: int, thrift_jar: str, mode: str,
                   deadline: float, pids: list[int]) -> None:
    """mode quick: one call per gateway that needs the master (list tables);
    meta (default): also read a row of hbase:meta through each gateway, i.e. from the region
    server that holds it (the master has assigned it: it is initialized);
    full: also create a table, put a row through Thrift1, read it back through Thrift2, drop it
    (the whole DDL and data path; some 10-30 s more on 2 busy cores)."""
    import happybase
    hb2 = thrift2_module(thrift_jar)

    def thrift1():
        c = happybase.Connection("127.0.0.1", thrift_port, timeout=30000)
        try:
            names = c.tables()
            if mode == "quick":
                return
            rows = list(c.table(b"hbase:meta").scan(limit=1))
            assert rows, "hbase:meta has no rows yet"
            if mode != "full":
                return
            if PROBE in names:
                c.delete_table(PROBE, disable=True)
            c.create_table(PROBE, {"p": dict(max_versions=1)})
            c.table(PROBE).put(b"row", {b"p:q": b"v"})
        finally:
            c.close()

    def thrift2():
        c = thrift2_client(hb2, thrift2_port)
        try:
            c.getTableNamesByNamespace("default")
            if mode == "quick":
                return
            rows = c.getScannerResults(b"hbase:meta", hb2.TScan(caching=1), 1)
            assert rows, "hbase:meta has no rows yet"
            if mode != "full":
                return
            r = c.get(PROBE, hb2.TGet(row=b"row"))
            assert r.columnValues and r.columnValues[0].value == b"v", r
        finally:
            c.close()

    def drop():
        c = happybase.Connection("127.0.0.1", thrift_port, timeout=30000)
        try:
            c.delete_table(PROBE, disable=True)
        finally:
            c.close()

    wait("Thrift1 gateway", thrift1, deadline, pids, 0.5)
    wait("Thrift2 gateway", thrift2, deadline, pids, 0.5)
    if mode == "full":
        wait("Thrift1 gateway (drop the probe table)", drop, deadline, pids, 1)


# --------------------------------------------------------------------------------------- spark

def spark(port: int, workers: int) -> str:
    state = http_json(port, "/json")
    if state.get("status") != "ALIVE":
        raise NotYet(f"master status {state.get('status')}")
    alive_workers = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
    if len(alive_workers) < workers:
        raise NotYet(f"{len(alive_workers)} ALIVE workers of {workers}")
    return ", ".join(f"{w['host']}:{w['port']} ({w['cores']} core, {w['memory']} MB)" for w in alive_workers)


# ---------------------------------------------------------------------------------------- yarn

def yarn(port: int, nodes: int) -> str:
    info = http_json(port, "/ws/v1/cluster/info")["clusterInfo"]
    if info.get("state") != "STARTED":
        raise NotYet(f"ResourceManager {info.get('state')}")
    running = [n for n in (http_json(port, "/ws/v1/cluster/nodes").get("nodes") or {}).get("node", [])
               if n.get("state") == "RUNNING"]
    if len(running) < nodes:
        raise NotYet(f"{len(running)} RUNNING NodeManagers of {nodes}")
    return ", ".join(f"{n['id']} ({n['availMemoryMB']} MB free)" for n in running)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--deadline", type=float, default=240)
    p.add_argument("--pids", default="")
    p.add_argument("--mode", choices=["quick", "meta", "full"], default="meta")
    p.add_argument("command")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    deadline = time.time() + a.deadline
    pids = [int(x) for x in a.pids.split(",") if x]
    args = a.args
    if a.command == "zk":
        wait("ZooKeeper", lambda: zk(int(args[0])), deadline, pids, 0.2)
    elif a.command == "hdfs":
        print(wait("HDFS", lambda: hdfs(int(args[0]), int(args[1])), deadline, pids))
    elif a.command == "hdfs-setup":
        hdfs_setup(int(args[0]), *args[1:5])
    elif a.command == "hbase":
        master_info, regionservers, t1, t2, jar = args
        print(wait("HBase master", lambda: hbase_master(int(master_info), int(regionservers)), deadline, pids))
        hbase_gateways(int(t1), int(t2), jar, a.mode, deadline, pids)
    elif a.command == "spark":
        print(wait("Spark master", lambda: spark(int(args[0]), int(args[1])), deadline, pids))
    elif a.command == "yarn":
        print(wait("YARN", lambda: yarn(int(args[0]), int(args[1])), deadline, pids))
    elif a.command == "regions":
        for port in args:
            try:
                bean = jmx(int(port), "Hadoop:service=HBase,name=RegionServer,sub=Server")
                print(f"{bean.get('tag.serverName')}: {bean.get('regionCount')} regions, "
                      f"{bean.get('readRequestCount')} reads, {bean.get('writeRequestCount')} writes")
            except Exception as e:
                print(f"127.0.0.1:{port}: no answer ({type(e).__name__})")
    else:
        sys.exit(f"unknown command {a.command}")


if __name__ == "__main__":
    main()
