"""pytest plugin (measurement only): each test's start and end, per worker, to $TIMELINE_DIR."""
import os, time, json
_f = None
_t0 = {}
def _out():
    global _f
    if _f is None:
        d = os.environ.get("TIMELINE_DIR", "/tmp/timeline"); os.makedirs(d, exist_ok=True)
        _f = open(os.path.join(d, "%s-%d.jsonl" % (os.environ.get("PYTEST_XDIST_WORKER", "main"), os.getpid())), "a")
    return _f
def pytest_runtest_logstart(nodeid, location):
    _t0[nodeid] = time.time()
def pytest_runtest_logfinish(nodeid, location):
    f = _out(); f.write(json.dumps([nodeid, _t0.pop(nodeid, None), time.time(), os.times().user + os.times().system + os.times().children_user + os.times().children_system]) + "\n"); f.flush()
def pytest_sessionstart(session):
    f = _out(); f.write(json.dumps(["<start>", time.time(), time.time(), 0]) + "\n"); f.flush()
