"""The sandbox's seccomp filters as allow-lists (sandbox.h): hostile kernels (tests/hostile/allowlist/, one
attempt each, aimed at files this module makes) are each one `sandbox` failure that names the call, nothing they
tried changed anything, and a plain kernel in the same run passes; and the filters libseccomp builds, run here
on the calls themselves, let through nothing that no kernel, or no compiler, needs."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import json
import os
import platform
import signal
import stat
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.toolchain import children, sandbox
from mmcheck.front.cli import main
from mmcheck.errors import SandboxUnavailable

from . import needs
from .run_once import RunOnce

HOSTILE = Path(__file__).parent / "hostile" / "allowlist"
SANDBOX_H = Path(sandbox.__file__).parents[1] / "sandbox.h"  # beside sandbox.cpp, in mmcheck/

x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="the attempts use x86-64's system calls")

# kernel -> what its one failure says the kernel tried ("the kernel tried to ... (blocked)")
ATTEMPTS = {
    "allowlist.fchmodat2": "make the system call fchmodat2",
    "allowlist.setxattr": "make the system call setxattr",
    "allowlist.lsetxattr": "make the system call lsetxattr",
    "allowlist.sched_fifo": "make the system call sched_setscheduler",
    "allowlist.setpriority": "make the system call setpriority",
    "allowlist.affinity": "make the system call sched_setaffinity",
    "allowlist.ioprio": "make the system call ioprio_set",
    "allowlist.memfd": "make the system call memfd_create",
    "allowlist.fallocate": "make the system call fallocate",
    "allowlist.scratch": "write mmcheck-pile",
    "allowlist.mountinfo": "read /proc/self/mountinfo",
    "allowlist.net": "read /proc/self/net/tcp",
    "allowlist.cgroup": "read /proc/self/cgroup",
    "allowlist.inotify": "make the system call inotify_init1",
    "allowlist.fanotify": "watch the file system",
    "allowlist.raw_mount_setattr": "make the system call mount_setattr",
    "allowlist.x32": "make the system call openat through the x32 interface",
    "allowlist.int80": "make the system call open through the i386 interface",
    # the defences of the first round, which must hold under the allow-list too
    "allowlist.openat2": "open a file by a call the sandbox forbids (/etc/passwd)",
    "allowlist.io_uring": "set up an io_uring (which bypasses system call filters)",
    "allowlist.process_vm_readv": "read another process's memory",
    "allowlist.ptrace": "trace another process",
    "allowlist.execveat": "run a program ()",
    "allowlist.clone3": "start a process",
    "allowlist.unshare": "leave its namespaces",
    "allowlist.bpf": "load a BPF program",
    "allowlist.userfaultfd": "handle page faults itself (userfaultfd)",
    "allowlist.keyctl": "use the kernel's key store",
    "allowlist.mount": "mount a file system",
    "allowlist.setrlimit": "raise its resource limits",
    "allowlist.sigsys": "take over the sandbox's signal (SIGSYS)",
}
# The kernels that aim at a file of their own, which must come through unchanged.
TARGETED = ("fchmodat2", "setxattr", "lsetxattr", "file_setattr")
FILE_SETATTR = 469  # newer than many a libseccomp, which then cannot name it: the report gives its number


def _libseccomp() -> ctypes.CDLL:
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    return lib


def _number(name: str) -> int:
    """The number of system call ``name`` on this architecture, as libseccomp knows it (negative: unknown)."""
    return _libseccomp().seccomp_syscall_resolve_name(name.encode())


def _file_setattr_words() -> str:
    if _number("file_setattr") == FILE_SETATTR:
        return "make the system call file_setattr"
    return f"make the system call number {FILE_SETATTR}, which this host's libseccomp does not name"


@dataclass
class Run:
    rows: dict[str, dict]
    targets: dict[str, Path]
    piled: list[Path]  # files a kernel left in the workers' folders
    before: tuple[int, int]  # this process's priority and scheduling policy before the run
    after: tuple[int, int]


def _scheduling() -> tuple[int, int]:
    return os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)


@pytest.fixture(scope="module")
def allowlist_run(tmp_path_factory):
    """One run of every kernel of tests/hostile/allowlist/, those that change a file aimed at one of the run's own
    (mode 0600, no extended attributes): once per test run, as this module's tests may fall to two pytest-xdist
    workers."""
    return RunOnce(tmp_path_factory, "allowlist")("run", lambda: _run_all(tmp_path_factory))


def _run_all(tmp_path_factory) -> Run:
    folder = tmp_path_factory.mktemp("allowlist")
    targets = {name: tmp_path_factory.mktemp("targets") / name for name in TARGETED}
    for target in targets.values():
        target.write_text("unchanged")
        target.chmod(0o600)
    for source in [*HOSTILE.glob("*.cu"), *HOSTILE.glob("*.cuh"), HOSTILE.parent / "plain.cu"]:
        text = source.read_text()
        if source.stem in targets:
            text = text.replace(f'"/tmp/mmcheck-hostile-{source.stem}"', f'"{targets[source.stem]}"')
        (folder / source.name).write_text(text)
    out, said, before = folder / "run.json", io.StringIO(), _scheduling()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        main(["check", "--backend", "emu", "--src", str(folder), "--json", str(out), "--timeout", "10"])
    rows = {row["kernel"]: row for row in json.loads(out.read_text())["results"]}
    return Run(rows, targets, list(children.scratch().rglob("mmcheck-pile")), before, _scheduling())


@pytest.mark.slow(16)
@needs.gxx
@needs.whole_sandbox
@x86_64
def test_each_attempt_is_one_sandbox_failure_naming_the_call_and_a_plain_kernel_passes(allowlist_run):
    rows = allowlist_run.rows
    expected = {**ATTEMPTS, "allowlist.file_setattr": _file_setattr_words()}
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert set(rows) == {"hostile.plain", *expected}
    for kernel, words in expected.items():
        row = rows[kernel]
        assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
        assert f"the kernel tried to {words} (blocked)" in row["message"], row["message"]
        assert row["message"].count("(blocked") == 1, row["message"]


@needs.gxx
@needs.whole_sandbox
@x86_64
def test_nothing_an_attempt_aimed_at_changed(allowlist_run):
    for target in allowlist_run.targets.values():
        assert stat.S_IMODE(target.stat().st_mode) == 0o600, target
        assert os.listxattr(target) == [], target
        assert target.read_text() == "unchanged"
    assert allowlist_run.piled == []
    assert allowlist_run.after == allowlist_run.before


# ---- the filters as libseccomp builds them, run on calls here -------------------------------------------------
# Writes the filter sandbox.h builds (kernel: with the process id and magic given; compiler) to stdout, as BPF.
_DUMP = r"""
#include "sandbox.h"
#include <cstdio>
int main(int argc, char** argv) {
    using namespace mmsandbox;
    bool kernel = std::string(argv[1]) == "kernel";
    Program p;
    std::string failed = kernel ? build_filter(kernel_allowed(), SCMP_ACT_TRAP, p)
                                : build_filter(compiler_allowed(), SCMP_ACT_ERRNO(EPERM), p);
    if (!failed.empty()) return fprintf(stderr, "%s\n", failed.c_str()), 1;
    if (kernel) p = own_filter(p, uint32_t(atoi(argv[2])), uint32_t(atoi(argv[3])));
    fwrite(p.data(), sizeof p[0], p.size(), stdout);
}
"""
PID, MAGIC = 4242, 0x5EED
ALLOW, TRAP, ERRNO = 0x7FFF0000, 0x00030000, 0x00050000
AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, X32 = 0xC000003E, 0x40000003, 0x40000000
# Calls no kernel needs, and no compiler: metadata, scheduling and priorities of any process, mounts, other
# processes' memory, the kernel's own facilities.
DANGEROUS = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "setxattr",
             "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "utimensat", "utimes",
             "setpriority", "sched_setscheduler", "sched_setparam", "sched_setaffinity", "sched_setattr",
             "ioprio_set", "mount", "umount2", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsmount",
             "fspick", "fsconfig", "pivot_root", "chroot", "unshare", "setns", "ptrace", "process_vm_readv",
             "process_vm_writev", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "io_uring_setup",
             "kexec_load", "init_module", "finit_module", "socket", "socketpair", "fanotify_init", "personality")
# ... nor these, which kernel code alone is refused: processes, programs, files changed, watches, memory files
KERNEL_ONLY = ("clone", "clone3", "fork", "vfork", "execve", "execveat", "open", "creat", "openat2", "unlink",
               "rename", "mkdir", "truncate", "ftruncate", "fallocate", "memfd_create", "inotify_init1",
               "inotify_add_watch", "setrlimit", "pipe2", "dup2", "prctl", "seccomp", "pkey_mprotect")


@pytest.fixture(scope="module")
def filters(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("filters")
    (folder / "dump.cpp").write_text(_DUMP)
    subprocess.run(["g++", "-std=c++17", "-I", str(SANDBOX_H.parent), str(folder / "dump.cpp"), "-o",
                    str(folder / "dump"), "-ldl"], check=True)
    run = [str(folder / "dump")]
    return {"kernel": subprocess.run([*run, "kernel", str(PID), str(MAGIC)], check=True, capture_output=True).stdout,
            "compiler": subprocess.run([*run, "compiler"], check=True, capture_output=True).stdout}


def _decide(program: bytes, nr: int, *args: int, arch: int = AUDIT_ARCH_X86_64) -> int:
    """What the classic BPF ``program`` answers for a call (seccomp_data: nr, arch, ip, args), as the kernel
    would run it; the action alone (SECCOMP_RET_ACTION_FULL) and, for ERRNO, the error."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    code = list(struct.iter_unpack("<HBBI", program))
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        elif op == 0x05:  # BPF_JMP | BPF_JA
            pc += k
        else:  # BPF_JMP | JEQ, JGT, JGE, JSET with BPF_K
            taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += jt if taken else jf
        pc += 1


def _known(names) -> list[int]:
    return [nr for nr in map(_number, names) if nr >= 0]


@needs.gxx
@x86_64
@pytest.mark.skipif(not sandbox.host().libseccomp, reason="needs libseccomp")
def test_the_kernels_filter_allows_only_its_list_and_traps_the_rest(filters):
    kernel = filters["kernel"]
    for nr in _known(DANGEROUS + KERNEL_ONLY):
        assert _decide(kernel, nr, PID) == TRAP, nr
    # every call the allow-list does not name traps, named by libseccomp or not (file_setattr, and calls to come)
    allowed = {nr for nr in range(1024) if _decide(kernel, nr, PID, 0, 0, 0, 0, MAGIC) == ALLOW}
    assert len(allowed) < 60 and FILE_SETATTR not in allowed and _number("read") in allowed
    # x32's numbers and i386's interface trap, whatever the call
    assert _decide(kernel, X32 | _number("read"), 0) == TRAP
    assert _decide(kernel, 3, 0, arch=AUDIT_ARCH_I386) == TRAP


@needs.gxx
@x86_64
@pytest.mark.skipif(not sandbox.host().libseccomp, reason="needs libseccomp")
def test_the_kernels_filter_refines_by_argument_all_64_bits(filters):
    def decide(name: str, *args: int) -> int:
        return _decide(filters["kernel"], _number(name), *args)

    assert decide("kill", PID, signal.SIGABRT) == ALLOW and decide("kill", PID + 1, signal.SIGKILL) == TRAP
    assert decide("tgkill", PID, PID, signal.SIGABRT) == ALLOW and decide("tgkill", 1, 1, signal.SIGKILL) == TRAP
    assert decide("rt_sigaction", signal.SIGSEGV) == ALLOW and decide("rt_sigaction", 40) == ALLOW
    assert decide("rt_sigaction", signal.SIGSYS) == TRAP
    assert decide("rt_sigaction", signal.SIGSYS | 1 << 32) == TRAP  # the kernel reads an int: SIGSYS
    assert decide("kill", PID | 1 << 32, signal.SIGKILL) == TRAP
    assert decide("openat", -100 & (2**64 - 1), 0, 0, 0, 0, MAGIC) == ALLOW
    assert decide("openat", -100 & (2**64 - 1), 0, 0, 0, 0, 0) == TRAP
    assert decide("prlimit64", 0, 9, 0, 0x1000) == ALLOW and decide("prlimit64", 0, 9, 0x1000, 0) == TRAP
    assert decide("fcntl", 3, 1) == ALLOW and decide("fcntl", 3, 7) == TRAP  # F_GETFD; F_SETLKW


@needs.gxx
@x86_64
@pytest.mark.skipif(not sandbox.host().libseccomp, reason="needs libseccomp")
def test_the_compilers_filter_fails_what_no_compiler_needs_with_eperm(filters):
    compiler = filters["compiler"]
    for nr in _known(DANGEROUS):
        assert _decide(compiler, nr, 1) == ERRNO | errno.EPERM, nr
    assert _decide(compiler, _number("execve")) == ALLOW and _decide(compiler, _number("vfork")) == ALLOW
    assert _decide(compiler, _number("clone"), signal.SIGCHLD) == ALLOW
    assert _decide(compiler, _number("clone"), 0x10000000 | signal.SIGCHLD) == ERRNO | errno.EPERM  # NEWUSER
    assert _decide(compiler, _number("clone3")) == ERRNO | errno.ENOSYS  # the C library falls back to clone
    assert _decide(compiler, FILE_SETATTR) == ERRNO | errno.EPERM
    # a filter of its own, which only narrows: allowed; any other prctl (PR_SET_DUMPABLE): refused
    assert _decide(compiler, _number("seccomp"), 1) == ALLOW and _decide(compiler, _number("prctl"), 38) == ALLOW
    assert _decide(compiler, _number("prctl"), 4, 1) == ERRNO | errno.EPERM


def test_a_host_without_libseccomp_is_said_to_lack_seccomp_and_required_it_is_an_error(monkeypatch):
    monkeypatch.setenv("MMCHECK_SANDBOX_WITHOUT", "libseccomp")
    sandbox.host.cache_clear()
    try:
        assert "s" not in sandbox.protections()
        assert "system calls (no libseccomp here" in sandbox.note()
        with pytest.raises(SandboxUnavailable, match="--require-sandbox: .*no libseccomp here"):
            sandbox.note(require=True)
    finally:
        monkeypatch.delenv("MMCHECK_SANDBOX_WITHOUT")
        sandbox.host.cache_clear()
