"""Sanitizer mode catches what nothing else can: an out-of-bounds read whose value is never used."""

from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.errors import BackendUnavailable
from mmcheck.options import Settings
from mmcheck.shapes import Shape
from mmcheck.spec import collect



@pytest.fixture(scope="module")
def unused_read():
    zoo = collect([Path(__file__).resolve().parent.parent / "cuda_src"])
    found = [s for s in zoo.specs if s.name == "buggy.oob_read_unused"]
    assert found, f"cuda_src has no buggy.oob_read_unused (spec errors: {zoo.errors})"
    return found[0]


@pytest.fixture(scope="module", params=["gpu", "emu"])
def sanitized(request):
    settings = Settings(backend=request.param, sanitize=True)
    try:
        backend = get_backend(request.param, settings.backend_options())
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend with sanitizer: {e}")
    return settings.runner(backend)


def test_the_unused_out_of_bounds_read_is_caught(sanitized, unused_read):
    result = sanitized.run(sanitized.case(unused_read, "float32", Shape(32, 48, 64)))
    assert result.outcome == "fail" and result.check == "sanitizer", result.message


def test_without_a_sanitizer_the_read_is_invisible(sanitized, unused_read):
    """The reason the sanitizer is needed: unsanitized, the same case passes."""
    plain = Settings().runner(get_backend(sanitized.backend.name))
    assert plain.run(plain.case(unused_read, "float32", Shape(32, 48, 64))).ok
