"""Benchmarking CUDA kernels, the GPU-independent core: the timing method over an abstract clock
(``timer``), statistics (``stats``), the peak-throughput table (``peak``), benchmark records in
pytest-benchmark's JSON format (``records``), the report tables (``tables``) and plots (``plots``).

Nothing is imported here: each module is imported where it is needed (matplotlib only inside ``plots``'
functions)."""
