"""A kernel file as the emulator compiles it: the compile unit's text (of the file's device code, where
device_code.py finds it, else of the whole file), the constructs that cannot be emulated, and what the
compiler's complaints mean.

Inline assembly is PTX, which the host compiler cannot take; each ``asm(...)`` statement of the file becomes
a call of ``mmemu::inline_asm`` (shim.h) with the statement's line, template, constraints and operands, which
the runtime runs (ptx.cpp): only a launch that reaches an instruction it lacks stops, as unsupported, and the
rest of the file runs."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ...describe import reading
from ...toolchain import sandbox
from ...toolchain.compile import Build, c_string, find_header, includes, unit_source, verbatim_failure
from ...errors import CompileError, MmcheckError, Unsupported
from ...describe.spec import KernelSpec
from ..device_code import device_code, host_library, needed_header, sources, undeclared

__all__ = ["compile_sources", "compile_unit", "check_supported", "compile_failure", "cluster_dims"]

# Comments and string/char literals (raw ones too, as multi-line PTX often is), blanked out before any scan
# so that prose cannot trigger a match.
_NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/|(?<!\w)(?:u8|[uUL])?R\"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)\""
                       r"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
# Where one may begin: a match of _NOT_CODE starts at one of these, or at a raw string's prefix just before
# its quote.  A class alone: re skips to it fast, through a large file's blanked comments too.
_NOT_CODE_START = re.compile(r"[/\"']")
# (pattern whose group 1 names the construct, what it is, the words one of which its every match holds)
_UNSUPPORTED = (
    (re.compile(r"\b(tex1Dfetch|tex[123]D\w*|texCubemap\w*|surf[123]D\w*|cudaTextureObject_t|cudaSurfaceObject_t"
                r"|texture\s*<)"), "textures and surfaces", ("tex", "surf", "Object_t")),
    (re.compile(r"\b(this_grid|grid_group|this_multi_grid|multi_grid_group)\b"),
     "cooperative-groups grid synchronization", ("grid",)),
    (re.compile(r"\b(clock64|clock|__globaltimer)\s*\("), "clock-based timing", ("clock", "__globaltimer")),
)
# Kernel launches, and what tells host code from device code around them (see _host_bodies).
_LAUNCH = re.compile(r"<<<.*?>>>", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_DEVICE_CODE = re.compile(r"\b(?:__global__|__device__)\b")
# A macro's definition: its name, and the parenthesis that makes it function-like.
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+(\w+)(\()?")
_CONTAINER = re.compile(r"^\s*(?:template\s*<[^{]*>\s*)?(?:namespace|struct|class|union|enum)\b")
# The pragma that makes a header come once.
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b[^\n]*", re.M)
_EXTERN_SHARED = re.compile(r"\b(?:extern\s+__shared__|__shared__\s+extern)\b[^;]*?\b([A-Za-z_]\w*)\s*\[\s*\]")
_NAMESPACE = re.compile(r"\bnamespace(?:\s+(\w+(?:\s*::\s*\w+)*))?\s*\{")
# The launcher takes the kernel's address: an overloaded name, or template arguments the kernel does not
# take, leave no function to convert.
_NO_MATCH = re.compile(r"no matches converting function '(\w+)'")
_CANDIDATE = re.compile(r"note:\s+(?:candidates? (?:are|is):\s+)?'([^']+)'")
_MISSING_HEADER = re.compile(r"^(?P<where>[^\n]+?:\d+):\d+: fatal error: (?P<header>\S+): No such file or directory",
                             re.M)
_CUDA_HEADER = re.compile(r"(cuda|cub/|thrust/|cublas|curand|cufft|cusparse|cutlass/|cute/|sm_\d|device_"
                          r"|math_constants|cooperative_groups|crt/)")
# The CUDA headers of the emulator's by the names they declare that device code uses: a file that uses one
# without including its header gets it, under nvcc, only through another header (PyTorch's bring cuda_fp16.h
# and cuda_bf16.h).
_CUDA_DECLARES = ((re.compile(r"__\w*bfloat16\w*|nv_bfloat162?"), "cuda_bf16.h"),
                  (re.compile(r"__half\w*|half2?|__\w+2half2?\w*|__h[a-z]+2?"), "cuda_fp16.h"),
                  (re.compile(r"nvcuda|wmma"), "mma.h"),
                  (re.compile(r"cooperative_groups"), "cooperative_groups.h"))
# What the emulator's headers lack, in g++'s words and in clang's (the device code's parse error, "k.cu:9: ...",
# DeviceCode.error).  Of cuda_fp8.h's types, the e8m0 ones (MX scale factors) are declarations only
# (include/cuda_fp8.h).
_FP8 = re.compile(r"(?:error|:\d+): [^\n]*?\b(__nv_fp8\w*)[^\n]*incomplete type"
                  r"|(?:error|:\d+): [^\n]*incomplete type[^\n]*?\b(__nv_fp8\w*)")
_UNDECLARED = re.compile(r"'(__\w+)' (?:was not declared|does not name a type|has not been declared)"
                         r"|there are no arguments to '(__\w+)'|(?:use of undeclared identifier|unknown type name) "
                         r"'(__\w+)'")
# CUDA builtins that neither shim.h nor the headers in include/ provide (an undeclared name outside these is
# the file's own error, such as a missing #include <cuda_fp16.h>): among the 16-bit float functions, the
# conversions that round other than to nearest, and the fused complex and ReLU forms.
_CUDA_BUILTIN = re.compile(r"__(reduce_\w+_sync|match_\w+_sync|funnelshift_\w+|byte_perm|cvta_\w+|nv_cvt_\w+"
                           r"|is(Global|Shared|Constant|Local)|pipeline_\w+|u?sad|fns|ldg_\w+"
                           r"|\w+2(half|bfloat16)2?_r[dzu]|(half|bfloat16)2\w+_r[ndu]|hcmadd|h\w*_relu)")
# A static_assert of the headers in include/ that marks what the emulator lacks, e.g. a WMMA shape; the
# template instantiated where it failed names the construct.
_EMULATOR_LIMIT = re.compile(r"static assertion failed[^\n]*?: mmemu: ([^\n]+)")
_INSTANTIATION = re.compile(r"[Ii]n instantiation of (?:'(?:class|struct) |template class ')([^']+)'")
# A name that CUDA's namespaces have and the emulator's headers do not (cg::coalesced_threads).
_NOT_A_MEMBER = re.compile(r":(\d+):(?:\d+: error: '(\w+)' is not a member of| no member named '(\w+)' in namespace) "
                           r"'([\w:]+)'")
_CUDA_NAMESPACES = ("cooperative_groups", "nvcuda", "nvcuda::wmma", "cuda")
# <cstdint>'s names, which nvcc declares only in a file that includes <cstdint> or <stdint.h> (or a CUDA header
# that does), and the emulator likewise (mmemu.h).
_FIXED_WIDTH = re.compile(r"^(?P<where>[^\n]+?:\d+):\d+: error: "
                          r"'(?P<name>u?int(?:_least|_fast)?(?:8|16|32|64|ptr|max)_t)' "
                          r"(?:was not declared|does not name a type|has not been declared)", re.M)
# ``__shared__ alignas(16) T x[...]``, which nvcc takes (its __shared__ is an attribute) and g++ refuses once
# the emulator's __shared__ is the keyword thread_local: the alignas goes first, the text keeping its length.
_ALIGNED_SHARED = re.compile(r"(?P<extern>\bextern\s+)?\b__shared__(?P<space>\s+)"
                             r"(?P<align>alignas\s*\((?:[^()]|\([^()]*\))*\))")
# nvcc's __noinline__, a keyword of its front end, where the file qualifies a function with it; not where it names
# GNU's attribute (__attribute__((__noinline__)), [[gnu::__noinline__]], as libstdc++'s <memory> spells it) or a macro.
_NOINLINE = re.compile(r"(?P<named>(?:[(,\[]|::|#\s*(?:define|undef|ifn?def)\b|\bdefined\b)\s*)?\b__noinline__\b")
_NAMESPACE_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::)?\s*([\w:]+)\s*;")
# An inline-assembly statement up to its opening parenthesis: the keyword and its qualifiers, which may be
# apart by escaped line ends in a macro.
_GAP = r"(?:\s|\\)*"  # outside literals, a backslash is a line continuation
_ASM = re.compile(rf"\b(?:asm|__asm__|__asm)\b(?:{_GAP}\b(?:volatile|__volatile__|__volatile|inline|__inline__"
                  rf"|goto)\b)*{_GAP}\(")
_ESCAPED_LINE_END = re.compile(r"\\[ \t\r]*\n")
_BLANK = " \t\r\n\\"  # what may surround a piece of a statement: blanks and line continuations
# What may come right before a statement besides ; { } or a label's colon: a control clause's keyword (before
# its parenthesis), else or do, or a macro definition's head.
_CONTROL = ("if", "while", "for", "switch", "constexpr")
_MACRO_HEAD = re.compile(r"#[ \t]*define[ \t]+\w+(?:\([^()]*\))?\Z")
_OPERAND_NAME = re.compile(r"\A\[\s*\w+\s*\]")  # [name] "=r"(x): names mean nothing to a call
# A kernel's compile-time cluster dims, and the function they are written on: the next name before a parenthesis,
# past the other attribute macros (__launch_bounds__(...)).
_CLUSTER_DIMS = re.compile(r"\b__cluster_dims__\s*\(([^()]*)\)")
_DECLARED = re.compile(r"\b(?!__\w+__\b)([A-Za-z_]\w*)\s*\(")


def _mentions(code: str, *words: str) -> bool:
    """Whether ``code`` holds one of ``words``, which every match of a pattern about to scan it holds: str's search
    is fast, where a pattern that opens with ``\\b`` steps through a large file's blanked comments a character at a
    time."""
    return any(word in code for word in words)


@functools.lru_cache(maxsize=8)
def _code(source: str, literals: bool = False) -> str:
    """``source`` with comments and literals blanked (``literals``: comments only), newlines kept so that
    offsets still give lines.  Kept for the texts last asked for: every dtype of a file scans the same text,
    and a large file's scan is costly."""
    out: list[str] = []
    done = at = 0
    while found := _NOT_CODE_START.search(source, at):
        span = _not_code(source, found.start(), at)
        if span is None:  # unterminated: code, as for the compiler
            at = found.start() + 1
            continue
        start, at = span
        if not literals or source.startswith("/", start):
            out += [source[done:start], _blank(source[start:at])]
            done = at
    return "".join(out) + source[done:]


def _not_code(source: str, at: int, since: int) -> tuple[int, int] | None:
    """The span of the comment or literal (_NOT_CODE's match) that starts at ``at``, or of a raw string whose
    prefix starts just before it, not before ``since``; None if there is none.  A comment's end is found by
    ``str.find``: in a large file mostly comments, a regex stepping through every character took seconds."""
    if source[at] == '"':
        for start in range(max(since, at - 3), at):  # R", u8R", LR"...: nothing else can match there
            if raw := _NOT_CODE.match(source, start):
                return start, raw.end()
    if source.startswith("/*", at):
        end = source.find("*/", at + 2)
        return None if end < 0 else (at, end + 2)
    if source.startswith("//", at):
        end = source.find("\n", at)
        return at, len(source) if end < 0 else end
    match = _NOT_CODE.match(source, at)
    return (at, match.end()) if match else None


def _blank(text: str) -> str:
    """``text`` as spaces, its newlines kept."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _host_bodies(code: str) -> list[tuple[int, int]]:
    """The spans of the bodies of host functions in ``code`` (comments and literals blanked): a ``{`` whose
    declaration (the text since the previous ``;``, ``{`` or ``}``) has a parameter list, is no namespace
    or class, and says neither ``__global__`` nor ``__device__``.  Device function bodies are skipped whole."""
    code = _DIRECTIVE.sub(lambda m: " " * len(m.group()), code)  # a macro's braces are not the file's
    spans: list[tuple[int, int]] = []
    declaration, depth, body, host = 0, 0, 0, False
    for match in re.finditer(r"[{};]", code):
        char, at = match.group(), match.start()
        if depth:  # inside a function body
            depth += {"{": 1, "}": -1, ";": 0}[char]
            if not depth:
                if host:
                    spans.append((body, at))
                declaration = at + 1
            continue
        text = code[declaration:at].strip()  # in a large file mostly comments, mostly blanks
        if char == "{" and ")" in text and not _CONTAINER.match(text):
            depth, body, host = 1, at, not _DEVICE_CODE.search(text)
        else:
            declaration = at + 1
    return spans


def _launches(code: str) -> list[tuple[re.Match[str], list[tuple[int, str]]]]:
    """Every ``<<<...>>>`` launch configuration in ``code``, with the places where device code makes it, as
    (offset, construct): none for a launch in host code.  A launch written in a macro is made where the macro
    is expanded, and so on through the macros that expand that one: none where every expansion is in host code
    (or there is none), and each expansion in device code, naming the macro, otherwise."""
    if not _mentions(code, "<<<"):
        return []
    hosts = _host_bodies(code)
    directives = [(m.start(), m.end(), _DEFINE.match(m.group())) for m in _DIRECTIVE.finditer(code)]

    def made_in_device(at: int, macros: tuple[str, ...]) -> list[tuple[int, str]]:
        """Where device code makes what is written at ``at``, inside the expansions of ``macros``."""
        directive = next((d for d in directives if d[0] <= at < d[1]), None)
        if directive is None:
            in_host = any(lo < at < hi for lo, hi in hosts)
            return [] if in_host else [(at, f"<<< in {macros[0]}" if macros else "<<<")]
        lo, hi, define = directive
        if define is None or define.group(1) in macros:  # an #if or #undef expands nothing, nor a macro itself
            return []
        name = define.group(1)
        use = re.compile(rf"\b{name}\b" + (r"\s*\(" if define.group(2) else ""))
        return [place for m in use.finditer(code) if not lo <= m.start() < hi
                for place in made_in_device(m.start(), (*macros, name))]

    return [(m, made_in_device(m.start(), ())) for m in _LAUNCH.finditer(code)]


_NESTING = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _closing(code: str, opening: int) -> int | None:
    """The offset of the bracket that closes the one at ``opening`` in ``code`` (literals blanked)."""
    depth = 0
    for i in range(opening, len(code)):
        depth += _NESTING.get(code[i], 0)
        if not depth:
            return i
    return None


def _opening(code: str, closing: int) -> int:
    """The offset of the parenthesis that opens the one closing at ``closing`` (-1 if none does)."""
    depth = 0
    for i in range(closing, -1, -1):
        depth += {")": 1, "(": -1}.get(code[i], 0)
        if not depth:
            return i
    return -1


def _split(code: str, lo: int, hi: int, separator: str) -> list[tuple[int, int]]:
    """The spans of ``code[lo:hi]`` between the ``separator`` characters outside any brackets."""
    spans, depth, start = [], 0, lo
    for i in range(lo, hi):
        depth += _NESTING.get(code[i], 0)
        if code[i] == separator and not depth:
            spans.append((start, i))
            start = i + 1
    return spans + [(start, hi)]


def _is_statement(code: str, at: int) -> bool:
    """Whether the ``asm`` at ``at`` starts a statement, rather than being the asm label of a declaration
    (``register int r asm("r1")``, ``void f() asm("g")``), which g++ takes as it is."""
    end = len(code[:at].rstrip(_BLANK))
    hash_sign = code.rfind("#", 0, end)
    if not end or code[end - 1] in ";{}:" or (hash_sign >= 0 and _MACRO_HEAD.match(code, hash_sign, end)):
        return True
    if code[end - 1] == ")":
        opening = _opening(code, end - 1)
        word = re.search(r"(\w+)\s*\Z", code[max(0, opening - 40):max(0, opening)])
        return word is not None and word.group(1) in _CONTROL
    word = re.search(r"\w+\Z", code[max(0, end - 10):end])
    return word is not None and word.group() in ("else", "do")


def _inline_asm_calls(source: str) -> str:
    """``source`` with every inline-assembly statement made a call
    ``mmemu::inline_asm(line, template, constraints, &output..., input...)``: the constraints are one
    string, outputs' first, comma separated; outputs are passed by address, inputs by value; clobbers are
    dropped.  The text keeps its line count (in a macro, its escaped line ends), so that later lines keep
    their numbers."""
    if not _mentions(source, "asm"):
        return source
    code, text = _code(source), _code(source, literals=True)
    out, done = [], 0
    for match in _ASM.finditer(code):
        opening = match.end() - 1
        closing = _closing(code, opening)
        if closing is None or not _is_statement(code, match.start()):
            continue  # unbalanced (the compiler will say so), or an asm label
        sections = _split(code, opening + 1, closing, ":")
        constraints, operands = [], []
        for output, section in zip((True, False), sections[1:3]):
            for lo, hi in _split(code, *section, ","):
                paren = code.find("(", lo, hi)
                if paren < 0:
                    continue  # an empty operand list
                constraints.append(_OPERAND_NAME.sub("", text[lo:paren].strip(_BLANK)).strip(_BLANK))
                expression = text[paren + 1:_closing(code, paren)]
                operands.append(f"&({expression})" if output else f"({expression})")
        listed = ' "," '.join(constraints) or '""'
        line = code.count("\n", 0, match.start()) + 1
        call = f"mmemu::inline_asm({line}, {text[opening + 1:sections[0][1]].strip(_BLANK)}, {listed}"
        call += "".join(f", {operand}" for operand in operands) + ")"
        statement = source[match.start():closing + 1]
        line_end = " \\\n" if _ESCAPED_LINE_END.search(statement) else "\n"
        out += [source[done:match.start()], call, line_end * (statement.count("\n") - call.count("\n"))]
        done = closing + 1
    return "".join(out) + source[done:]


def compile_sources(build: Build) -> list[str]:
    """The texts of ``build``'s file for g++ to try, in order (device_code.sources): its device code where
    the front end found it, then the file as it is.  Unsupported, naming the header and how to provide it,
    where the device code needs a header that is not found."""
    code = device_code(build)
    if code and code.missing and code.error and (lack := _lacking(build.spec, code.error)):
        raise lack  # the emulator lacks what the kept code uses, whatever a header that is not found declares
    missing = needed_header(code) if code else None
    if missing:
        line, header, error = missing
        raise Unsupported(f"{build.spec.path}:{line}: {_not_found(header)}, which the kernel's device code needs "
                          f"({error})")
    if code and (name := undeclared(code)):
        raise Unsupported(_undeclared(build.spec, name, code.missing, code.error or ""))
    if code and code.rejected:  # g++ would take it, as host code: the emulator rejects it as nvcc does
        raise CompileError(f"{build.spec.path}: the kernel's device code has what nvcc rejects, so the emulator "
                           "rejects it too:\n" + "\n".join(code.rejected))
    return list(sources(build))


def _not_found(header: str) -> str:
    """A header that is not found, in words, with how to provide it."""
    if _CUDA_HEADER.match(header):
        return f"the emulator has no CUDA header <{header}>"
    if library := host_library(header):
        return f"<{header}> ({library.name}'s: the emulator does not compile its headers)"
    return (f"<{header}> is not found (install it, put its folder on CPLUS_INCLUDE_PATH, or name its folder in the "
            "spec's include)")


def _undeclared(spec: KernelSpec, name: str, missing: tuple[tuple[int, str], ...], error: str) -> str:
    """Why the kernel's device code cannot be compiled where it uses ``name``, which none of the headers that were
    not found (``missing``) is known to declare: a CUDA name whose header the file does not include (it gets it
    through a host library's, under nvcc), else a name that nothing found declares."""
    listed = " or ".join(f"<{header}> (line {line})" for line, header in missing)
    unread = ("which the emulator does not compile" if all(host_library(h) for _, h in missing) else
              "which is not found here")
    cuda = next((header for pattern, header in _CUDA_DECLARES if pattern.fullmatch(name)), None)
    if cuda:
        return (f"{spec.path}: the kernel's device code uses {name}, which <{cuda}> declares, and the file does not "
                f"include it: it can come only through {listed}, {unread}; include <{cuda}> ({error})")
    return (f"{spec.path}: the kernel's device code uses {name}, which no header here declares ({error}): a name "
            f"misspelt, or one declared by {listed}, {unread}")


def check_supported(spec: KernelSpec, source: str) -> None:
    """Raise Unsupported, naming the construct and its line, if ``source`` (the file's text that is compiled)
    uses one the emulator cannot run faithfully.  A kernel launch in host code (a launcher left in the file)
    is harmless, since host code never runs; one anywhere else is dynamic parallelism.  Inline assembly is
    judged where a launch reaches it (see _inline_asm_calls)."""
    if found := _unsupported(source):
        line, construct, what = found
        raise Unsupported(f"{spec.path}:{line}: the emulator cannot run {what} ({construct})")


@functools.lru_cache(maxsize=4)
def _unsupported(source: str) -> tuple[int, str, str] | None:
    """The first construct of ``source`` the emulator cannot run: its line, the construct and what it is.  The
    same for every dtype of a file, so found once."""
    code = _code(source)
    found = [(m, m.group(1).strip(), what) for pattern, what, words in _UNSUPPORTED
             if _mentions(code, *words) and (m := pattern.search(code))]
    found = [(m.start(), construct, what) for m, construct, what in found]
    found += [(at, construct, "kernel launches from a kernel (dynamic parallelism)")
              for _, places in _launches(code) for at, construct in places]
    if not found:
        return None
    at, construct, what = found[0]
    return code.count("\n", 0, at) + 1, construct, what


def cluster_dims(build: Build) -> tuple[int, int, int] | None:
    """The cluster dims that ``__cluster_dims__`` gives the entry kernel, where the file writes them as integers;
    None where it gives none, or gives them by names, which only the compiler knows."""
    code = _code(build.spec.source)
    if not _mentions(code, "__cluster_dims__"):
        return None
    entry = build.spec.entry.split("::")[-1]
    for match in _CLUSTER_DIMS.finditer(code):
        name = _DECLARED.search(code, match.end())
        dims = [arg.strip().rstrip("uU") for arg in match.group(1).split(",")]
        if name and name.group(1) == entry and len(dims) <= 3 and all(d.isdigit() for d in dims):
            return (*(int(d) for d in dims), *(1,) * (3 - len(dims)))  # type: ignore[return-value]
    return None


def compile_unit(build: Build, source: str) -> str:
    """The text g++ compiles for ``source``, one of ``compile_sources``: ``unit_source``'s unit (whose
    ``#line`` directives make diagnostics and ``__LINE__`` name the .cu file's own lines) and a trailer that
    exports the typed launcher and backs every ``extern __shared__`` array with the dynamic shared memory
    storage.  Launches in host code lose their ``<<<...>>>``: a plain call of the kernel, which g++ can
    compile and nothing runs.  Inline assembly becomes calls of the emulator (_inline_asm_calls)."""
    source, shared = _emulated(_with_local_headers(source, build.spec.path, build.spec))
    text = unit_source(build, source=source)
    trailer = [f"MMEMU_EXPORT_KERNEL({build.instance})"]
    trailer += [f"MMEMU_DYNAMIC_SHARED({symbol})" for symbol in shared]
    return f'{text}#line 1 "<emulator launcher for {build.spec.entry}>"\n' + "\n".join(trailer) + "\n"


@functools.lru_cache(maxsize=4)
def _emulated(source: str) -> tuple[str, tuple[str, ...]]:
    """``source`` as compile_unit gives it to unit_source (host launches blanked, inline assembly made calls),
    and its ``extern __shared__`` arrays' symbols (_extern_shared): the same for every dtype of a file, so made
    once."""
    for match, places in _launches(_code(source)):
        if not places:  # the line continuations of a macro's launch stay: its definition goes on
            source = source[:match.start()] + re.sub(r"[^\n\\]", " ", match.group()) + source[match.end():]
    source = _inline_asm_calls(source)
    if _mentions(source, "alignas"):
        source = _ALIGNED_SHARED.sub(lambda m: f"{m['align']}{m['space']}{m['extern'] or ''}__shared__", source)
    return _noinline_attributes(source), _extern_shared(_code(source))


def _noinline_attributes(source: str) -> str:
    """``source`` with each ``__noinline__`` that qualifies a function (_NOINLINE) written as the attribute it is
    to nvcc, ``__attribute__((noinline))``: shim.h cannot make it a macro, which the system headers that spell
    GNU's attribute ``__noinline__`` would meet too."""
    if "__noinline__" not in source:
        return source
    out, done = [], 0
    for match in _NOINLINE.finditer(_code(source)):
        if match["named"] is None:
            out += [source[done:match.start()], "__attribute__((noinline))"]
            done = match.end()
    return "".join(out) + source[done:]


def _extern_shared(code: str) -> tuple[str, ...]:
    """The symbols of the ``extern __shared__`` arrays of ``code`` (literals blanked): an array's name at global
    scope; inside namespaces, where a kernel's block-scope declaration puts it too, Itanium's nested name
    (``_ZN9deep_gemm11smem_bufferE`` for ``deep_gemm::smem_buffer``; an unnamed namespace is ``_GLOBAL__N_1``)."""
    if not _mentions(code, "__shared__"):
        return ()
    namespaces = [(re.split(r"\s*::\s*", m.group(1) or "_GLOBAL__N_1"), m.end() - 1,
                   _closing(code, m.end() - 1) or len(code)) for m in _NAMESPACE.finditer(code)]
    found = set()
    for match in _EXTERN_SHARED.finditer(code):
        parts = [p for names, lo, hi in namespaces if lo < match.start() < hi for p in names] + [match.group(1)]
        found.add("_ZN" + "".join(f"{len(p)}{p}" for p in parts) + "E" if len(parts) > 1 else parts[0])
    return tuple(sorted(found))


def _with_local_headers(source: str, path: Path, spec: KernelSpec, once: set[Path] | None = None,
                        within: frozenset[Path] = frozenset()) -> str:
    """``source`` (the text of ``path``) with each header it includes from the kernel's own folders written in its
    place, found as the compilers find it (compile.find_header: the includer's folder, the file's, the spec's
    ``include`` folders), recursively, between ``#line`` directives that keep every line's own file and number:
    the rewrites above (inline assembly, host launches) then reach the helpers tutorials keep in such headers.  A
    header with ``#pragma once`` comes once; one that includes itself again is left to the compiler, and so is
    one outside the kernel's folder (KernelSpec.folder), which the compiler's sandbox refuses."""
    once = set() if once is None else once
    out, at = [], 0
    for match in includes(source):
        header = find_header(spec, path.resolve(), match.group(1) or match.group(2), bool(match.group(1)))
        if header is None or header in within:
            continue
        try:  # bounded, and only a regular file in the kernel's folder: a link out of it is refused too
            text = reading.read_text(header, errors="replace", within=spec.folder)
        except OSError as e:
            raise CompileError(f"{path}: cannot read the header {header}: {e}") from None
        pragma = _PRAGMA_ONCE.search(_code(text))
        inlined = "" if pragma and header in once else _with_local_headers(
            _PRAGMA_ONCE.sub("", text), header, spec, once, within | {header})
        if pragma:
            once.add(header)
        line = source.count("\n", 0, match.end()) + 2
        out += [source[at:match.start()], f"#line 1 {c_string(str(header))}\n{inlined}\n",
                f"#line {line} {c_string(str(path))}"]
        at = match.end()
    return "".join(out) + source[at:]


def compile_failure(build: Build, diagnostics: str) -> MmcheckError:
    """The error for a failed compile: Unsupported where the file uses a CUDA header, builtin or header
    feature (a WMMA shape, a cooperative-groups function) that the emulator does not provide, else
    CompileError with the compiler's own diagnostics; the sandbox's refusal as such."""
    spec = build.spec
    if refusal := sandbox.compile_refusal(spec.path, spec.folder, diagnostics):
        return refusal
    if verbatim := verbatim_failure(build, diagnostics):
        return verbatim
    if _NO_MATCH.search(diagnostics):
        candidates = _CANDIDATE.findall(diagnostics)
        if len(candidates) > 1:
            return CompileError(f"{spec.path}: {spec.entry} is overloaded, so mmcheck cannot tell which kernel to "
                                f"check (candidates: {'; '.join(candidates)})")
        return CompileError(f"{spec.path}: the spec's template arguments do not fit the kernel: mmcheck "
                            f"instantiates {build.instance}, the kernel is {'; '.join(candidates) or spec.entry}")
    header = _MISSING_HEADER.search(diagnostics)
    if header and not re.search(rf'#\s*include\s*"{re.escape(header["header"])}"', spec.source):
        # A header the file includes with <...> (a CUDA or third-party one); a "..." one is the file's own.
        return Unsupported(f"{header['where']}: {_not_found(header['header'])}{_why_whole(build)}")
    if lack := _lacking(spec, diagnostics):
        return lack
    rejected = f"the emulator's compiler rejected {build}:\n{diagnostics}"
    if fixed := _FIXED_WIDTH.search(diagnostics):
        return CompileError(f"{fixed['where']}: {fixed['name']} is not declared: include <cstdint>, as nvcc needs "
                            f"too; {rejected}")
    return CompileError(f"{spec.path}: {rejected}")


def _why_whole(build: Build) -> str:
    """Why the file was compiled whole, and what would do without the header it lacks, in words to follow a
    missing header's: "" where its device code was compiled, or is the whole file."""
    code = device_code(build)
    if code is None:
        return ("; if only host code needs it, pip install libclang: the emulator then compiles the kernel's device "
                "code alone")
    if code.error:
        return f"; the file is compiled whole, since its device code alone did not parse ({code.error})"
    return ""


def _lacking(spec: KernelSpec, diagnostics: str) -> Unsupported | None:
    """Unsupported where ``diagnostics`` (g++'s, or the device code's parse error) show the file using a CUDA
    builtin, type or namespace member, or a header feature (a WMMA shape), that the emulator's headers lack."""
    fp8 = _FP8.search(diagnostics)
    if fp8:
        return Unsupported(f"{spec.path}: the emulator has no {fp8.group(1) or fp8.group(2)} (of the 8-bit floats, it "
                           "has e4m3 and e5m2, not the e8m0 of MX scale factors)")
    limit = _EMULATOR_LIMIT.search(diagnostics)
    if limit:
        instance = _INSTANTIATION.search(diagnostics)
        required = re.search(re.escape(str(spec.path)) + r":(\d+):(?:\d+:\s+required from| in instantiation of)",
                             diagnostics)
        where = f"{spec.path}:{required.group(1)}" if required else str(spec.path)
        construct = f" ({instance.group(1).replace('nvcuda::', '')})" if instance else ""
        return Unsupported(f"{where}: {limit.group(1)}{construct}")
    aliases = dict(_NAMESPACE_ALIAS.findall(_code(spec.source)))
    for line, gxx_name, clang_name, namespace in _NOT_A_MEMBER.findall(diagnostics):
        namespace = aliases.get(namespace, namespace)
        if namespace in _CUDA_NAMESPACES:
            member = gxx_name or clang_name
            return Unsupported(f"{spec.path}:{line}: the emulator does not provide {namespace}::{member}")
    undeclared = _UNDECLARED.search(diagnostics)
    name = undeclared and next(filter(None, undeclared.groups()))
    if name and _CUDA_BUILTIN.fullmatch(name):
        return Unsupported(f"{spec.path}: the emulator does not provide {name}")
    return None
