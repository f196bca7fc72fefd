"""What mmcheck reads of an ELF file (mmcheck/elf.py), of files g++ makes here: a shared library, as the
emulator's modules are, and an object file, whose relocations apply within a section, as a cubin's do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mmcheck.toolchain.compile import INSTANCE, function_symbols, instance_symbol
from mmcheck.toolchain.elf import UNDEFINED, Elf

SOURCE = f"""
#include <cstdio>
__attribute__((visibility("hidden"))) void chosen(float* c) {{ c[0] = 1; }}
void other(float* c) {{ std::puts("other"); c[0] = 2; }}
void* {INSTANCE} = (void*)&chosen;
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, bytes]:
    """The source compiled as a shared library and as an object file."""
    if shutil.which("g++") is None:
        pytest.skip("no g++ here")
    folder = tmp_path_factory.mktemp("elf")
    (folder / "k.cpp").write_text(SOURCE)
    for flags, out in ((["-shared", "-fPIC"], "k.so"), (["-c"], "k.o")):
        subprocess.run(["g++", "-O1", *flags, "k.cpp", "-o", out], cwd=folder, check=True)
    return {name: (folder / name).read_bytes() for name in ("k.so", "k.o")}


@pytest.mark.parametrize("name", ["k.so", "k.o"])
def test_the_functions_and_the_instance_its_variable_names(built, name):
    assert {"_Z6chosenPf", "_Z5otherPf"} <= set(function_symbols(built[name]))
    assert instance_symbol(built[name]) == "_Z6chosenPf"


def test_what_a_shared_library_leaves_to_others(built):
    undefined = {s.name for s in Elf(built["k.so"]).symbols(".dynsym") if s.name and s.section == UNDEFINED}
    assert "puts" in undefined and "_Z5otherPf" not in undefined


def test_a_file_without_the_table_or_the_variable_answers_none(built, tmp_path):
    assert Elf(built["k.so"]).symbols(".no_such_table") == []
    (tmp_path / "plain.cpp").write_text("void plain() {}\n")
    subprocess.run(["g++", "-c", "plain.cpp", "-o", "plain.o"], cwd=tmp_path, check=True)
    assert instance_symbol((tmp_path / "plain.o").read_bytes()) is None


@pytest.mark.parametrize("data", [b"", b"#!/bin/sh\n", b"\x7fELF\x01\x01" + bytes(64), Path(__file__).read_bytes()])
def test_what_is_no_64_bit_little_endian_elf_is_refused(data):
    with pytest.raises(ValueError, match="ELF"):
        Elf(data)
