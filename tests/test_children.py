"""Compilers run as children: at once where they do not wait on one another, and none outliving an interrupt."""

import os
import signal
import sys
import threading
import time

import pytest

from mmcheck import children

SLEEP = [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1])); print(sys.argv[2])"]


def test_commands_run_at_once_and_their_results_come_in_order():
    start = time.monotonic()
    done = children.run_all([[*SLEEP, "1.0", "first"], [*SLEEP, "0.2", "second"], [*SLEEP, "1.0", "third"]])
    assert time.monotonic() - start < 2.5  # not 2.2 s and more, one after another
    assert [(d.returncode, d.stdout.strip()) for d in done] == [(0, "first"), (0, "second"), (0, "third")]


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
