"""Benchmarking CUDA kernels, a driver beside the checks: one benchmark verified and recorded
(``benchmark``), the peak-throughput table (``peak``), benchmark records in pytest-benchmark's JSON format
(``records``), the report tables (``tables``) and plots (``plots``).  The timing method (``mmcheck.timing.timer``)
and its statistics (``mmcheck.timing.stats``) lie below the backends, whose clocks they drive; the cuBLAS baseline is
the GPU backends' (``backends.cublas``).

Nothing is imported here: each module is imported where it is needed (matplotlib only inside ``plots``'
functions)."""
