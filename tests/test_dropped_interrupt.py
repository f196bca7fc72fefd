"""A Ctrl-C that Python drops (raised in a weakref callback or finalizer) is kept by the command's hook and
raised again by the next wait (interrupt.py); anything else Python drops goes where it went before."""

import sys
import time
import weakref

import pytest

from mmcheck import interrupt


def drop(error: BaseException) -> None:
    """Raise ``error`` where Python drops it: in a weakref callback."""

    class Held:
        pass

    def callback(_: object) -> None:
        raise error

    held = Held()
    ref = weakref.ref(held, callback)
    del held
    assert ref() is None


def test_a_dropped_ctrl_c_is_kept_quietly_and_raised_once_by_the_next_wait(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)  # put back after the test
    interrupt.catch_dropped()
    interrupt.catch_dropped()  # once is enough, however often it is asked for
    drop(KeyboardInterrupt())
    drop(ValueError("not a Ctrl-C"))
    assert [type(u.exc_value) for u in seen] == [ValueError]
    assert capsys.readouterr().err == ""
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        interrupt.wait(lambda seconds: time.sleep(seconds) or False, None)
    assert time.monotonic() - start < 1
    assert interrupt.wait(lambda seconds: True, None)  # raised once: the next wait waits
    assert not interrupt.wait(lambda seconds: time.sleep(seconds) or False, 0.3)  # and times out as asked
