"""Progress of a long command: a live bar on a terminal (tqdm), a plain line per item anywhere else (a log
file, CI), so that a run is never silent until its table.  Labels and lines have their control characters
written out (errors.visible): they name a user's files, a student's submission among them."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

from ..errors import visible

__all__ = ["Progress"]


class Progress:
    """``start(label)`` says what runs now; ``done(line)`` ends it.  On a terminal the bar shows the count and
    the label, and a done line is printed above the bar only when ``notable`` (a failure, a skip); elsewhere
    every done line is printed, as ``[i/n] line``."""

    def __init__(self, total: int, unit: str, stream: TextIO | None = None) -> None:
        self.total, self.count = total, 0
        self.stream = stream or sys.stderr
        self.bar = None
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=f" {unit}", file=self.stream, leave=False, dynamic_ncols=True)

    def start(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(visible(label), refresh=True)

    def done(self, line: str, notable: bool = False) -> None:
        self.count += 1
        line = visible(line)
        if self.bar is None:
            print(f"[{self.count}/{self.total}] {line}", file=self.stream, flush=True)
            return
        if notable:
            self.bar.write(line, file=self.stream)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
