"""What every parse of the C++ front end reads besides the kernel file (Setup): made by client.py in mmcheck's
process, sent to the child as JSON.  A module of its own, so that the child imports nothing of the parent's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Setup"]


@dataclass(frozen=True)
class Setup:
    """The prelude (backends/emu/parse.h) and, once precompiled, its PCH and which of its files includes which (a
    parse that reads the PCH does not list those); the stub headers' folder; the host compiler's header folders,
    in its order (libstdc++'s, which the libclang wheel lacks)."""

    prelude: str
    stubs: str
    system: tuple[str, ...]
    pch: str | None = None
    inclusions: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Setup:
        return cls(data["prelude"], data["stubs"], tuple(data["system"]), data["pch"],
                   tuple((a, b) for a, b in data["inclusions"]))
