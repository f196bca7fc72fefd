"""With WPROF_DIR set: a GPU worker process (python -m mmcheck.backends.process ...) runs under cProfile, its
profile written to WPROF_DIR/<kind>-<pid>.prof at exit; with WPROF_ALL, every Python process is."""
import os, sys
_dir = os.environ.get("WPROF_DIR")


def _kind():
    s = " ".join(sys.orig_argv)
    if "mmcheck.backends.process" in s:
        return "gpuworker"
    if "spawn_main" in s:
        return "spawn"
    if os.environ.get("PYTEST_XDIST_WORKER") or "execnet" in s or "sys.stdin.readline" in s:
        return "xdist"
    if "pytest" in s:
        return "pytest"
    if "mmcheck" in s:
        return "cli"
    return "other"


if _dir and (os.environ.get("WPROF_ALL") or "mmcheck.backends.process" in " ".join(sys.orig_argv)):
    import atexit, cProfile
    _p = cProfile.Profile()
    _p.enable()

    def _dump():
        _p.disable()
        os.makedirs(_dir, exist_ok=True)
        _p.dump_stats(os.path.join(_dir, f"{_kind()}-{os.getpid()}.prof"))
    atexit.register(_dump)
