"""pytest plugin (-p timeline): each process writes (nodeid, start, stop) of every test, as JSON lines, to
$TIMELINE_DIR/<worker>.jsonl; the first row is ("<start>", session start, 0)."""
import json, os, time

_rows = []
_start = {}


def pytest_sessionstart(session):
    _rows.append(["<start>", time.time(), 0])


def pytest_runtest_logstart(nodeid, location):
    _start[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    _rows.append([nodeid, _start.pop(nodeid, time.time()), time.time()])


def pytest_sessionfinish(session):
    folder = os.environ.get("TIMELINE_DIR")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(folder, f"{name}.jsonl"), "w") as f:
        for r in _rows:
            f.write(json.dumps(r) + "\n")
