"""Which GPU a worker process uses: where there are several, each worker (pytest-xdist's, ``mmcheck check
-j``'s) takes one of its own, chosen before CUDA starts in the process.  Imports nothing heavy: the pytest
plugin calls it in every session."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

__all__ = ["gpu_count", "pin_gpu"]


def gpu_count(environ: Mapping[str, str]) -> int:
    """The GPUs that workers are spread over: NVML's count (NVML starts no CUDA context), 0 without NVML, a
    driver or a GPU, and 1 where CUDA_VISIBLE_DEVICES is set: that choice stands, the workers share it."""
    if "CUDA_VISIBLE_DEVICES" in environ:
        return 1
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception:  # no NVML, no driver, no GPU: nothing to spread
        return 0
    return count


def pin_gpu(environ: MutableMapping[str, str], worker: int) -> None:
    """Worker N sees GPU N modulo the GPUs there are, by CUDA_VISIBLE_DEVICES; one GPU, none, or a choice
    already made leaves the devices as they are."""
    count = gpu_count(environ)
    if count > 1:
        environ["CUDA_VISIBLE_DEVICES"] = str(worker % count)
