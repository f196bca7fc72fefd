"""Compilers run as children: at once where they do not wait on one another, and none outliving an interrupt."""

import os
import signal
import sys
import threading
import time

import pytest

from mmcheck.toolchain import children, interrupt

SLEEP = [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1])); print(sys.argv[2])"]


def test_commands_run_at_once_and_their_results_come_in_order():
    start = time.monotonic()
    done = children.run_all([[*SLEEP, "1.0", "first"], [*SLEEP, "0.2", "second"], [*SLEEP, "1.0", "third"]])
    assert time.monotonic() - start < 2.5  # not 2.2 s and more, one after another
    assert [(d.returncode, d.stdout.strip()) for d in done] == [(0, "first"), (0, "second"), (0, "third")]


def test_an_input_larger_than_a_pipe_reaches_a_child_that_reads_it_a_few_slices_late():
    # As g++ reads a kernel unit from its stdin only once it has loaded the precompiled shim.
    late = f"import sys, time\ntime.sleep({3 * interrupt.SLICE})\nprint(len(sys.stdin.read()))"
    done = []
    command = [sys.executable, "-c", late]
    running = threading.Thread(target=lambda: done.append(children.run(command, input="x" * (1 << 20))), daemon=True)
    running.start()
    running.join(60)
    assert done, "the child still waits for the rest of its input"
    assert (done[0].returncode, done[0].stdout.strip()) == (0, str(1 << 20)), done[0].stderr


def test_an_interrupt_kills_every_command_and_waits_for_it():
    pids = []
    main = threading.get_ident()

    def interrupt_once_both_run():  # as Ctrl-C would, in the main thread, while the commands run
        while len(pids) < 2:
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)

    real_popen = children.subprocess.Popen

    def noting_popen(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        pids.append(child.pid)
        return child

    # Ctrl-C handled as at a terminal, however this test was started (a shell's background job ignores it).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_once_both_run, daemon=True).start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(children.subprocess, "Popen", noting_popen)
            with pytest.raises(KeyboardInterrupt):
                children.run_all([[*SLEEP, "60", "a"], [*SLEEP, "60", "b"]])
    finally:
        signal.signal(signal.SIGINT, handler)
    for pid in pids:  # killed and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_ctrl_c_that_comes_as_a_child_starts_kills_that_child():
    pids = []
    real_popen = children.subprocess.Popen

    def interrupted_popen(*args, **kwargs):  # the Ctrl-C comes after the fork, as Popen waits for the exec
        child = real_popen(*args, **kwargs)
        pids.append(child.pid)
        signal.raise_signal(signal.SIGINT)
        return child

    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(children.subprocess, "Popen", interrupted_popen)
            with pytest.raises(KeyboardInterrupt):
                children.run([*SLEEP, "60", "a"])
    finally:
        signal.signal(signal.SIGINT, handler)
    (pid,) = pids
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)


def _stuck_after_starting_a_compile(started) -> None:
    """A pool worker that SIGTERM cannot unwind, in the middle of a compile: a child of its own process group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=children.run, args=([*SLEEP, "60", "compile"],), daemon=True).start()
    started.set()
    time.sleep(60)


def test_a_worker_killed_after_the_grace_takes_its_compilers_with_it():
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    started = context.Event()
    worker = context.Process(target=_stuck_after_starting_a_compile, args=(started,))
    worker.start()
    assert started.wait(30)
    deadline = time.monotonic() + 10
    while not (compilers := children.processes_where(children.PARENT, worker.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert compilers
    worker.terminate()
    children.end([worker], grace=0.5)
    assert worker.exitcode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while (alive := [pid for pid in compilers if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive


def _alive(pid: int) -> bool:
    """Running (a zombie is not: a container's init may be slow to reap what it inherits)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return False
