"""``mmcheck info`` on whatever machine runs the suite: every section is there, with "none" and the reason
where this machine lacks something (CI has no GPU); and, given a GPU, each NVRTC's verdict on it."""

from __future__ import annotations

import re

import pytest

from mmcheck.front import info
from mmcheck.backends.nvrtc import nvrtc_wheels
from mmcheck.front.cli import main


@pytest.fixture(scope="module")
def said() -> str:
    return "\n".join(info.lines())


def test_every_section_is_there(said):
    assert re.match(r"mmcheck \S+, Python \d+\.\d+\.\d+ \(.+\)\n", said)
    assert re.search(r"^backends:\n  cuda-core: (available|unavailable: .+)\n"
                     r"  pycuda: (available|unavailable: .+)\n  emu: (available|unavailable: .+)\n"
                     r"  auto picks: (cuda-core|pycuda|emu|none)$", said, re.M), said
    assert re.search(r"^compilers:\n  nvcc: (release \d+\.\d+ \(V[\d.]+\) at \S+|none on PATH)$", said, re.M), said
    # auto, the default: nvcc where it is on PATH, else NVRTC
    assert re.search(r"^  mmcheck will use: (nvcc|NVRTC).* \(--compiler auto, the default\)$", said, re.M), said
    assert re.search(r"^emulator compiler: (.+ \(/\S+\)|none \(.+\))$", said, re.M), said
    assert re.search(r"^compute-sanitizer: (\S+ \(/\S+\)|none on PATH \(--sanitize on the GPU needs it\))$", said,
                     re.M), said


def test_the_gpu_and_driver_or_none_and_why(said):
    gpu, _ = info.find_gpu()
    if gpu is None:  # why, as PyCUDA, NVML and cuda-bindings each said it
        assert re.search(r"^GPU: none \(pycuda: .+; nvml: .+; bindings: .+\)\ndriver: none$", said, re.M), said
    else:
        assert f"\nGPU: {gpu.name}, compute capability {gpu.cc[0]}.{gpu.cc[1]} " in said
        assert f"supports CUDA {gpu.cuda[0]}.{gpu.cuda[1]} at most" in said


def test_every_nvrtc_wheel_is_listed_with_its_architectures(said):
    wheels = nvrtc_wheels()
    for wheel in wheels:
        assert re.search(rf"^  NVRTC( \d+\.\d+)? from {re.escape(str(wheel))}( \(cuda-bindings .+\): sm_\d+ to sm_\d+ "
                         rf"\([\d, ]+\)|: unusable: .+)$", said, re.M), said
    if not wheels:
        assert "  NVRTC wheels: none installed (pip install 'mmcheck-cuda[nvrtc]'" in said


def test_the_compiler_option_says_which_compiler_will_be_used(capsys):
    assert main(["info", "--compiler", "nvrtc"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  mmcheck will use: NVRTC( \d+\.\d+ \(.+\)|, which is unusable here: .+) \(--compiler nvrtc\)$",
                     out, re.M), out


@pytest.mark.parametrize("cc, verdict", [
    ((9, 0), r"compiles cubins for it, which load on this driver"),
    ((12, 9), r"NVRTC \d+\.\d+ compiles for sm_\d+ to sm_\d+; this GPU is sm_129 \(compute capability 12\.9\), "
              r"newer than it knows: use a newer NVRTC, or nvcc"),
])
def test_each_nvrtcs_verdict_on_the_gpu(monkeypatch, cc, verdict):
    if not any("NVRTC" in line and " sm_" in line for line in info.lines()):
        pytest.skip("no usable NVRTC here")
    monkeypatch.setattr(info, "find_gpu", lambda: (info.Gpu("Fake GPU", cc, "580.00", (13, 0), "a test"), ""))
    said = "\n".join(info.lines())
    assert "GPU: Fake GPU, compute capability" in said and "driver: 580.00, supports CUDA 13.0 at most" in said
    assert re.search(rf"^    this GPU: {verdict}", said, re.M), said
