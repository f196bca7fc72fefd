"""Random mutations of the kernel specs this repository carries: none may end a run with anything but a SpecError
(or another error of mmcheck's own), neither when parsed nor when its shapes are generated, and none may stall."""

import random
import re
import time
from pathlib import Path

import pytest

from mmcheck.errors import MmcheckError
from mmcheck.cases.shapes import launch_limits, shapes_for
from mmcheck.describe.spec import parse_kernels

ROOT = Path(__file__).parent.parent
MUTATIONS = 3000
SLOWEST = 5.0  # seconds one mutation may take, parsing and shapes together

_BLOCK = re.compile(r"/\*\s*mmcheck\b(.*?)\*/", re.S)
_ASSIGNMENT = re.compile(r"^(\s*[A-Za-z_][\w.\-]*\s*=\s*)(.*)$", re.M)
_STRING = re.compile(r'"([^"\n]*)"')


def kernel_tables() -> list[str]:
    """Each ``[[kernel]]`` table of the kernel files, on its own: a mutation then costs one kernel's shapes."""
    tables = []
    for path in sorted([*ROOT.glob("cuda_src/*.cu"), *ROOT.glob("tests/corpus/*.cu")]):
        match = _BLOCK.search(path.read_text(encoding="utf-8"))
        if match:
            tables += ["[[kernel]]" + t for t in match.group(1).split("[[kernel]]")[1:]]
    return tables


def expression(rng: random.Random) -> str:
    """An expression string that is legal, deep, long or huge."""
    n = rng.choice([2, 10, 63, 64, 65, 200, 1000, 5000])
    return rng.choice([
        "(" * n + "M" + ")" * n,
        " + ".join(["N"] * n),
        "-" * n + "K",
        "max(" * n + "M" + ", 1)" * n,
        "((10**64)**64)**64",
        f"2 ** {n} * 2 ** {n} * M",
        f"cdiv(M, {rng.choice([0, 1, -1, 7])})",
        f"{rng.choice(['M', 'N', 'K', 'batch'])} % {rng.choice([0, 16, 2**255])} == 0",
        f"{2**rng.randrange(300)} * sizeof(T) // (sizeof(TC) - 4)",
        f"M {rng.choice(['<', '>=', '=='])} {rng.randrange(-2**70, 2**70)}",
        "N if true else 1 // 0",
        "M and not N or K",
        rng.choice(["min(M)", "max()", "cdiv(M)", "cdiv(M, N, K)", "M(1)", "sizeof(T, TC)", "sizeof(2)"]),
    ])


def value(rng: random.Random) -> str:
    """A TOML value of any type, ordinary or extreme."""
    digits = rng.choice([1, 10, 30, 4000, 5000])
    return rng.choice([
        str(rng.randrange(-3, 70000)),
        "9" * digits,
        "-" + "9" * digits,
        rng.choice(["nan", "inf", "-inf", "+nan", "1e400", "-0.0", "0.5", "3.4e38", "70000.0"]),
        rng.choice(["true", "false"]),
        '"' + expression(rng) + '"',
        "[" + ", ".join(rng.choice(['"' + expression(rng) + '"', "1", "nan", "1.5", "[]", "{}"])
                        for _ in range(rng.randrange(0, 70))) + "]",
        "[" * digits + "]" * digits,
        "{" + ", ".join(f"X{i} = " + rng.choice(["1", '"M"', "nan", "[1]"]) for i in range(rng.randrange(3))) + "}",
        '"' + "".join(rng.choice("AB CMNK:_x*/\\\"'") for _ in range(rng.randrange(12))) + '"',
        "1979-05-27T07:32:00Z",
    ])


def mutate(table: str, rng: random.Random) -> str:
    """One to three random edits of a table's text: a string's text replaced by an expression, a value replaced,
    a line deleted or doubled, characters inserted, the text truncated."""
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        lines = table.splitlines()
        assignments = list(_ASSIGNMENT.finditer(table))
        strings = list(_STRING.finditer(table))
        edit = rng.randrange(9)
        if edit <= 2 and strings:  # the likeliest edit, which keeps the TOML valid and its types right
            m = rng.choice(strings)
            table = table[:m.start(1)] + expression(rng) + table[m.end(1):]
        elif edit <= 4 and assignments:
            m = rng.choice(assignments)
            table = table[:m.start(2)] + value(rng) + table[m.end(2):]
        elif edit == 5 and len(lines) > 1:
            del lines[rng.randrange(1, len(lines))]
            table = "\n".join(lines)
        elif edit == 6:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            table = "\n".join(lines)
        elif edit == 7:
            at = rng.randrange(len(table) + 1)
            table = table[:at] + "".join(chr(rng.randrange(1, 0x250)) for _ in range(rng.randrange(1, 4))) + table[at:]
        else:
            table = table[:rng.randrange(len(table) + 1)]
    return table


@pytest.mark.slow(6)
def test_no_mutation_of_a_spec_escapes_as_anything_but_an_mmcheck_error_or_stalls():
    rng = random.Random(20261125)
    tables = kernel_tables()
    assert len(tables) > 50
    parsed = failed = 0
    for i in range(MUTATIONS):
        block = mutate(rng.choice(tables), rng)
        text = f"/* mmcheck\n{block}\n*/\n__global__ void k() {{}}\n"
        start = time.perf_counter()
        try:
            specs, errors = parse_kernels(text, "fuzz.cu")
            for spec in specs:
                for dtype in spec.dtypes:
                    shapes_for(spec, dtype)
                    launch_limits(spec, dtype)
            parsed += len(specs)
            failed += len(errors)
        except MmcheckError:
            failed += 1
        except Exception as e:
            raise AssertionError(f"mutation {i} raised {type(e).__name__}: {e}\n{block}") from e
        took = time.perf_counter() - start
        assert took < SLOWEST, f"mutation {i} took {took:.1f} s\n{block}"
    # Both outcomes are common, or the mutations would test only one side of the checks.
    assert parsed > MUTATIONS // 20 and failed > MUTATIONS // 2
