"""What crosses the pipes to the emulator's worker: a launch is one request (the buffers freed since the last,
those it places, the launch, the buffers read back after it), and what a launch left in its buffers is believed
until the worker's next launch only."""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np
import pytest

from mmcheck.backends.emu import backend, worker as w

_ADD = """
__global__ void add(const float* A, const float* B, float* C) { C[threadIdx.x] += A[threadIdx.x] * B[threadIdx.x]; }
"""


@pytest.fixture
def requests(monkeypatch) -> Counter:
    """The requests made to emulator workers from here on, by op."""
    made: Counter = Counter()
    request = w.Worker._request

    def counted(self: w.Worker, op: bytes, *payload: bytes | memoryview) -> bytearray:
        made[op] += 1
        return request(self, op, *payload)

    monkeypatch.setattr(w.Worker, "_request", counted)
    return made


def test_a_launch_and_its_downloads_are_one_request(emu, build, requests):
    kernel = build(_ADD, entry="add")
    requests.clear()  # the module's load
    a, b, c = (emu.upload(x, 0) for x in (np.arange(32, dtype=np.float32), np.ones(32, np.float32),
                                           np.ones(32, np.float32)))
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")
    assert (emu.download(c) == np.arange(32) + 1).all() and (emu.download(a) == np.arange(32)).all()
    assert requests == {b"X": 1}
    c2 = emu.upload(np.zeros(32, np.float32), 0)
    emu.launch(kernel, [a, b, c2], (1, 1, 1), (32, 1, 1), 0, "forward")  # a and b are held by the worker already
    assert (emu.download(c2) == np.arange(32)).all() and requests == {b"X": 2}
    del c2  # freed with the next request, which is the next launch's own
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")
    assert requests == {b"X": 3}


def test_a_buffer_left_out_of_a_later_launch_is_read_again(emu, build, requests):
    """A launch's copy of a buffer is believed until the worker's next launch, which may have written into it
    (a kernel's stray write reaches any buffer of its worker): after that, the worker is asked."""
    kernel = build(_ADD, entry="add")
    requests.clear()
    a, b, c = (emu.upload(x, 0) for x in (np.ones(32, np.float32), np.ones(32, np.float32), np.zeros(32, np.float32)))
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")
    other = emu.upload(np.zeros(32, np.float32), 0)
    emu.launch(kernel, [a, b, other], (1, 1, 1), (32, 1, 1), 0, "forward")
    assert (emu.download(c) == 1).all() and requests == {b"X": 2, b"R": 1}


def test_a_large_buffer_travels_alone(emu, build, requests, monkeypatch):
    """A buffer past the bytes a launch's request carries is placed, and read, by a request of its own: a
    request's length is 32 bits."""
    monkeypatch.setattr(backend, "_CARRIED", 64)
    kernel = build(_ADD, entry="add")
    requests.clear()
    a, b, c = (emu.upload(x, 0) for x in (np.ones(32, np.float32), np.ones(32, np.float32), np.zeros(32, np.float32)))
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")
    requests.pop(b"F", None)  # the buffers of earlier tests, freed before the first of these
    assert (emu.download(c) == 1).all() and requests == {b"A": 3, b"X": 1, b"R": 1}


def test_a_buffer_the_worker_cannot_map_is_refused_for_want_of_memory(emu, build):
    kernel = build(_ADD, entry="add")
    a, b, c = (emu.upload(x, 0) for x in (np.ones(32, np.float32), np.ones(32, np.float32), np.zeros(32, np.float32)))
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")
    with pytest.raises(w.NoMemory, match="cannot map"):  # a petabyte: no mapping takes it
        kernel.handle.worker._request(b"A", struct.pack("<Q", 1 << 50))
    emu.launch(kernel, [a, b, c], (1, 1, 1), (32, 1, 1), 0, "forward")  # the worker goes on
    assert (emu.download(c) == 2).all()
