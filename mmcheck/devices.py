"""Which GPU a worker process uses: where there are several, each worker (pytest-xdist's, ``mmcheck check
-j``'s) takes one of its own, chosen before CUDA starts in the process.  Imports nothing heavy: the pytest
plugin calls it in every session."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

__all__ = ["gpu_count", "pin_gpu"]


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


def gpu_count(environ: Mapping[str, str]) -> int:
    return len(visible_gpus(environ))


def pin_gpu(environ: MutableMapping[str, str], worker: int) -> None:
    """Worker N sees the Nth of the visible GPUs, modulo their number, by CUDA_VISIBLE_DEVICES; one GPU or
    none leaves the devices as they are."""
    gpus = visible_gpus(environ)
    if len(gpus) > 1:
        environ["CUDA_VISIBLE_DEVICES"] = gpus[worker % len(gpus)]
