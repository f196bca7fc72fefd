"""The ``mmcheck`` command (and ``python -m mmcheck``): cli.py's, loaded with Ctrl-C held until it can handle one, so
that one pressed while its modules load or its arguments are read (a second or more on a busy machine) is told as
any early Ctrl-C is, in a line and with the JSON of no results, not with a traceback."""

from __future__ import annotations

import signal
import sys


def main() -> int:
    pressed: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    # Started with Ctrl-C ignored (a shell's background job), the command leaves it ignored.
    held = None if previous is signal.SIG_IGN else pressed
    if held is not None:
        signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        from .toolchain.children import end_on_sigterm
        from .toolchain.devices import quiet_blas

        end_on_sigterm()  # SIGTERM (a `timeout`, a CI runner) ends the run as Ctrl-C does, compilers and all
        quiet_blas()  # before numpy loads
        from .front.cli import main as command

        return command(sys.argv[1:], held=held)  # which handles Ctrl-C from where it can
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
