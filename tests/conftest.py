import os
from pathlib import Path

import pytest

from mmcheck.devices import share_cores


def pytest_configure(config):
    # This suite's own products (references, Freivalds' checks) share the cores as mmcheck's runner does.
    if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
        share_cores(int(workers))

# Kernel files that tests drive themselves (a crash, a hang, a race; the corpus of correct kernels, which
# test_corpus.py checks): not test files of this suite.
collect_ignore_glob = ["kernels/*.cu", "emu/kernels/*.cu", "corpus/*.cu", "host_code/*.cu", "hostile/*.cu"]


@pytest.fixture
def own_session(monkeypatch):
    """A test that starts pytest again starts a session of its own, not an xdist worker's (under -n the
    variables would be inherited, and pytest-benchmark switches itself off in a worker)."""
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(name)


@pytest.fixture
def pytester(pytester, own_session):
    return pytester


@pytest.fixture
def this_mmcheck(monkeypatch):
    """The separate pytest run imports this checkout's mmcheck, not the installed one."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
