"""Sanitizer mode catches what nothing else can: an out-of-bounds read whose value is never used."""

from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.errors import BackendUnavailable
from mmcheck.options import Settings
from mmcheck.shapes import Shape
from mmcheck.spec import collect

ZOO = collect([Path(__file__).resolve().parent.parent / "cuda_src"])
UNUSED_READ = next(s for s in ZOO.specs if s.name == "buggy.oob_read_unused")


@pytest.fixture(scope="module", params=["gpu", "emu"])
def sanitized(request):
    settings = Settings(backend=request.param, sanitize=True)
    try:
        backend = get_backend(request.param, settings.backend_options())
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend with sanitizer: {e}")
    return settings.runner(backend)


def test_the_unused_out_of_bounds_read_is_caught(sanitized):
    result = sanitized.run(sanitized.case(UNUSED_READ, "float32", Shape(17, 19, 23)))
    assert result.outcome == "fail" and result.check == "sanitizer", result.message


def test_without_guard_bands_or_sanitizer_the_read_is_invisible(sanitized):
    """The reason the sanitizer is needed: unsanitized, the same case passes."""
    plain = Settings().runner(get_backend(sanitized.backend.name))
    assert plain.run(plain.case(UNUSED_READ, "float32", Shape(17, 19, 23))).ok
