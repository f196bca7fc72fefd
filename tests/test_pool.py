"""check -j's pool: workers started ahead of their jobs open their runner as they start, and keep it."""

import os
import time
from pathlib import Path

import pytest

from mmcheck.front.options import Settings
from mmcheck.front import pool as pool_module
from mmcheck.front.pool import Check, Pool
from mmcheck.describe.spec import collect

from .fake_backend import FakeBackend
from .test_cli import KERNEL


class Opening(FakeBackend):
    """Leaves a file for each time it is opened, in the folder $OPENINGS."""

    def __init__(self, options):
        super().__init__(options)
        Path(os.environ["OPENINGS"], f"{os.getpid()}-{time.monotonic_ns()}").touch()


def _openings(folder: Path, at_least: int) -> list[str]:
    deadline = time.monotonic() + 60
    while len(found := sorted(p.name for p in folder.iterdir())) < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _jobs(tmp_path: Path, settings: Settings) -> list:
    (tmp_path / "good.cu").write_text(KERNEL.format(name="k.good", entry="good", expect="pass"))
    (tmp_path / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="fail"))
    return [Check(settings, s, d) for s, d in collect([str(tmp_path)]).select(())]


def _outcomes(pool: Pool, jobs: list) -> list[str]:
    return [r.outcome for _, r in sorted(pool.outcomes(jobs), key=lambda found: found[0])]


def test_started_workers_open_their_runner_before_any_job_and_keep_it_for_every_job(tmp_path, monkeypatch):
    openings = tmp_path / "openings"
    openings.mkdir()
    monkeypatch.setenv("OPENINGS", str(openings))  # the workers inherit this process's environment
    settings = Settings(backend="tests.test_pool:Opening", budget=64)
    pool = Pool(2, gpu=False)
    pool.start(settings)
    before = _openings(openings, at_least=2)
    assert len({name.split("-")[0] for name in before}) == 2  # one runner in each worker, no job given yet
    assert _outcomes(pool, _jobs(tmp_path, settings)) == ["fail", "fail", "pass", "pass"]
    assert sorted(p.name for p in openings.iterdir()) == before


def test_a_job_whose_settings_differ_from_the_started_ones_reopens_the_runner(tmp_path, monkeypatch):
    openings = tmp_path / "openings"
    openings.mkdir()
    monkeypatch.setenv("OPENINGS", str(openings))
    pool = Pool(1, gpu=False)
    pool.start(Settings(backend="tests.test_pool:Opening", budget=64))
    assert len(_openings(openings, at_least=1)) == 1
    jobs = _jobs(tmp_path, Settings(backend="tests.test_pool:Opening", budget=64, seed=7))
    assert _outcomes(pool, jobs) == ["fail", "fail", "pass", "pass"]
    assert len(list(openings.iterdir())) == 2  # reopened once, for the first job, then kept


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def _blas_variables() -> list[str | None]:
    from mmcheck.toolchain.devices import THREAD_COUNTS

    return [os.environ.get(name) for name in THREAD_COUNTS]


def test_workers_share_the_cores_out_among_their_blas_threads(monkeypatch):
    import numpy  # noqa: F401  (loads its BLAS, for threadpoolctl to find)

    from mmcheck.toolchain.devices import THREAD_COUNTS

    for name in THREAD_COUNTS:  # spawned workers inherit them; set, they are the user's choice
        monkeypatch.delenv(name, raising=False)

    if not _blas_threads():
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    pool = Pool(2, gpu=False)
    threads = [t for _, found in pool.outcomes([_blas_threads, _blas_threads]) for t in found]
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    assert threads and set(threads) == {share}
    # Told to the workers as they were spawned, so that their BLAS starts no more threads; this process's
    # environment is as it was.
    told = {tuple(told) for _, told in Pool(2, gpu=False).outcomes([_blas_variables, _blas_variables])}
    assert told == {tuple(str(share) for _ in THREAD_COUNTS)}
    assert not [name for name in THREAD_COUNTS if name in os.environ]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: a share of it is all of it")
def test_a_blas_thread_count_the_user_chose_goes_to_the_workers(monkeypatch):
    import numpy  # noqa: F401

    from mmcheck.toolchain.devices import THREAD_COUNTS

    for name in THREAD_COUNTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # more than a share of two workers, on two cores
    if not _blas_threads():
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    threads = [t for _, found in Pool(4, gpu=False).outcomes([_blas_threads] * 4) for t in found]
    assert threads and set(threads) == {2}
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2" and "OMP_NUM_THREADS" not in os.environ


_QUIET = """
import os, sys, types
seen = {}
cli = types.ModuleType("mmcheck.front.cli")  # the command, as the entry point runs it, without its modules
cli.main = lambda argv, held: seen.update(numpy="numpy" in sys.modules,
                                         spin=os.environ.get("OPENBLAS_THREAD_TIMEOUT")) or 0
sys.modules["mmcheck.front.cli"] = cli
from mmcheck.__main__ import main
main()
print(seen["numpy"], seen["spin"])
"""


@pytest.mark.parametrize("chosen, spin", [(None, "4"), ("20", "20")])
def test_the_command_has_blas_threads_sleep_at_once_unless_the_user_chose(chosen, spin):
    """numpy's import starts OpenBLAS's threads, one per core, which spun a tenth of a second each before they
    slept: the command tells them to sleep at once before numpy loads, a choice of the user's aside."""
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    if chosen:
        environ["OPENBLAS_THREAD_TIMEOUT"] = chosen
    done = subprocess.run([sys.executable, "-c", _QUIET], env=environ, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", spin], done.stderr


def _ignores_sigint() -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


@pytest.mark.parametrize("ignored", [False, True], ids=["as-at-a-terminal", "ignored-as-by-a-background-job"])
def test_a_ctrl_c_while_the_workers_are_spawned_is_raised_once_they_are_and_they_are_stopped(monkeypatch, ignored):
    import signal

    spawned: list[int] = []
    opened = Pool._open

    def open_and_signal_while_spawning(pool, slots, settings):
        opened(pool, slots, settings)
        submit = pool._executor.submit

        def submit_after_a_ctrl_c(*args):
            if not spawned:
                os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C, in the middle of the spawning
            future = submit(*args)
            spawned.extend(pool._executor._processes)
            return future
        monkeypatch.setattr(pool._executor, "submit", submit_after_a_ctrl_c)

    monkeypatch.setattr(Pool, "_open", open_and_signal_while_spawning)
    pool = Pool(2, gpu=False)
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN if ignored else signal.default_int_handler)
    try:
        if ignored:  # a Ctrl-C this process ignores stays ignored: the workers start
            pool.start(Settings(backend="tests.fake_backend:FakeBackend", budget=64))
            assert [found for _, found in pool.outcomes([_ignores_sigint])] == [True]
            return
        with pytest.raises(KeyboardInterrupt):
            pool.start(Settings(backend="tests.fake_backend:FakeBackend", budget=64))
    finally:
        signal.signal(signal.SIGINT, handler)
    assert spawned
    for pid in set(spawned):  # stopped and waited for
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # Spawned in such a window, a worker ignores Ctrl-C (the main process's to handle).
    fresh = Pool(1, gpu=False)
    assert [found for _, found in fresh.outcomes([_ignores_sigint])] == [True]


def _waits_in_a_callback(started: str) -> str:
    """Waits for the worker's SIGTERM in a C library's callback, as a worker parsing a kernel file waits in
    libclang's visitors."""
    import ctypes

    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def waits(a: int, b: int) -> int:
        Path(started + ".part").write_text(str(os.getpid()))
        os.replace(started + ".part", started)
        time.sleep(30)
        return 0

    items = (ctypes.c_int * 2)()
    ctypes.CDLL(None).qsort(items, len(items), ctypes.sizeof(ctypes.c_int), compare(waits))
    return "went on"


def _once_started(started: str) -> str:
    while not Path(started).exists():
        time.sleep(0.01)
    return "started"


def test_a_worker_stopped_in_a_c_librarys_callback_says_nothing_and_exits_of_itself(tmp_path, capfd):
    import functools

    started = str(tmp_path / "started")
    pool = Pool(2, gpu=False)
    outcomes = pool.outcomes([functools.partial(_waits_in_a_callback, started),
                              functools.partial(_once_started, started)])
    assert next(outcomes) == (1, "started")
    workers = list(pool._executor._processes.values())
    # The SIGTERM is to come in the callback's wait: one that came between its file and its sleep would be dropped
    # there, and the sleep would go on (a loaded machine's scheduler made that gap long enough, 3 runs in 8).
    waiting = Path(f"/proc/{Path(started).read_text()}/stat")
    deadline = time.monotonic() + 10
    while waiting.read_text().rsplit(")", 1)[1].split()[0] != "S" and time.monotonic() < deadline:
        time.sleep(0.01)
    outcomes.close()  # as Ctrl-C closes it: the workers are terminated
    # Each ended of itself, within the grace, not killed after it.
    assert [w.exitcode for w in workers] and all(w.exitcode is not None and w.exitcode >= 0 for w in workers)
    assert capfd.readouterr().err == ""  # the SIGTERM, dropped in the callback, is not printed as a traceback


def _sends_a_large_result(go: str) -> bytes:
    while not Path(go).exists():
        time.sleep(0.01)
    return bytes(400 << 20)


def _lets_go(go: str) -> str:
    Path(go).touch()
    return "went"


def test_a_worker_stopped_as_it_sends_a_result_back_exits_of_itself(tmp_path):
    """Between jobs a SIGTERM ends the worker where it comes: raised as it sent a result back, the executor's loop
    took it for the job's exception and went on to wait for the next job, until the worker was killed."""
    import functools

    go = str(tmp_path / "go")
    pool = Pool(2, gpu=False)
    outcomes = pool.outcomes([functools.partial(_sends_a_large_result, go), functools.partial(_lets_go, go)])
    assert next(outcomes) == (1, "went")
    workers = list(pool._executor._processes.values())
    time.sleep(0.1)  # the other worker's result on its way (400 MB, a second or so through the pipe)
    started = time.monotonic()
    outcomes.close()
    assert all(w.exitcode == pool_module.TERMINATED for w in workers), [w.exitcode for w in workers]
    assert time.monotonic() - started < pool_module._TERMINATE_GRACE


class _WaitsAsItsClassIsMade:
    def __set_name__(self, owner: type, name: str) -> None:
        Path(os.environ["OPENING"]).touch()
        time.sleep(30)


class OpensAsAnImportMakesAClass(FakeBackend):
    """Its opening waits in a descriptor's __set_name__, as a worker's first import of a module makes classes."""

    def __init__(self, options):
        class Made:
            field = _WaitsAsItsClassIsMade()

        super().__init__(options)


def test_a_worker_stopped_while_an_import_makes_a_class_says_nothing(tmp_path, monkeypatch, capfd):
    """Python 3.11 wraps what __set_name__ raises (RuntimeError: Error calling __set_name__): the SIGTERM's exit
    is found in the chain, and the worker ends without the pool's "Exception in initializer"."""
    opening = tmp_path / "opening"
    monkeypatch.setenv("OPENING", str(opening))
    pool = Pool(1, gpu=False)
    pool.start(Settings(backend="tests.test_pool:OpensAsAnImportMakesAClass", budget=64))
    deadline = time.monotonic() + 60
    while not opening.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert opening.exists()
    workers = list(pool._executor._processes.values())
    pool.close()
    assert [w.exitcode for w in workers] == [128 + 15]  # its own exit, not a kill after the grace
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("moment", ["the-order-is-planned", "the-checks-start"])
def test_a_ctrl_c_anywhere_in_a_check_runs_life_stops_the_workers_it_started(tmp_path, monkeypatch, moment):
    """A worker left running at a Ctrl-C outlives its pool's locks, which go as the pool does: one still spawning
    then fails to start, with a traceback."""
    from mmcheck.front import session

    started: list[Pool] = []
    start = Pool.start

    def kept(pool, settings):
        started.append(pool)
        start(pool, settings)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Pool, "start", kept)
    monkeypatch.setattr(session, "_order" if moment == "the-order-is-planned" else "_checks", interrupted)
    settings = Settings(backend="tests.fake_backend:FakeBackend", budget=64)
    pairs = [(c.spec, c.dtype) for c in _jobs(tmp_path, settings)]
    with pytest.raises(KeyboardInterrupt):
        session.Checking(settings, 2, pairs).run(lambda label, result: (label, False))
    [pool] = started
    assert pool._spawned == set() and pool._executor is None  # stopped, and waited for
