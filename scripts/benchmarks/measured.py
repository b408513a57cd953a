"""A command measured from outside by a small parent of its own (``measure``): wall time, CPU
time of the whole process tree (user + sys: the parent is made the subreaper of every
descendant and waits for them all, so a Spark JVM and its worker pools count), the peak RSS of
the largest process, and the peak of the tree's summed RSS (sampled every 0.2 s).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

# The parent of one measured run: subreaper of its descendants, samples the tree's RSS, waits
# for every descendant, prints one JSON line (wall, CPU, peak RSS). argv: STDOUT STDERR CMD...
# The command runs in STDOUT's folder, so that no Python of it imports a package from the
# harness's current folder (python -m and Spark's Python workers put it on sys.path).
_MEASURE = r"""
import ctypes, json, os, resource, subprocess, sys, threading, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans stay ours, and are waited for
page, me, peak, stop = os.sysconf("SC_PAGE_SIZE"), os.getpid(), [0], threading.Event()

def tree_rss():
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    total, todo = 0, list(children.get(me, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except OSError:
            pass
    return total

def sample():
    while not stop.wait(0.2):
        peak[0] = max(peak[0], tree_rss())

threading.Thread(target=sample, daemon=True).start()
with open(sys.argv[1], "w") as out, open(sys.argv[2], "w") as err:
    started = time.perf_counter()
    code = subprocess.Popen(sys.argv[3:], stdout=out, stderr=err, cwd=os.path.dirname(sys.argv[1])).wait()
    wall = time.perf_counter() - started
stop.set()
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "wall_s": wall, "cpu_s": u.ru_utime + u.ru_stime, "max_rss_mb": u.ru_maxrss / 1024,
                  "tree_rss_mb": peak[0] / 2**20}))
"""



def measure(cmd: list[str], work: Path) -> dict:
    """One command in its own process tree; its stdout and stderr kept in ``work``."""
    out, err = work / "stdout", work / "stderr"
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(out), str(err), *cmd],
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["stdout"] = out.read_text(encoding="utf-8", errors="replace")
    result["stderr"] = err.read_text(encoding="utf-8", errors="replace")
    if result["code"] != 0:
        last = (result["stderr"].strip().splitlines() or [""])[-1]
        raise RuntimeError(f"exited with {result['code']}: {last}\n{shlex.join(cmd)}\n{result['stderr'][-3000:]}")
    return result


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in the output:\n{text[-2000:]}")
