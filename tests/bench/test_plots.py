"""The plots: valid PNG files of a sensible size, and the drawn lines carry the records' numbers."""

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
    assert (width, height) == (1500, 850)  # three panels, two to a row, of 7.5 x 4 inches, at 100 dpi
    assert 20_000 < size < 500_000
    assert [p.name for p in path.parent.iterdir()] == ["throughput.png"]  # no temporary file left


def test_throughput_lines_carry_each_kernels_gflops_against_n(records):
    import matplotlib.pyplot as plt

    fig = throughput_figure(records)
    try:
        lines = lines_by_gid(fig)
        cublas = lines["kernel:cublas:float32 mm"]
        assert cublas.get_linestyle() == "--" and cublas.get_color() == "black"
        assert list(cublas.get_xdata()) == list(SIZES)
        assert list(cublas.get_ydata()) == pytest.approx([PEAK["float32"] * 0.75 * n / 4096 for n in SIZES])
        tiled = lines["kernel:tiled:float64 mm"]
        assert tiled.get_linestyle() == "-" and list(tiled.get_ydata()) == pytest.approx(
            [PEAK["float64"] * 0.2 * n / 4096 for n in SIZES])
        assert "kernel:cublas:int32 mm" not in lines and "kernel:naive:int32 mm" in lines
        assert list(lines["peak:float32 mm"].get_ydata()) == [PEAK["float32"]] * 2
        # The same kernel has the same colour in every panel.
        assert lines["kernel:naive:int32 mm"].get_color() == lines["kernel:naive:float64 mm"].get_color()
        shown = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_title() for ax in shown] == ["int32 mm (no cuBLAS)", "float32 mm", "float64 mm"]
        assert shown[0].get_xscale() == "log" and shown[0].xaxis.get_transform().base == 2
        assert fig._suptitle.get_text() == "Throughput on NVIDIA H100 80GB HBM3"
        # Each panel's legend names its own kernels.
        assert [[t.get_text() for t in ax.get_legend().get_texts()] for ax in shown] == [
            ["naive", "tiled"], ["naive", "tiled", "cuBLAS"], ["naive", "tiled", "cuBLAS"]]
        # Every point lies inside its panel.
        for ax in shown:
            low, high = ax.get_ylim()
            assert all(low < y < high for line in ax.get_lines() for y in line.get_ydata())
    finally:
        plt.close(fig)


def test_a_gemv_and_a_gemm_of_one_dtype_get_panels_of_their_own(records):
    import matplotlib.pyplot as plt

    gemv = rec("cublas", "float32", 4096, 850.0)
    gemv.extra["op"] = "gemv"
    fig = throughput_figure([*records, gemv])
    try:
        lines = lines_by_gid(fig)
        assert list(lines["kernel:cublas:float32 gemv"].get_ydata()) == pytest.approx([850.0])
        assert len(lines["kernel:cublas:float32 mm"].get_ydata()) == len(SIZES)
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
