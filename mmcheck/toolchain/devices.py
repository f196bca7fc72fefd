"""What a worker process (pytest-xdist's, ``mmcheck check -j``'s) takes of the machine: where there are
several GPUs, one of its own, chosen before CUDA starts in the process; and its share of the CPU cores, for
BLAS and for mmcheck's own threads over large arrays.  Imports nothing heavy until asked: the pytest plugin
calls it in every session."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["across_cores", "blas_threads", "blas_restored", "cores", "gpu_count", "pin_gpu", "quiet_blas",
           "share_cores", "shared_capability", "visible_gpus", "without_blas"]

# Where one is set, the user chose BLAS's thread count.
THREAD_COUNTS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
# The BLAS thread counts a process without BLAS threads (without_blas) was started with, for the children it
# starts that do linear algebra (blas_restored): name=value pairs, separated by spaces.
_HELD_COUNTS = "MMCHECK_HELD_BLAS_THREADS"
# Where one is set, the user chose how long OpenBLAS's idle threads spin (2**n CPU cycles) before they sleep.
SPIN = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
# The processes sharing this machine's cores, as share_cores was told.
_sharing = 1
T = TypeVar("T")
R = TypeVar("R")


def visible_gpus(environ: Mapping[str, str]) -> list[str]:
    """The GPUs that workers are spread over, as CUDA_VISIBLE_DEVICES names them: the entries it holds where
    it is set (the user's choice), else every GPU NVML counts (NVML starts no CUDA context); none without
    NVML, a driver or a GPU."""
    if "CUDA_VISIBLE_DEVICES" in environ:
        return [d.strip() for d in environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception:  # no NVML, no driver, no GPU: nothing to spread
        return []
    return [str(i) for i in range(count)]


def shared_capability(environ: Mapping[str, str]) -> tuple[int, int] | None:
    """The compute capability of the GPUs CUDA will see, as NVML tells it without starting CUDA (a context
    takes a second or two): known this early, compiling can start while the backend opens (ahead.py).  None
    where there is none to see, no NVML, or GPUs of several capabilities (which one CUDA sees first, NVML
    cannot tell)."""
    if "CUDA_VISIBLE_DEVICES" in environ and not visible_gpus(environ):
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            found = {tuple(pynvml.nvmlDeviceGetCudaComputeCapability(pynvml.nvmlDeviceGetHandleByIndex(i)))
                     for i in range(pynvml.nvmlDeviceGetCount())}
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML, no driver: the backend will tell
        return None
    if len(found) != 1:
        return None
    major, minor = found.pop()
    return int(major), int(minor)


def gpu_count(environ: Mapping[str, str]) -> int:
    return len(visible_gpus(environ))


def pin_gpu(environ: MutableMapping[str, str], worker: int, gpus: Sequence[str] | None = None) -> None:
    """Worker N sees the Nth of the visible GPUs, modulo their number, by CUDA_VISIBLE_DEVICES; one GPU or
    none leaves the devices as they are.  ``gpus``: the visible GPUs, where they were counted already (a pool
    counts them once for all its workers, rather than each worker opening NVML as it starts)."""
    gpus = visible_gpus(environ) if gpus is None else gpus
    if len(gpus) > 1:
        environ["CUDA_VISIBLE_DEVICES"] = gpus[worker % len(gpus)]


def cores() -> int:
    """This process's share of the CPU cores (see share_cores): what its own threads may use."""
    return _share(_sharing)


def _share(workers: int) -> int:
    return max(1, len(os.sched_getaffinity(0)) // max(1, workers))


def across_cores(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``work`` of each item, on as many threads as this process has cores (numpy lets go of the GIL in its
    loops over large arrays), BLAS on one thread meanwhile (a thread per core in each would spin against the
    others); in this thread where there is one item."""
    if len(items) <= 1:
        return [work(x) for x in items]
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(min(len(items), cores())) as pool:
        return list(pool.map(work, items))


def blas_threads(workers: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that start a new process's BLAS on its share of the cores, ``workers`` processes sharing
    them (as share_cores shares them); none where the user chose a count.  Set before numpy loads: a BLAS loaded
    with a thread per core starts them all, each spinning a while before it sleeps, however few of them the
    process goes on to use (docs/performance.md)."""
    if any(name in environ for name in THREAD_COUNTS):
        return {}
    return dict.fromkeys(THREAD_COUNTS, str(_share(workers)))


def without_blas(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for a process that does no linear algebra itself (a GPU backend's worker): its BLAS starts no
    threads, and the counts ``environ`` set are held for the children it starts that do (blas_restored)."""
    held = " ".join(f"{name}={environ[name]}" for name in THREAD_COUNTS if name in environ)
    return {**environ, **dict.fromkeys(THREAD_COUNTS, "1"), _HELD_COUNTS: held}


def blas_restored(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for a child that does linear algebra (a spec's reference function, on the largest arrays),
    started by a process without BLAS threads: the counts that process was started with, not its one thread."""
    if _HELD_COUNTS not in environ:
        return dict(environ)
    held = dict(pair.split("=", 1) for pair in environ[_HELD_COUNTS].split())
    return {**{k: v for k, v in environ.items() if k not in THREAD_COUNTS and k != _HELD_COUNTS}, **held}


def quiet_blas(environ: MutableMapping[str, str] = os.environ) -> None:
    """OpenBLAS's idle threads sleep at once (after 2**4 cycles, its least) rather than spin for 2**28 cycles:
    numpy's import starts a thread per core, and each spun against the run's own work (the emulator's worker,
    on two cores: a fifth of a check's CPU time); a product large enough to need them wakes them.  Set before
    numpy loads; a spin the user chose is left alone."""
    if not any(name in environ for name in SPIN):
        environ[SPIN[0]] = "4"


def share_cores(workers: int, environ: Mapping[str, str] = os.environ) -> None:
    """This process's BLAS (the references' products) and its own threads (``cores``) run on its share of
    the CPU cores, ``workers`` processes sharing them: each BLAS would otherwise start a thread per core, all
    spinning against one another (docs/performance.md).  A BLAS thread count the user set is left alone.
    Loads numpy, whose BLAS is what is limited."""
    global _sharing
    _sharing = max(1, workers)
    if workers <= 1 or any(name in environ for name in THREAD_COUNTS):
        return
    import numpy  # noqa: F401  (its BLAS must be loaded to be limited)
    from threadpoolctl import threadpool_limits

    threadpool_limits(cores(), user_api="blas")
