"""``mmcheck list`` and ``mmcheck check``: the same validation as the tests, without pytest.

Exit status of ``check``: 0 if every kernel's outcome matches its ``expect``, 1 if any does not, 2 for a
usage or spec error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import BackendUnavailable, SpecError
from .options import OPTIONS, Settings
from .spec import Catalog, collect

__all__ = ["main"]

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mmcheck", description="Validate CUDA matrix-multiplication kernels.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the kernels found and their specs")
    check = commands.add_parser("check", help="run the kernels on generated shapes and compare with references")
    for sub in (listing, check):
        sub.add_argument("targets", nargs="*", metavar="NAME-GLOB|PATH.cu|DIR",
                         help="kernels by name glob, or files/directories to read (default: ./cuda_src)")
        sub.add_argument("--src", action="append", help="directory or .cu file with kernels (repeatable)")
    for o in OPTIONS:
        if o.name == "src":
            continue
        if o.flag:
            check.add_argument(f"--{o.name}", action="store_true", help=o.help)
        else:
            check.add_argument(f"--{o.name}", action="append" if o.multiple else "store", type=o.type,
                               default=o.default, choices=o.choices, help=o.help)
    check.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    check.add_argument("--fail-on-skip", action="store_true",
                       help="exit 1 if any kernel was skipped (a construct the backend cannot run)")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="print the full report of every failure, expected ones (known-bad kernels) too")
    return parser


def _catalog(args: argparse.Namespace) -> tuple[Catalog, tuple[str, ...]]:
    """Files named as targets (or --src, or ./cuda_src) and the name globs among the targets.  A target
    that looks like a path (a folder separator, or .cu) is one, and must exist."""
    paths = [t for t in args.targets if Path(t).exists() or "/" in t or t.endswith(".cu")]
    globs = tuple(t for t in args.targets if t not in paths)
    sources = paths + (args.src or [])
    if not sources and not Path("cuda_src").is_dir():
        raise SpecError("cuda_src", "no such folder here: name .cu files or folders to check (or use --src)")
    return collect(sources or ["cuda_src"]), globs


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        catalog, globs = _catalog(args)
    except SpecError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        from .report import kernel_list

        print(kernel_list(list(dict.fromkeys(s for s, _ in catalog.select(globs))), catalog.errors))
        return EXIT_USAGE if catalog.errors else EXIT_OK
    return _check(args, catalog, globs)


def _check(args: argparse.Namespace, catalog: Catalog, globs: tuple[str, ...]) -> int:
    from .artifacts import save_failure
    from .backends import get_backend
    from .report import json_document, reproduce, summary, table, write_json
    from .runner import Result
    from .shapes import satisfies, shapes_for

    settings = Settings.read(lambda name: getattr(args, name.replace("-", "_"), None))
    pairs = catalog.select(globs, settings.dtype)
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    if not pairs and not catalog.errors:
        print(f"mmcheck: no kernel matches {' '.join(args.targets) or 'the default folder'}", file=sys.stderr)
        return EXIT_USAGE
    try:
        backend = get_backend(settings.backend, settings.backend_options())
    except BackendUnavailable as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    runner = settings.runner(backend)
    results = []
    for spec, dtype in pairs:
        if reason := settings.unreachable(spec):
            results.append(Result(runner.case(spec, dtype, None), "skip", reason, shapes_tried=0))
            continue
        # --shape replaces the generated shapes: the replay of one reported case.
        if settings.shape:
            shapes = [s for s in settings.shape if satisfies(spec, s, dtype)]
            if not shapes:
                results.append(Result(runner.case(spec, dtype, settings.shape[0]), "skip",
                                      f"{spec.name}: --shape does not satisfy its requires"))
                continue
        else:
            shapes = shapes_for(spec, dtype, settings.seed, settings.budget)
        results.append(runner.sweep(spec, dtype, shapes))
    print(f"backend: {backend.name}")
    print(table(results))
    print(summary(results))
    for r in results:
        if r.message and r.outcome in ("fail", "error") and (args.verbose or not r.as_expected):
            command = reproduce(r.case, backend.name)
            saved = save_failure(Path(settings.results), r.record, command) if r.record else []
            print(f"\n{r.message}" + (f"\n  reproduce: {command}" if r.outcome == "fail" else "")
                  + "".join(f"\n  saved: {p}" for p in saved))
    document = json_document(results, catalog.errors, backend.name)
    if args.json:
        write_json(args.json, document)
    if catalog.errors:
        return EXIT_USAGE
    if args.fail_on_skip and any(r.outcome == "skip" for r in results):
        return EXIT_MISMATCH
    return EXIT_OK if document["ok"] else EXIT_MISMATCH


if __name__ == "__main__":
    sys.exit(main())
