"""pytest plugin (-p timeline): each process writes (nodeid, start, stop, own CPU s, children's CPU s) of every
test, as JSON lines, to $TIMELINE_DIR/<worker>.jsonl; the first row is ("<start>", session start, 0, 0, 0).
Children's CPU counts the subprocesses a test waited for (os.times), not long-lived workers."""
import json, os, time

_rows = []
_start = {}


def _cpu():
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def pytest_sessionstart(session):
    _rows.append(["<start>", time.time(), 0, *_cpu()])


def pytest_runtest_logstart(nodeid, location):
    _start[nodeid] = (time.time(), *_cpu())


def pytest_runtest_logfinish(nodeid, location):
    now, own, kids = time.time(), *_cpu()
    t0, own0, kids0 = _start.pop(nodeid, (now, own, kids))
    _rows.append([nodeid, t0, now, round(own - own0, 3), round(kids - kids0, 3)])


def pytest_sessionfinish(session):
    folder = os.environ.get("TIMELINE_DIR")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(folder, f"{name}.jsonl"), "w") as f:
        for r in _rows:
            f.write(json.dumps(r) + "\n")
