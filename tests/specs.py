"""The spec blocks tests write: by default the textbook kernel's (C = A @ B in float32, one thread per element of
C in 16 x 16 blocks, rows along gridDim.y), any key changed or added by the caller."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mmcheck.describe.spec import KernelSpec, parse_specs

MM_PARAMS = ("A", "B", "C", "M", "N", "K")
TILES = (16, 16)
GRID = ("cdiv(N, 16)", "cdiv(M, 16)")


def table(name: str, entry: str, *, dtypes: Sequence[str] = ("float32",), params: Sequence[str] = MM_PARAMS,
          block: Sequence[int | str] = TILES, grid: Sequence[int | str] = GRID, template: str | None = None,
          op: str = "mm", extra: str = "") -> str:
    """One ``[[kernel]]`` table; ``extra``: further keys, as TOML lines."""
    keys = [f'name = "{name}"', f'entry = "{entry}"', *([f'template = "{template}"'] if template else []),
            f'op = "{op}"', *(f"{key} = {json.dumps(list(value))}" for key, value in
                              (("dtypes", dtypes), ("params", params), ("block", block), ("grid", grid)))]
    return "[[kernel]]\n" + "\n".join(keys) + "\n" + (extra.rstrip("\n") + "\n" if extra else "")


def spec_block(*tables: str) -> str:
    """A kernel file's spec block of these tables."""
    return "/* mmcheck\n" + "".join(tables) + "*/\n"


def text(name: str, entry: str, **keys) -> str:
    """The spec block of one kernel (``table``'s keys)."""
    return spec_block(table(name, entry, **keys))


def spec(name: str, entry: str, path: Path | str = "k.cu", body: str = "", **keys) -> KernelSpec:
    """One kernel's spec, parsed as if read from ``path`` holding it and ``body``."""
    (parsed,) = parse_specs(text(name, entry, **keys) + body, path)
    return parsed
