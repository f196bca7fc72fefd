"""pytest plugin (-p select_ids): with SELECT_IDS=FILE, only the tests whose node ids are lines of FILE run
(the rest deselected, before the suite's own ordering)."""
import os
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    path = os.environ.get("SELECT_IDS")
    if not path:
        return
    keep = set(open(path).read().splitlines())
    config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in keep])
    items[:] = [i for i in items if i.nodeid in keep]
