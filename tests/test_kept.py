"""A GPU's worker kept between runs (kept.py): the next run finds it, a run that finds it busy starts another,
a fault or hang never hands a worker on, it ends when idle, and it holds nothing of the run that started it."""

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from mmcheck.backends import kept, process
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.process import ProcessBackend
from mmcheck.describe.dtypes import precision
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape

from .fake_backend import spec_for

F32 = precision("float32")
GPU = "tests.fake_backend:FakeGpuBackend"


@pytest.fixture
def workers(monkeypatch, tmp_path_factory):
    """The kept workers' folder of this test alone (a short path: a socket's is at most 107 bytes), each
    worker started killed at the end."""
    tmp_path_factory.getbasetemp()  # pytest's own, made before the temporary folder is this test's
    place = tempfile.mkdtemp(prefix="k")
    monkeypatch.setattr(tempfile, "tempdir", place)
    started: list[int] = []
    yield started
    for pid in started:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    subprocess.run(["rm", "-rf", place], check=False)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def _opened(started: list[int], keep: float = 30.0, timeout: float = 2.0) -> ProcessBackend:
    backend = ProcessBackend(GPU, BackendOptions(timeout=timeout, keep=keep))
    started.append(backend._workers[None].process.pid)
    return backend


def _checked(backend: ProcessBackend, entry: str = "good") -> str:
    return Runner(backend, seed=5).run(Runner(backend, seed=5).case(spec_for(entry, ("float32",)), F32,
                                                                    Shape(5, 6, 7))).outcome


def test_the_next_run_finds_the_worker_the_last_one_left(workers):
    first = _opened(workers)
    assert _checked(first) == "pass"
    first.close()
    assert _alive(workers[0])
    second = _opened(workers)
    try:
        assert workers[1] == workers[0] and _checked(second) == "pass"
    finally:
        second.close()


def test_a_run_that_finds_the_worker_busy_starts_another(workers):
    first, second = _opened(workers), _opened(workers)
    try:
        assert workers[0] != workers[1]
        assert _checked(first) == _checked(second) == "pass"
    finally:
        first.close()
        second.close()


def test_a_worker_a_kernel_killed_or_hung_is_never_handed_on(workers, monkeypatch):
    monkeypatch.setattr(process, "_GRACE", 1.0)
    backend = _opened(workers)
    try:
        assert _checked(backend, "kills_its_process") == "internal"
        assert _checked(backend, "good") == "pass"
        second = backend._workers[None].process.pid
        assert _checked(backend, "never_returns") == "fail"
    finally:
        backend.close()
    time.sleep(0.5)
    assert second != workers[0] and not _alive(workers[0]) and not _alive(second)
    again = _opened(workers)
    try:
        assert workers[-1] not in (workers[0], second) and _checked(again) == "pass"
    finally:
        again.close()


def test_a_worker_ends_once_idle_for_its_seconds(workers):
    backend = _opened(workers, keep=1.0)
    backend.close()
    assert _alive(workers[0])
    deadline = time.monotonic() + 20
    while _alive(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(workers[0])
    assert not [p for p in os.listdir(kept.folder()) if not p.endswith(".lock")]  # its socket, its scratch


def test_no_worker_is_kept_unasked_or_where_others_may_enter_its_folder(workers):
    plain = ProcessBackend(GPU, BackendOptions(timeout=2))
    assert plain._workers[None].kept is None
    plain.close()
    os.chmod(kept.folder(), 0o755)
    shared = ProcessBackend(GPU, BackendOptions(timeout=2, keep=30))
    try:
        assert kept.folder() is None and shared._workers[None].kept is None and _checked(shared) == "pass"
    finally:
        shared.close()


def test_another_environment_gets_a_worker_of_its_own(workers, monkeypatch):
    first = _opened(workers)
    first.close()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    second = _opened(workers)
    second.close()
    assert workers[0] != workers[1]


def test_past_eight_waiting_workers_another_environment_retires_the_one_used_longest_ago(workers, monkeypatch):
    for n in range(kept.KEPT):
        monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", str(n))
        _opened(workers).close()
    monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", "0")  # the first used last: the second is retired
    _opened(workers).close()
    busy = []
    for n in range(2, kept.KEPT):  # the others held by runs: only the second may go
        monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", str(n))
        busy.append(_opened(workers))
    monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", "another")
    newcomer = _opened(workers)
    try:
        assert newcomer._workers[None].kept is not None and _checked(newcomer) == "pass"
        deadline = time.monotonic() + 10
        while _alive(workers[1]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(workers[1]) and all(_alive(workers[n]) for n in (0, *range(2, kept.KEPT)))
        assert len(list(kept.folder().glob("*.sock"))) == kept.KEPT
        monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", "0")
        busy.append(_opened(workers))
        monkeypatch.setenv("MMCHECK_TEST_ENVIRONMENT", "one more")  # every one held: one of its own, not kept
        plain = ProcessBackend(GPU, BackendOptions(timeout=2, keep=30))
        try:
            assert plain._workers[None].kept is None and _checked(plain) == "pass"
        finally:
            plain.close()
    finally:
        newcomer.close()
        for backend in busy:
            backend.close()


def test_the_worker_holds_no_pipe_of_the_run_that_started_it(workers):
    """A run whose output is read to its end (a CI step, subprocess with capture) ends when the run does."""
    script = textwrap.dedent(f"""
        import tempfile, sys
        tempfile.tempdir = {tempfile.gettempdir()!r}
        from mmcheck.backends.base import BackendOptions
        from mmcheck.backends.process import ProcessBackend
        backend = ProcessBackend({GPU!r}, BackendOptions(timeout=2, keep=30))
        print(backend._workers[None].process.pid, flush=True)
        backend.close()
    """)
    start = time.monotonic()
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    workers.append(int(ran.stdout.split()[0]))
    assert ran.returncode == 0, ran.stderr
    assert _alive(workers[0]) and time.monotonic() - start < 30
    fds = os.listdir(f"/proc/{workers[0]}/fd")
    assert len(fds) < 12, fds


def test_a_run_that_finds_its_worker_waiting_asks_nvml_nothing(workers, monkeypatch):
    """NVML's guess of the device lets compiles start while a worker starts; with the worker kept, the backend opens
    at once, and the guess (its import alone a tenth of a second) is not made."""
    from mmcheck.backends import kept_waiting
    from mmcheck.front import session
    from mmcheck.front.options import Settings

    asked = []
    monkeypatch.setattr(session, "shared_capability", lambda environ: asked.append(environ) and None)
    settings = Settings(backend="tests.fake_backend:FakeIsolatedGpuBackend", keep_worker=30.0, timeout=2.0)
    pairs = [(spec_for("good", ("float32",)), F32)]
    assert not kept_waiting(settings.backend, settings.backend_options())
    for _ in range(2):
        checking = session.Checking(settings, 1, pairs)
        workers.append(checking.here.runner.backend._workers[None].process.pid)
        assert [r.outcome for r in checking.run(lambda label, result: (label, False))] == ["pass"]
    assert kept_waiting(settings.backend, settings.backend_options())
    assert len(asked) == 1 and workers[0] == workers[1]


def test_the_worker_reads_a_relative_path_from_the_current_folder_of_the_run_it_serves(workers, monkeypatch, tmp_path):
    """A kernel file named by a relative path is read from the run's folder, not from the first run's.  (A GPU
    backend of mmcheck's, whose worker imports nothing from the folder it starts in.)"""
    monkeypatch.setattr(kept, "key", lambda inner, environ, key=kept.key: key("cuda-core", environ))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        backend = _opened(workers)
        try:
            assert os.readlink(f"/proc/{workers[-1]}/cwd") == str(tmp_path / name)
        finally:
            backend.close()
    assert workers[0] == workers[1]


def test_a_class_of_ones_own_is_kept_per_folder_it_is_imported_from(monkeypatch, tmp_path):
    keys = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        keys.append((kept.key("mine:Backend", {}), kept.key("cuda-core", {})))
    assert keys[0][0] != keys[1][0] and keys[0][1] == keys[1][1]


def test_a_worker_closed_twice_gives_its_slot_back_once(workers):
    """The second close finds it closed: a descriptor given back twice could be another's by then."""
    backend = _opened(workers)
    worker = backend._workers[None]
    worker.close()
    worker.close()
    backend.close()
    again = _opened(workers)
    again.close()
    assert workers[0] == workers[1]
