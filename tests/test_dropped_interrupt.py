"""A Ctrl-C that Python drops (raised in a weakref callback, a finalizer or a C library's callback) is kept by
the command's hook and raised again by the next wait (interrupt.py); anything else Python drops goes where it
went before."""

import ctypes
import sys
import time
import weakref

import pytest

from mmcheck.toolchain import interrupt


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


def drop_in_c(error: BaseException) -> list[int]:
    """Raise ``error`` in a C library's callback (libc's qsort, as libclang calls its visitors), where ctypes
    drops it and the library goes on; what the library did."""
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def first_call_raises(a: int, b: int) -> int:
        if not raised:
            raised.append(True)
            raise error
        return ctypes.c_int.from_address(a).value - ctypes.c_int.from_address(b).value

    raised: list[bool] = []
    items = (ctypes.c_int * 4)(3, 1, 2, 0)
    ctypes.CDLL(None).qsort(items, len(items), ctypes.sizeof(ctypes.c_int), compare(first_call_raises))
    return list(items)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit], ids=["ctrl-c", "a-worker's-sigterm"])
def test_a_stop_dropped_in_a_c_librarys_callback_is_kept_quietly_and_raised_by_check(monkeypatch, capsys, stop):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    interrupt.catch_dropped()
    assert sorted(drop_in_c(stop(143))) == [0, 1, 2, 3]  # the library went on past it
    assert seen == [] and capsys.readouterr().err == ""
    with pytest.raises(stop):
        interrupt.check()
    interrupt.check()  # raised once


def test_a_stop_wrapped_in_another_exception_is_found_in_its_chain():
    class Raises:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    with pytest.raises(BaseException) as info:  # RuntimeError on Python 3.11; the stop itself from 3.12
        class Made:
            field = Raises()
    assert isinstance(interrupt.wrapped_stop(info.value), KeyboardInterrupt)
    try:
        try:
            raise SystemExit(143)
        except SystemExit:
            raise ValueError("while it unwound")  # noqa: B904  (the stop is its context, not its cause)
    except ValueError as e:
        assert interrupt.wrapped_stop(e).code == 143
    assert interrupt.wrapped_stop(ValueError("alone")) is None
