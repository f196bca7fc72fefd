"""Messages to and from the worker process: large arrays in shared memory, small ones in the pickle, each
arriving whole, in order, and apart from the sender's copy."""

import gc
import mmap

import ml_dtypes
import numpy as np
import pytest

from mmcheck.backends import channel
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.process import ProcessBackend
from mmcheck.describe.dtypes import precision
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape

from .fake_backend import spec_for
from .test_isolation import FAKE

F32 = precision("float32")

BIG = channel.SHARED_FROM // 4  # float32 elements of an array just at the threshold


@pytest.fixture
def link():
    ours, theirs = channel.ends()
    sender, receiver = channel.Channel(*ours), channel.Channel(*theirs)
    yield sender, receiver
    sender.close()
    receiver.close()


def _mapped(array: np.ndarray) -> bool:
    """Whether ``array`` lies in a mapping of shared memory (not in the pickle's own bytes)."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_a_large_array_arrives_in_shared_memory_and_a_small_one_in_the_pickle(link):
    sender, receiver = link
    rng = np.random.default_rng(1)
    big = rng.standard_normal(BIG).astype(np.float32)
    half = rng.standard_normal(2 * BIG).astype(ml_dtypes.bfloat16)  # a dtype numpy adds: its bits go as they are
    small = np.arange(100, dtype=np.float32)  # under a pipe's capacity: this test reads only once all is sent
    sender.send(("launch", [(big, 3), (half, 0)], small))
    method, hosts, got_small = receiver.recv()
    assert method == "launch" and [offset for _, offset in hosts] == [3, 0]
    (got_big, _), (got_half, _) = hosts
    assert got_big.dtype == np.float32 and np.array_equal(got_big, big)
    assert got_half.dtype == half.dtype and np.array_equal(got_half.view(np.uint16), half.view(np.uint16))
    assert np.array_equal(got_small, small)
    assert _mapped(got_big) and _mapped(got_half) and not _mapped(got_small)


def test_messages_sent_ahead_arrive_in_order_and_apart_from_the_senders_copy(link):
    sender, receiver = link
    arrays = [np.full(BIG, i, np.float32) for i in range(3)]
    for i, array in enumerate(arrays):
        sender.send((i, array if i != 1 else array[:10]))  # the second has nothing out of band
    got = [receiver.recv() for _ in arrays]
    assert [i for i, _ in got] == [0, 1, 2]
    assert [float(a[0]) for _, a in got] == [0.0, 1.0, 2.0] and [len(a) for _, a in got] == [BIG, 10, BIG]
    got[0][1][:] = 7  # the receiver's array is its own, and writable
    assert arrays[0][0] == 0 and not receiver.poll(0)


def test_an_array_made_in_shared_memory_goes_without_a_copy_and_the_receiver_cannot_change_it(link, monkeypatch):
    sender, receiver = link
    array = channel.shared_empty(BIG, np.dtype(np.float32))
    array[:] = np.arange(BIG)
    address = array.ctypes.data
    assert _mapped(array) and address in channel._OWN
    assert not _mapped(channel.shared_empty(BIG - 1, np.dtype(np.float32)))  # under the threshold: plain memory
    monkeypatch.setattr(channel, "_memfd", lambda nbytes: pytest.fail("the array was copied"))
    for _ in range(2):  # its own descriptor, each time
        sender.send(("launch", array))
        _, got = receiver.recv()
        assert np.array_equal(got, array) and _mapped(got)
        got[:] = -1  # copy on write: what the receiver writes stays its own
        assert array[5] == 5
    del array
    gc.collect()
    assert address not in channel._OWN  # its descriptor closed with its memory


def test_an_upload_keeps_an_array_the_backend_made_and_copies_any_other():
    backend = ProcessBackend(FAKE, BackendOptions(timeout=20))
    try:
        made, other = backend.host_empty(BIG, np.dtype(np.float32)), np.zeros(BIG, np.float32)
        assert _mapped(made) and backend.upload(made, 0).handle.host is made
        kept = backend.upload(other, 0).handle.host
        assert kept is not other and not np.shares_memory(kept, other)
    finally:
        backend.close()


def test_the_receiver_sees_the_end_when_the_sender_closes(link):
    sender, receiver = link
    sender.close()
    with pytest.raises(EOFError):
        receiver.recv()


@pytest.mark.parametrize("entry, outcome, check", [
    ("good", "pass", None),
    ("writes_past_end", "fail", "guard"),  # the guard band of a C carried back in shared memory
    ("writes_input", "fail", "input"),
])
def test_a_worker_judged_on_buffers_carried_in_shared_memory(entry, outcome, check):
    """600 x 600 floats (1.4 MiB) go to the worker and back in shared memory; the verdicts are those of
    buffers carried in the pickle."""
    backend = ProcessBackend(FAKE, BackendOptions(timeout=20))
    try:
        result = Runner(backend, seed=2).run(Runner(backend).case(spec_for(entry, ("float32",)), F32,
                                                                   Shape(600, 600, 2)))
    finally:
        backend.close()
    assert (result.outcome, result.check) == (outcome, check), result.message


def test_without_a_memfd_a_large_array_stays_in_the_pickle(link, monkeypatch):
    def refused(name: str) -> int:
        raise OSError("memfd_create: not permitted here")

    monkeypatch.setattr(channel, "SHARED_FROM", 1024)
    monkeypatch.setattr(channel.os, "memfd_create", refused)
    sender, receiver = link
    array = np.arange(2048, dtype=np.float32)
    sender.send(array)
    got = receiver.recv()
    assert np.array_equal(got, array) and not _mapped(got)
