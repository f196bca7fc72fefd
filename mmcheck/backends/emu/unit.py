"""A kernel file as the emulator compiles it: the compile unit's text, the constructs that cannot be
emulated, and what the compiler's complaints mean."""

from __future__ import annotations

import re

from ...compile import Build, unit_source
from ...errors import CompileError, MmcheckError, Unsupported
from ...spec import KernelSpec

__all__ = ["compile_unit", "check_supported", "compile_failure"]

# Comments and string/char literals, blanked out before any scan so that prose cannot trigger a match.
_NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
# (pattern whose group 1 names the construct, what it is)
_UNSUPPORTED = (
    (re.compile(r"\b(asm|__asm__|__asm)\b"), "inline assembly"),
    (re.compile(r"\b(tex1Dfetch|tex[123]D\w*|texCubemap\w*|surf[123]D\w*|cudaTextureObject_t|cudaSurfaceObject_t"
                r"|texture\s*<)"), "textures and surfaces"),
    (re.compile(r"\b(this_grid|grid_group|this_multi_grid|multi_grid_group)\b"),
     "cooperative-groups grid synchronization"),
    (re.compile(r"\b(clock64|clock|__globaltimer)\s*\("), "clock-based timing"),
    (re.compile(r"(<<<)"), "kernel launches from a kernel (dynamic parallelism)"),
)
_EXTERN_SHARED = re.compile(r"\b(?:extern\s+__shared__|__shared__\s+extern)\b[^;]*?\b([A-Za-z_]\w*)\s*\[\s*\]")
# The launcher takes the kernel's address: an overloaded name, or template arguments the kernel does not
# take, leave no function to convert.
_NO_MATCH = re.compile(r"no matches converting function '(\w+)'")
_CANDIDATE = re.compile(r"note:\s+(?:candidates? (?:are|is):\s+)?'([^']+)'")
_MISSING_HEADER = re.compile(r"fatal error: (\S+): No such file or directory")
_CUDA_HEADER = re.compile(r"(cuda|cub/|thrust/|cublas|curand|cufft|cusparse|cutlass/|cute/|mma\.h|sm_\d|device_"
                          r"|math_constants|cooperative_groups|crt/)")
_UNDECLARED = re.compile(r"'(__\w+)' (?:was not declared|does not name a type|has not been declared)"
                         r"|there are no arguments to '(__\w+)'")
# CUDA builtins that shim.h does not provide (an undeclared name outside these is the file's own error).
_CUDA_BUILTIN = re.compile(r"__(reduce_\w+_sync|match_\w+_sync|funnelshift_\w+|byte_perm|dp[24]a\w*|h[a-z]\w*"
                           r"|half\w*|float2half\w*|bfloat16\w*|nv_\w+|cvta_\w+|is(Global|Shared|Constant|Local)"
                           r"|pipeline_\w+|u?r?hadd|u?sad|fns|ldg_\w+)")


def _code(source: str) -> str:
    """``source`` with comments and literals blanked, newlines kept so that offsets still give lines."""
    return _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)


def check_supported(spec: KernelSpec) -> None:
    """Raise Unsupported, naming the construct and its line, if the file uses one the emulator cannot
    run faithfully."""
    code = _code(spec.source)
    for pattern, what in _UNSUPPORTED:
        match = pattern.search(code)
        if match:
            line = code.count("\n", 0, match.start()) + 1
            raise Unsupported(f"{spec.path}:{line}: the emulator cannot run {what} ({match.group(1).strip()})")


def compile_unit(build: Build) -> str:
    """The text g++ compiles: ``unit_source``'s unit (whose ``#line`` directives make diagnostics and
    ``__LINE__`` name the .cu file's own lines) and a trailer that exports the typed launcher and backs
    every ``extern __shared__`` array with the dynamic shared memory storage."""
    trailer = [f"MMEMU_EXPORT_KERNEL({build.instance})"]
    trailer += [f"MMEMU_DYNAMIC_SHARED({name})"
                for name in sorted(set(_EXTERN_SHARED.findall(_code(build.spec.source))))]
    return (f'{unit_source(build)}#line 1 "<emulator launcher for {build.spec.entry}>"\n'
            + "\n".join(trailer) + "\n")


def compile_failure(build: Build, diagnostics: str) -> MmcheckError:
    """The error for a failed compile: Unsupported where the file uses a CUDA header or builtin that the
    emulator does not provide, else CompileError with the compiler's own diagnostics."""
    spec = build.spec
    if _NO_MATCH.search(diagnostics):
        candidates = _CANDIDATE.findall(diagnostics)
        if len(candidates) > 1:
            return CompileError(f"{spec.path}: {spec.entry} is overloaded, so mmcheck cannot tell which kernel to "
                                f"check (candidates: {'; '.join(candidates)})")
        return CompileError(f"{spec.path}: the spec's template arguments do not fit the kernel: mmcheck "
                            f"instantiates {build.instance}, the kernel is {'; '.join(candidates) or spec.entry}")
    header = _MISSING_HEADER.search(diagnostics)
    if header and _CUDA_HEADER.match(header.group(1)):
        return Unsupported(f"{spec.path}: the emulator has no CUDA header <{header.group(1)}>")
    undeclared = _UNDECLARED.search(diagnostics)
    name = undeclared and (undeclared.group(1) or undeclared.group(2))
    if name and _CUDA_BUILTIN.fullmatch(name):
        return Unsupported(f"{spec.path}: the emulator does not provide {name}")
    return CompileError(f"{spec.path}: the emulator's compiler rejected {build}:\n{diagnostics}")
