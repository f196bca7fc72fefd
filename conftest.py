# The mmcheck plugin is registered through the pytest11 entry point of the installed package; loading it
# here too lets `pytest` work from a plain checkout, before `pip install -e .`.
try:
    import importlib.metadata as _md

    _registered = any(ep.value == "mmcheck.plugin" for ep in _md.entry_points(group="pytest11"))
except Exception:  # metadata unreadable: fall back to loading it here
    _registered = False

pytest_plugins = [] if _registered else ["mmcheck.plugin"]
