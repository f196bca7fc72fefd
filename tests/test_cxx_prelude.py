"""The C++ front end's prelude, precompiled once into the compile cache: a later process reads it, and where a
file it read has changed since, it is precompiled again rather than handed to clang stale."""

from __future__ import annotations

import os
import shutil

import pytest

from mmcheck.backends import device_code
from mmcheck.cxx import client

pytestmark = pytest.mark.skipif(not device_code.device_code_available(),
                                reason="the front end is libclang's (pip install libclang)")


@pytest.fixture
def precompiles(tmp_path, monkeypatch):
    """A copy of the prelude's folder (a test may change its files) and a cache of their own; what the setup of a
    fresh process asks its child, counted."""
    shutil.copytree(client._EMU, tmp_path / "emu", ignore=shutil.ignore_patterns("*.cpp", "__pycache__"))
    monkeypatch.setattr(client, "_EMU", tmp_path / "emu")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    asked = []
    real = client._run

    def counting(reader, *args):
        asked.append(reader)
        return real(reader, *args)

    monkeypatch.setattr(client, "_run", counting)
    client._setup.cache_clear()
    yield lambda: [r for r in asked if r.endswith(":precompile")]
    client._setup.cache_clear()


def _fresh_setup():
    client._setup.cache_clear()  # as a new process finds it
    return client.setup()


def test_a_later_process_reads_the_prelude_precompiled_by_an_earlier_one(precompiles, tmp_path):
    first = _fresh_setup()
    assert first.pch and first.pch.startswith(str(tmp_path / "cache")) and first.inclusions
    assert _fresh_setup() == first
    assert len(precompiles()) == 1


def test_a_prelude_whose_header_changed_is_precompiled_again(precompiles, tmp_path):
    first = _fresh_setup()
    header = tmp_path / "emu" / "shim.h"
    header.write_text(header.read_text() + "\n// changed\n")
    again = _fresh_setup()
    assert len(precompiles()) == 2 and again.pch == first.pch  # the same entry, made again
    assert _fresh_setup() == again and len(precompiles()) == 2


def test_a_damaged_precompiled_prelude_is_made_again(precompiles, tmp_path):
    pch = _fresh_setup().pch
    with open(pch, "r+b") as f:
        f.seek(1000)
        f.write(b"\0" * 16)
    os.utime(pch)
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert _fresh_setup().pch == pch and len(precompiles()) == 2


def test_a_precompiled_prelude_removed_since_is_made_again(precompiles, tmp_path):
    first = client.setup()
    shutil.rmtree(tmp_path / "cache")  # as a cache emptied while a watch goes on
    assert client.setup() == first and os.path.exists(first.pch) and len(precompiles()) == 2
