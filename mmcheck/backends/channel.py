"""Messages between mmcheck and its worker processes, with large arrays carried in shared memory.

A message is pickled (protocol 5) through a pipe.  An array of ``SHARED_FROM`` bytes or more leaves the pickle
out of band: it is copied into a memfd (unless it lies in one already: below), whose descriptor travels over
a Unix socket beside the pipe, ahead of its message, and the receiver maps it and gets an array over that
mapping, without another copy, many times faster than through the pipe (docs/performance.md).  Below
``SHARED_FROM`` a descriptor saves nothing: the array stays in the pickle.  Where there is no memfd (not
Linux), or one cannot be made now, every array stays in the pickle.

An array made by ``shared_empty`` lies in a memfd from the start: its own descriptor travels, without the copy.
The receiver maps every array copy-on-write, so that nothing it writes reaches the sender's memory.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import socket
import weakref
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

__all__ = ["Channel", "SHARED_FROM", "ends", "shared_empty", "made_shared"]

SHARED_FROM = 1 << 20
# The sender's mapping has its pages made up front, which copies faster than a fault at a time as the copy
# reaches them (docs/performance.md).
_FILLED = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
# Descriptors one message may carry (the kernel's SCM_MAX_FD); no mmcheck message holds nearly as many arrays.
_MAX_FDS = 253
# shared_empty's memfds, by the address of their mapping: (descriptor, bytes).
_OWN: dict[int, tuple[int, int]] = {}


class Channel:
    """One side of a two-way channel: ``reader`` and ``writer`` are pipe ends, ``fds`` one end of a Unix
    SOCK_SEQPACKET pair (whose messages keep their boundaries, so that each message's descriptors arrive as
    one batch)."""

    def __init__(self, reader: int, writer: int, fds: int) -> None:
        self._reader = Connection(reader, writable=False)
        self._writer = Connection(writer, readable=False)
        self._fds = socket.socket(fileno=fds)

    def send(self, message: object) -> None:
        """Send ``message``; raise OSError (BrokenPipeError among them) where the other side has gone."""
        shared: list[int] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            """False (out of band) once ``buffer`` is in a memfd of its own; True keeps it in the pickle."""
            if (fd := _shared(buffer)) is None:
                return True
            shared.append(fd)
            return False

        stream = io.BytesIO()
        try:
            _Pickler(stream, protocol=5, buffer_callback=out_of_band).dump(message)
            if shared:  # the descriptors go first: the receiver takes them while it unpickles
                socket.send_fds(self._fds, [b"."], shared)
        finally:
            for fd in shared:  # the message in flight holds its own references
                os.close(fd)
        self._writer.send_bytes(stream.getbuffer())

    def poll(self, timeout: float | None) -> bool:
        """Whether a message can be read within ``timeout`` seconds (None: wait as long as it takes)."""
        return self._reader.poll(timeout)

    def recv(self) -> Any:
        """The next message; EOFError where the other side has gone."""
        return pickle.loads(self._reader.recv_bytes(), buffers=self._mapped())

    def _mapped(self) -> Iterator[memoryview]:
        """The message's out-of-band arrays, mapped; read only if the pickle names one."""
        _, fds, _, _ = socket.recv_fds(self._fds, 1, _MAX_FDS)
        if not fds:
            raise EOFError("the other side left while sending shared memory")
        try:
            regions = [mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_PRIVATE) for fd in fds]
        finally:
            for fd in fds:  # a mapping outlives its descriptor
                os.close(fd)
        yield from (memoryview(region) for region in regions)

    def close(self) -> None:
        for end in (self._reader, self._writer, self._fds):
            end.close()


def ends() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The descriptors of a new channel: (reader, writer, fds) for one side and for the other."""
    a_in, b_out = os.pipe()
    b_in, a_out = os.pipe()
    a_fds, b_fds = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    return (a_in, a_out, a_fds.detach()), (b_in, b_out, b_fds.detach())


class _Pickler(pickle.Pickler):
    """Every large contiguous array as its bytes out of band: numpy's own pickling keeps the arrays of dtypes
    it does not know (bfloat16) in band."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and obj.nbytes >= SHARED_FROM and obj.flags.c_contiguous:
            return _array, (pickle.PickleBuffer(obj.reshape(-1).view(np.uint8).data), obj.dtype, obj.shape)
        return NotImplemented


def _array(data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """An array over ``data`` (the receiver's mapping, or the pickle's bytes where it stayed in band)."""
    return np.frombuffer(data, np.uint8).view(dtype).reshape(shape)


def shared_empty(size: int, dtype: np.dtype) -> np.ndarray:
    """A new 1-d array of ``size`` elements, in a memfd of its own where it is large enough to be worth one
    (else in plain memory): ``send`` passes its descriptor on as it is, without a copy."""
    dtype = np.dtype(dtype)
    nbytes = size * dtype.itemsize
    made = _memfd(nbytes, populated=False) if nbytes >= SHARED_FROM else None
    if made is None:
        return np.empty(size, dtype)
    fd, region = made
    out = np.frombuffer(region, np.uint8).view(dtype)
    address = out.ctypes.data
    _OWN[address] = (fd, nbytes)
    weakref.finalize(region, _forget, address, fd)
    return out


def made_shared(array: np.ndarray) -> bool:
    """Whether ``array`` is one that shared_empty made, whole (so that ``send`` passes its descriptor on)."""
    return _OWN.get(array.ctypes.data, (None, -1))[1] == array.nbytes


def _forget(address: int, fd: int) -> None:
    if _OWN.get(address, (None, 0))[0] == fd:  # the address may be another array's already (munmap comes first)
        del _OWN[address]
    os.close(fd)


def _memfd(nbytes: int, populated: bool = True) -> tuple[int, mmap.mmap] | None:
    """A memfd of ``nbytes`` and the sender's mapping of it, if one can be made; ``populated``: its pages made
    up front, for a copy into it by one thread (a shared_empty array's are made as its writers first touch
    them, on as many cores as they run on)."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("mmcheck-array")
    except OSError:
        return None
    try:
        os.ftruncate(fd, nbytes)
        return fd, mmap.mmap(fd, nbytes, flags=_FILLED if populated else mmap.MAP_SHARED)
    except (OSError, ValueError):
        os.close(fd)
        return None


def _shared(buffer: pickle.PickleBuffer) -> int | None:
    """A memfd holding ``buffer``: its own, where shared_empty made it, else a copy, if it is large enough to be
    worth one and one can be made."""
    raw = buffer.raw()
    if raw.nbytes < SHARED_FROM:
        return None
    array = np.frombuffer(raw, np.uint8)
    if made_shared(array):
        try:
            return os.dup(_OWN[array.ctypes.data][0])
        except OSError:  # out of descriptors: the copy below is refused as well, and the array goes in band
            pass
    made = _memfd(raw.nbytes)
    if made is None:
        return None
    fd, region = made
    with region:
        region[:] = raw
    return fd
