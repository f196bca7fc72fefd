"""The plots: valid PNG files of a sensible size, the chart that fits the run (bars for one size, lines for
several), and the drawn lines and bars carry the records' numbers."""

import dataclasses
import struct

import pytest

from mmcheck.bench.plots import problem_size, roofline, roofline_figure, throughput, throughput_figure
from mmcheck.bench.records import record, throughput_info

PEAK = {"float32": 66908.0, "float64": 33454.0, "int32": 33454.0}
EFFICIENCY = {"cublas": 0.75, "naive": 0.03, "tiled": 0.2}
SIZES = (128, 512, 2048)


def rec(kernel, dtype, n, gflops, batch=1, m=None):
    m = m or n
    flops, nbytes = 2 * m * n * n * batch, 4 * (m * n + n * n + m * n) * batch
    extra = dict(kernel=kernel, file="k.cu", op="mm", dtype=dtype, M=m, N=n, K=n, batch=batch, method="cold-l2",
                 samples=100, noise=0.002, stop="noise", device="NVIDIA H100 80GB HBM3",
                 **throughput_info(flops=flops, nbytes=nbytes, seconds=flops / gflops / 1e9, peak_gflops=PEAK[dtype],
                                   peak_gbps=3352.0, cublas_median_s=None,
                                   cublas_note="cuBLAS has no int32 GEMM" if dtype == "int32" else None))
    return record([flops / gflops / 1e9], extra)


@pytest.fixture(scope="module")
def records():
    return [rec(k, d, n, PEAK[d] * e * n / 4096) for d in PEAK for k, e in EFFICIENCY.items() for n in SIZES
            if not (k == "cublas" and d == "int32")]


def lines_by_gid(fig):
    return {line.get_gid(): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()}


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24]), len(data)


def test_the_throughput_png_is_written_atomically_and_is_a_sensible_size(records, tmp_path):
    path = throughput(records, tmp_path / "plots" / "throughput.png")
    assert path == tmp_path / "plots" / "throughput.png"
    (width, height), size = png_size(path)
    assert (width, height) == (1100, 600)  # one panel and its legend, 11 x 6 inches at 100 dpi
    assert 20_000 < size < 500_000
    assert [p.name for p in path.parent.iterdir()] == ["throughput.png"]  # no temporary file left


def outside(fig, legend, ax):
    """Whether the legend lies clear of the axes, where no data is drawn."""
    fig.canvas.draw()
    box, area = legend.get_window_extent(), ax.get_window_extent()
    return box.x0 >= area.x1 or box.y1 <= area.y0


def test_several_sizes_draw_each_kernels_gflops_against_n_in_one_panel(records):
    import matplotlib.pyplot as plt

    fig = throughput_figure(records)
    try:
        (ax,) = fig.axes
        assert not ax.containers  # lines, no bars
        lines = lines_by_gid(fig)
        cublas = lines["kernel:cublas:float32 mm"]
        assert cublas.get_linestyle() == "--" and cublas.get_color() == "black"
        assert list(cublas.get_xdata()) == list(SIZES)
        assert list(cublas.get_ydata()) == pytest.approx([PEAK["float32"] * 0.75 * n / 4096 for n in SIZES])
        tiled = lines["kernel:tiled:float64 mm"]
        assert tiled.get_linestyle() == "-" and list(tiled.get_ydata()) == pytest.approx(
            [PEAK["float64"] * 0.2 * n / 4096 for n in SIZES])
        assert "kernel:cublas:int32 mm" not in lines and "kernel:naive:int32 mm" in lines
        assert list(lines["peak:float32"].get_ydata()) == [PEAK["float32"]] * 2
        assert "peak:int32,float64" in lines  # dtypes of one peak share its line
        assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
        assert ax.get_title() == "Throughput on NVIDIA H100 80GB HBM3"
        # Every kernel x dtype has a colour and marker of its own, from a qualitative palette.
        kernels = [line for gid, line in lines.items() if gid.startswith("kernel:") and ":cublas:" not in gid]
        styles = [(line.get_color(), line.get_marker()) for line in kernels]
        assert len(kernels) == 6 and len(set(styles)) == len(styles)
        assert {colour for colour, _ in styles} <= {plt.get_cmap("tab10")(i) for i in range(10)}
        # One legend of them all, outside the axes.
        (legend,) = fig.legends
        assert [t.get_text() for t in legend.get_texts()] == [
            "naive int32", "naive float32", "naive float64", "tiled int32", "tiled float32", "tiled float64",
            "cuBLAS float32", "cuBLAS float64"]
        assert outside(fig, legend, ax) and ax.get_legend() is None
        low, high = ax.get_ylim()
        assert all(low < y < high for line in ax.get_lines() for y in line.get_ydata())
    finally:
        plt.close(fig)


def test_more_kernels_than_colours_take_the_next_marker(records):
    import matplotlib.pyplot as plt

    many = [rec(f"k{i:02d}", "float32", n, 100.0 * (i + 1)) for i in range(12) for n in SIZES]
    fig = throughput_figure(many)
    try:
        lines = lines_by_gid(fig)
        first, eleventh = lines["kernel:k00:float32 mm"], lines["kernel:k10:float32 mm"]
        assert first.get_color() == eleventh.get_color() and first.get_marker() != eleventh.get_marker()
    finally:
        plt.close(fig)


def with_cublas(records):
    """The records of one size, each kernel's % of cuBLAS from its problem's cuBLAS record (none for int32)."""
    cublas = {(r.dtype, r.size): r.median for r in records if r.kernel == "cublas"}
    return [dataclasses.replace(r, extra={**r.extra, "cublas_pct": None if (r.dtype, r.size) not in cublas
                                          else 100 * cublas[r.dtype, r.size] / r.median}) for r in records]


def test_one_size_draws_a_grouped_bar_chart_of_percent_of_cublas(records):
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    one = with_cublas([r for r in records if r.size == (2048, 2048, 2048, 1)])
    fig = throughput_figure(one)
    try:
        (ax,) = fig.axes
        assert all(isinstance(c, BarContainer) for c in ax.containers)
        assert [c.get_label() for c in ax.containers] == ["float32", "float64"]  # int32 has no cuBLAS
        bars = {p.get_gid(): p for c in ax.containers for p in c.patches}
        assert bars["bar:tiled:float32"].get_width() == pytest.approx(100 * 0.2 / 0.75)
        assert bars["bar:naive:float64"].get_width() == pytest.approx(100 * 0.03 / 0.75)
        # A row per kernel, its dtypes' bars side by side within it, coloured by dtype.
        assert [t.get_text() for t in ax.get_yticklabels()] == ["naive", "tiled"]
        naive32, naive64 = bars["bar:naive:float32"], bars["bar:naive:float64"]
        assert naive32.get_y() + naive32.get_height() == pytest.approx(naive64.get_y())
        assert naive32.get_facecolor() == bars["bar:tiled:float32"].get_facecolor() != naive64.get_facecolor()
        # No line of data: cuBLAS is the dashed line at 100%.
        assert [(line.get_gid(), list(line.get_xdata())) for line in ax.get_lines()] == [("baseline", [100, 100])]
        assert ax.get_title() == "% of cuBLAS at 2048x2048x2048 on NVIDIA H100 80GB HBM3"
        assert ax.get_xlabel().splitlines() == ["% of cuBLAS on the same problem (higher is faster)",
                                               "no cuBLAS baseline, not shown: naive int32, tiled int32"]
        (legend,) = fig.legends
        assert [t.get_text() for t in legend.get_texts()] == ["float32", "float64"] and outside(fig, legend, ax)
    finally:
        plt.close(fig)


def test_one_size_without_any_cublas_draws_bars_of_gflops(records):
    import matplotlib.pyplot as plt

    fig = throughput_figure([r for r in records if r.size == (128, 128, 128, 1) and r.dtype == "int32"])
    try:
        (ax,) = fig.axes
        bars = {p.get_gid(): p.get_width() for c in ax.containers for p in c.patches}
        assert bars == pytest.approx({"bar:naive:int32": PEAK["int32"] * 0.03 * 128 / 4096,
                                      "bar:tiled:int32": PEAK["int32"] * 0.2 * 128 / 4096})
        assert ax.get_xlabel() == "GFLOP/s (GOP/s for int32)" and not ax.get_lines()
    finally:
        plt.close(fig)


def test_a_gemv_and_a_gemm_of_one_dtype_are_lines_of_their_own(records):
    import matplotlib.pyplot as plt

    gemv = rec("cublas", "float32", 4096, 850.0)
    gemv.extra["op"] = "gemv"
    fig = throughput_figure([*records, gemv])
    try:
        lines = lines_by_gid(fig)
        assert list(lines["kernel:cublas:float32 gemv"].get_ydata()) == pytest.approx([850.0])
        assert len(lines["kernel:cublas:float32 mm"].get_ydata()) == len(SIZES)
        assert "cuBLAS float32 gemv" in [t.get_text() for t in fig.legends[0].get_texts()]
    finally:
        plt.close(fig)


def test_n_is_m_for_a_square_problem_and_the_cube_root_of_the_work_otherwise():
    assert problem_size(rec("k", "float32", 1000, 1.0)) == 1000
    assert problem_size(rec("k", "float32", 64, 1.0, batch=8)) == pytest.approx(128)
    assert problem_size(rec("k", "float32", 512, 1.0, m=4096)) == pytest.approx(1024)


def test_the_roofline_png_is_a_sensible_size(records, tmp_path):
    (width, height), size = png_size(roofline(records, tmp_path / "roofline.png"))
    assert (width, height) == (1000, 600) and 20_000 < size < 500_000


def test_the_roofs_come_from_the_records_peaks_and_the_points_from_their_intensity(records):
    import matplotlib.pyplot as plt

    fig = roofline_figure(records)
    try:
        lines = lines_by_gid(fig)
        (ax,) = fig.axes
        assert ax.get_xscale() == ax.get_yscale() == "log"
        lo, hi = ax.get_xlim()
        # float32's roof runs flat from its ridge point (peak / bandwidth) to the right edge ...
        roof = lines["roof:float32"]
        assert list(roof.get_ydata()) == [PEAK["float32"]] * 2
        assert list(roof.get_xdata()) == pytest.approx([PEAK["float32"] / 3352.0, hi])
        # ... int32 and float64 share a peak on an H100, so they share a roof ...
        assert list(lines["roof:int32,float64"].get_xdata()) == pytest.approx([33454.0 / 3352.0, hi])
        # ... and the bandwidth roof rises at 3352 GB/s up to the highest ridge.
        (x0, x1), (y0, y1) = lines["roof:bandwidth"].get_xdata(), lines["roof:bandwidth"].get_ydata()
        assert (x0, x1) == pytest.approx((lo, PEAK["float32"] / 3352.0))
        assert (y0 / x0, y1 / x1) == pytest.approx((3352.0, 3352.0))
        # A kernel's points: x = GFLOP/s / GB/s = flop per byte; for this mm, 2n^3 / (12 n^2) = n / 6.
        naive = lines["kernel:naive:float32"]
        assert list(naive.get_xdata()) == pytest.approx([n / 6 for n in SIZES])
        assert list(naive.get_ydata()) == pytest.approx([PEAK["float32"] * 0.03 * n / 4096 for n in SIZES])
        assert lines["kernel:naive:float32"].get_marker() != lines["kernel:naive:float64"].get_marker()
        texts = [t.get_text() for t in ax.texts]
        assert "float32 peak 66908 GFLOP/s" in texts and "int32, float64 peak 33454 GFLOP/s" in texts
        assert "DRAM 3352 GB/s" in texts and ax.get_title() == "Roofline on NVIDIA H100 80GB HBM3"
    finally:
        plt.close(fig)


def test_nothing_to_plot_is_an_error():
    with pytest.raises(ValueError):
        throughput_figure([])
    with pytest.raises(ValueError):
        roofline_figure([])
