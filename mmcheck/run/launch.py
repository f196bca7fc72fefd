"""One prepared launch on a backend: its parameters checked against the compiled kernel, the kernel run (or a
launch already started finished), what the backend raised said as a check's finding, and the result read back
after the checks of the buffers around it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ..backends.base import Backend, DeviceBuffer, Kernel, Launched, Submits, TensorMapArg
from ..errors import BarrierError, KernelFault, KernelTimeout, LaunchError, MmcheckError, SanitizerError, SpecError
from ..judging.judge import check_buffers
from ..cases.prepare import Prepared
from ..judging.results import Caught
from ..describe.spec import Check

__all__ = ["launch", "check_parameters", "start"]


def launch(backend: Backend, prepared: Prepared, kernel: Kernel, schedule: str, started: Launched | None = None,
           meanwhile: Callable[[], None] | None = None) -> np.ndarray:
    """Launch once (or finish the launch ``started``) and read back; the logical result, after the checks of
    the buffers around it.  ``meanwhile``: work done while the launch runs, beside this process where the
    backend can run it so (Submits), else before it."""
    spec, plan = prepared.spec, prepared.plan
    try:
        if meanwhile is not None:
            started = started or start(backend, prepared, kernel, schedule)
            meanwhile()
        if started:
            started.wait()
        else:
            check_parameters(kernel, prepared)
            backend.launch(kernel, prepared.args, plan.grid, plan.block, plan.smem, schedule, plan.cluster)
    except BarrierError as e:
        raise Caught(Check.BARRIER, str(e)) from None
    except SanitizerError as e:
        # racecheck reports a race and synccheck a barrier error, whatever tool found them.
        check = {"racecheck": Check.RACE, "synccheck": Check.BARRIER}.get(e.tool, Check.SANITIZER)
        raise Caught(check, f"the sanitizer reported: {e}") from None
    except KernelFault as e:
        raise Caught(Check.FAULT, f"the kernel crashed: {e}") from None
    except KernelTimeout as e:
        raise Caught(Check.TIMEOUT, f"the kernel did not finish: {e}") from None
    except LaunchError as e:
        raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: launch refused for {prepared.dtype} "
                           f"{prepared.shape} (grid {plan.grid}, block {plan.block}, smem {plan.smem}): {e}") from None
    after = {name: backend.download(buf) for name, buf in prepared.buffers.items()}
    check_buffers(prepared, after)
    return prepared.result(after)


def start(backend: Backend, prepared: Prepared, kernel: Kernel, schedule: str, beside: bool = True) -> Launched:
    """The launch, its parameters checked, started ``beside`` the caller where the backend can (Submits), else
    made to run when waited for; ``launch`` given it finishes it."""
    check_parameters(kernel, prepared)
    p = prepared.plan
    args = (kernel, prepared.args, p.grid, p.block, p.smem, schedule, p.cluster)
    if beside and isinstance(backend, Submits):
        return backend.submit(*args)
    return _Now(partial(backend.launch, *args))


class _Now:
    """A launch on a backend that cannot run it beside its caller: it runs when waited for."""

    def __init__(self, launch: Callable[[], None]) -> None:
        self.wait = launch


def check_parameters(kernel: Kernel, prepared: Prepared) -> None:
    """The spec's parameter list against the compiled kernel's (where the backend can tell): a mismatch is the
    spec's error, said as such, rather than a crash or garbage."""
    if kernel.params is None:
        return
    given = tuple(8 if isinstance(a, DeviceBuffer) else a.size if isinstance(a, TensorMapArg) else a.dtype.itemsize
                  for a in prepared.args)
    if given != kernel.params:
        spec = prepared.spec
        listed = ", ".join(f"{q.name} ({n} bytes)" for q, n in zip(spec.params, given))
        taken = ", ".join(f"{n} bytes" for n in kernel.params)
        raise SpecError(spec.path, f"the spec gives {len(given)} parameters ({listed}), but the compiled "
                        f"{kernel.symbol} takes {len(kernel.params)} ({taken})", kernel=spec.name, key="params")
