// The sandbox's system calls, shared by the emulator's worker (worker.cpp: the processes that load and run
// a kernel) and the compilers' launcher (sandbox.cpp: g++, nvcc and the Python children that run NVRTC and
// libclang).  sandbox.py says why these tools.
//
// - Landlock: which folders a process may read, and the one it may write (a scratch folder of its own);
//   from ABI 4 no TCP, from ABI 6 no signals to processes outside the sandbox.  It survives execve.
// - seccomp filters, each an allow-list: kernel code gets `kernel_allowed`, and every other call traps
//   (SIGSYS), so that the worker can say what the kernel tried; compilers get `compiler_allowed`, which lets
//   them run their own stages, and every other call fails with EPERM.
// - Resource limits: address space, CPU time, file size, no core files.
//
// The filters are built by libseccomp, which knows every architecture's numbers and how to compare 64-bit
// arguments, loaded when first needed (dlopen): its runtime library is on nearly every Linux, its
// development header on few hosts (CI images, graders' containers).  Where it cannot be loaded, seccomp is a
// protection this host lacks (sandbox.py says so).
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#if __has_include(<seccomp.h>)
#include <seccomp.h>
#else
// libseccomp's stable interface (2.4 and later) as <seccomp.h> declares it: the few types and constants used
// here, since the header is missing where only the runtime library is installed.
typedef void* scmp_filter_ctx;
enum scmp_compare {
    SCMP_CMP_NE = 1, SCMP_CMP_LT = 2, SCMP_CMP_LE = 3, SCMP_CMP_EQ = 4, SCMP_CMP_GE = 5, SCMP_CMP_GT = 6,
    SCMP_CMP_MASKED_EQ = 7,
};
struct scmp_arg_cmp {
    unsigned int arg;
    enum scmp_compare op;
    uint64_t datum_a, datum_b;
};
enum scmp_filter_attr { SCMP_FLTATR_ACT_BADARCH = 2 };
#define SCMP_ACT_TRAP 0x00030000U
#define SCMP_ACT_ERRNO(x) (0x00050000U | ((x) & 0x0000ffffU))
#define SCMP_ACT_ALLOW 0x7fff0000U
#define SCMP_ARCH_NATIVE 0
#define SCMP_ARCH_X86 AUDIT_ARCH_I386
#define SCMP_ARCH_X32 (EM_X86_64 | __AUDIT_ARCH_LE)
#define SCMP_ARCH_ARM AUDIT_ARCH_ARM
#endif

// A system call newer than some hosts' C library headers, which the worker makes itself.
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same number on every architecture
#endif

namespace mmsandbox {
// ---- Landlock (uapi numbers, spelled here: older kernel headers lack the newer ones) ----------------
constexpr long kCreateRuleset = 444, kAddRule = 445, kRestrictSelf = 446;  // the same on every architecture
constexpr uint32_t kRulesetVersion = 1, kRulePathBeneath = 1;
enum : uint64_t {
    kExecute = 1 << 0, kWriteFile = 1 << 1, kReadFile = 1 << 2, kReadDir = 1 << 3, kRemoveDir = 1 << 4,
    kRemoveFile = 1 << 5, kMakeChar = 1 << 6, kMakeDir = 1 << 7, kMakeReg = 1 << 8, kMakeSock = 1 << 9,
    kMakeFifo = 1 << 10, kMakeBlock = 1 << 11, kMakeSym = 1 << 12,
    kRefer = 1 << 13,     // ABI 2
    kTruncate = 1 << 14,  // ABI 3
    kIoctlDev = 1 << 15,  // ABI 5
};
constexpr uint64_t kNetBindTcp = 1, kNetConnectTcp = 2;          // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1, kScopeSignal = 2;     // ABI 6
// What a rule on a file (not a folder) may grant.
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr uint64_t kReadRights = kExecute | kReadFile | kReadDir;

struct RulesetAttr {
    uint64_t fs, net, scoped;
};
struct __attribute__((packed)) PathBeneath {
    uint64_t allowed;
    int32_t parent_fd;
};

// The Landlock ABI version this kernel offers; 0 where it offers none (too old, or turned off).
inline int landlock_abi() {
    long abi = syscall(kCreateRuleset, nullptr, 0, kRulesetVersion);
    return abi < 0 ? 0 : int(abi);
}

inline uint64_t handled_fs(int abi) {
    uint64_t all = (kMakeSym << 1) - 1;
    if (abi >= 2) all |= kRefer;
    if (abi >= 3) all |= kTruncate;
    if (abi >= 5) all |= kIoctlDev;
    return all;
}

// Restricts this process and its future children to reading `read` and writing `write` (each a file or a
// folder with everything under it; those that do not exist are left out).  Where `reads_too` is false,
// only writes are restricted (reading is left to a later, narrower layer).  No TCP (ABI 4) and no signals
// to processes outside the sandbox (ABI 6).  "" on success, else what failed.
inline std::string restrict_files(const std::vector<std::string>& read, const std::vector<std::string>& write,
                                  bool reads_too) {
    int abi = landlock_abi();
    if (abi < 1) return "Landlock is not available";
    RulesetAttr attr{handled_fs(abi), abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                     abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
    if (!reads_too) attr.fs &= ~kReadRights;
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int ruleset = int(syscall(kCreateRuleset, &attr, size, 0));
    if (ruleset < 0) return std::string("landlock_create_ruleset: ") + strerror(errno);
    auto add = [&](const std::string& path, uint64_t rights) {
        int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st;
        if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= kFileRights;
        PathBeneath rule{rights & attr.fs, fd};
        if (rule.allowed) syscall(kAddRule, ruleset, kRulePathBeneath, &rule, 0);
        close(fd);
    };
    if (reads_too)
        for (const std::string& path : read) add(path, kReadRights);
    for (const std::string& path : write) add(path, attr.fs);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    long done = syscall(kRestrictSelf, ruleset, 0);
    int err = errno;
    close(ruleset);
    return done == 0 ? "" : std::string("landlock_restrict_self: ") + strerror(err);
}

// ---- seccomp: allow-lists built by libseccomp ---------------------------------------------------------
#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;  // what a trapped call's si_arch is for this architecture's own
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kArch = 0;
#endif
constexpr long kX32Bit = 0x40000000;  // on x86-64, what x32's numbers carry beside those of the calls

// The functions of libseccomp used here, found once; `missing` says why they cannot be used ("" where they can).
struct Libseccomp {
    scmp_filter_ctx (*init)(uint32_t);
    int (*attr_set)(scmp_filter_ctx, enum scmp_filter_attr, uint32_t);
    int (*rule_add_array)(scmp_filter_ctx, uint32_t, int, unsigned int, const struct scmp_arg_cmp*);
    int (*export_bpf)(scmp_filter_ctx, int);
    void (*release)(scmp_filter_ctx);
    int (*resolve_name)(const char*);
    char* (*resolve_num_arch)(uint32_t, int);
    std::string missing;
};

inline const Libseccomp& libseccomp() {
    static const Libseccomp lib = [] {
        Libseccomp l{};
        void* handle = dlopen("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            l.missing = std::string("no libseccomp here (") + dlerror() + ")";
            return l;
        }
        auto bind = [&](auto& function, const char* name) {
            function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, name));
            if (!function && l.missing.empty()) l.missing = std::string("no libseccomp here (it lacks ") + name + ")";
        };
        bind(l.init, "seccomp_init");
        bind(l.attr_set, "seccomp_attr_set");
        bind(l.rule_add_array, "seccomp_rule_add_array");
        bind(l.export_bpf, "seccomp_export_bpf");
        bind(l.release, "seccomp_release");
        bind(l.resolve_name, "seccomp_syscall_resolve_name");
        bind(l.resolve_num_arch, "seccomp_syscall_resolve_num_arch");
        return l;
    }();
    return lib;
}

// Comparisons of a call's argument `arg`, all 64 bits of it (a 32-bit argument with its upper half set
// matches none, and is denied).
inline scmp_arg_cmp arg_eq(unsigned arg, uint64_t value) { return {arg, SCMP_CMP_EQ, value, 0}; }
inline scmp_arg_cmp arg_below(unsigned arg, uint64_t value) { return {arg, SCMP_CMP_LT, value, 0}; }
inline scmp_arg_cmp arg_masked(unsigned arg, uint64_t mask, uint64_t value) {
    return {arg, SCMP_CMP_MASKED_EQ, mask, value};
}

// One rule of a filter: the call `name`, where every comparison in `when` holds (always, where there is none),
// gets `action` (allowed, unless it says otherwise).
struct Rule {
    const char* name;
    std::vector<scmp_arg_cmp> when = {};
    uint32_t action = SCMP_ACT_ALLOW;
};

using Program = std::vector<sock_filter>;

// The BPF program libseccomp wrote for `ctx`, into `out`: "" on success, else what failed.
inline std::string exported(const Libseccomp& lib, scmp_filter_ctx ctx, Program& out) {
    int fd = memfd_create("mmsandbox-filter", MFD_CLOEXEC);
    if (fd < 0) return std::string("memfd_create: ") + strerror(errno);
    bool whole = lib.export_bpf(ctx, fd) == 0;
    off_t size = lseek(fd, 0, SEEK_END);
    out.resize(size > 0 ? size_t(size) / sizeof(sock_filter) : 0);
    whole = whole && size > 0 && pread(fd, out.data(), size_t(size), 0) == size;
    close(fd);
    return whole ? "" : "seccomp_export_bpf failed";
}

// The filter of `rules`, in which every other call, of this architecture or through another's interface
// (x32, i386), gets `otherwise`: "" on success, else what failed.  A call this libseccomp cannot name (newer
// than it), or one this architecture lacks (stat on aarch64), is left out: an allow-list then denies it.
inline std::string build_filter(const std::vector<Rule>& rules, uint32_t otherwise, Program& out) {
    const Libseccomp& lib = libseccomp();
    if (!lib.missing.empty()) return lib.missing;
    scmp_filter_ctx ctx = lib.init(otherwise);
    if (!ctx) return "seccomp_init failed";
    std::string failed = lib.attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, otherwise) == 0 ? "" : "seccomp_attr_set failed";
    for (const Rule& r : rules) {
        int nr = lib.resolve_name(r.name);
        if (nr < 0 || !failed.empty()) continue;  // unknown (-1), or a pseudo-number: not a call here
        int rc = lib.rule_add_array(ctx, r.action, nr, unsigned(r.when.size()), r.when.data());
        if (rc < 0) failed = std::string("seccomp_rule_add(") + r.name + "): " + strerror(-rc);
    }
    if (failed.empty()) failed = exported(lib, ctx, out);
    lib.release(ctx);
    return failed;
}

// Installs `program` on this process and its future children: "" on success, else what failed.
inline std::string install(const Program& program) {
    sock_fprog fprog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0) return "";
    return std::string("seccomp: ") + strerror(errno);
}

// Stand-ins in the kernel's filter, which the worker builds once, for what only each child knows: its process
// id, and the magic that marks an open made on its behalf (worker.cpp's on_blocked).  No process id is either
// (pid_max is at most 2^22).
constexpr uint32_t kOwnPid = 0x7ffffff0, kOwnMagic = 0x7ffffff1;

// The kernel's filter made a child's own: its process id and magic written over the stand-ins.
inline Program own_filter(Program program, uint32_t pid, uint32_t magic) {
    for (sock_filter& insn : program)
        if (BPF_CLASS(insn.code) == BPF_JMP && BPF_OP(insn.code) != BPF_JA && BPF_SRC(insn.code) == BPF_K)
            insn.k = insn.k == kOwnPid ? pid : insn.k == kOwnMagic ? magic : insn.k;
    return program;
}

// What kernel code, the emulator's runtime, the C library and AddressSanitizer need once a child has entered
// the sandbox (found by tracing the zoo, the tests' kernels and the emulator's tests, plain and sanitized).
// Every other call traps.
inline std::vector<Rule> kernel_allowed() {
    const scmp_arg_cmp self = arg_eq(0, kOwnPid);
    return {
        // memory of its own: buffers, fiber stacks, malloc, AddressSanitizer's allocator
        {"mmap"}, {"munmap"}, {"mprotect"}, {"mremap"}, {"madvise"}, {"brk"},
        // files it holds: stdout and stderr, and the module and its libraries as the loader reads them
        {"read"}, {"readv"}, {"pread64"}, {"write"}, {"writev"}, {"lseek"}, {"close"},
        {"fstat"}, {"newfstatat"}, {"stat"}, {"lstat"}, {"statx"}, {"readlink"}, {"readlinkat"},
        {"fcntl", {arg_eq(1, F_GETFD)}}, {"fcntl", {arg_eq(1, F_SETFD)}}, {"fcntl", {arg_eq(1, F_GETFL)}},
        {"ioctl", {arg_eq(1, TCGETS)}},  // whether stderr is a terminal, which the sanitizers' reports ask
        // an open made by the trap's handler, for Landlock to judge (any other traps, and is made there)
        {"openat", {arg_eq(5, kOwnMagic)}},
        // the time, and sleeping
        {"clock_gettime"}, {"clock_getres"}, {"gettimeofday"}, {"time"}, {"nanosleep"}, {"clock_nanosleep"},
        // who it is, locks, yielding, random numbers: nothing of another process's
        {"getpid"}, {"getppid"}, {"gettid"}, {"getuid"}, {"geteuid"}, {"getgid"}, {"getegid"},
        {"futex"}, {"sched_yield"}, {"sched_getaffinity"}, {"getrandom"},
        // its own signal handlers (not the trap's, SIGSYS: 31; signals end at 64), masks and stack; abort()
        // and raise() signal the process itself
        {"rt_sigaction", {arg_below(0, SIGSYS)}}, {"rt_sigaction", {arg_masked(0, ~uint64_t(31), 32)}},
        {"rt_sigaction", {arg_eq(0, 64)}}, {"rt_sigprocmask"}, {"rt_sigreturn"}, {"sigaltstack"},
        {"restart_syscall"}, {"kill", {self}}, {"tkill", {self}}, {"tgkill", {self}}, {"rt_sigqueueinfo", {self}},
        {"rt_tgsigqueueinfo", {self}},
        // its own resource limits, read (AddressSanitizer's stack size)
        {"prlimit64", {arg_eq(0, 0), arg_eq(2, 0)}}, {"getrlimit"},
        {"exit"}, {"exit_group"},
    };
}

// What the compilers need: g++ with cc1plus, as, collect2 and ld; nvcc with its stages; Python running NVRTC or
// libclang (found by tracing their compiles).  Every other call fails with EPERM: no metadata changes (chmod,
// chown, extended attributes, times: ld's chmod of the module it wrote fails, which it ignores, and the module
// is loaded, not executed), no scheduling or priorities, no mounts, no sockets, no new namespaces.
inline std::vector<Rule> compiler_allowed() {
    // CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
    const uint64_t namespaces = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 |
                                0x40000000;
    return {
        // its own stages: started, run and waited for; clone3 answers as a kernel without it, so that the C
        // library falls back to clone, whose flags the filter can see (none of a new namespace)
        {"clone", {arg_masked(0, namespaces, 0)}}, {"clone3", {}, SCMP_ACT_ERRNO(ENOSYS)}, {"fork"}, {"vfork"},
        {"execve"}, {"wait4"}, {"waitid"}, {"exit"}, {"exit_group"}, {"set_tid_address"}, {"set_robust_list"},
        {"rseq"}, {"arch_prctl"}, {"setpgid"}, {"getpgrp"}, {"getpgid"},
        // memory of its own
        {"mmap"}, {"munmap"}, {"mprotect"}, {"mremap"}, {"madvise"}, {"brk"},
        // files, which Landlock judges: the compilers' temporary files are made, renamed and removed
        {"open"}, {"openat"}, {"creat"}, {"read"}, {"write"}, {"pread64"}, {"pwrite64"}, {"readv"}, {"writev"},
        {"lseek"}, {"close"}, {"close_range"}, {"dup"}, {"dup2"}, {"dup3"}, {"fcntl"}, {"fstat"}, {"stat"},
        {"lstat"}, {"newfstatat"}, {"statx"}, {"statfs"}, {"fstatfs"}, {"access"}, {"faccessat"},
        {"faccessat2"}, {"readlink"}, {"readlinkat"}, {"getcwd"}, {"chdir"}, {"fchdir"}, {"getdents"},
        {"getdents64"}, {"unlink"}, {"unlinkat"}, {"rename"}, {"renameat"}, {"renameat2"}, {"mkdir"},
        {"mkdirat"}, {"rmdir"}, {"umask"}, {"ftruncate"}, {"fsync"}, {"fdatasync"}, {"pipe"}, {"pipe2"},
        {"poll"}, {"ppoll"}, {"select"}, {"pselect6"},
        // terminals asked whether they are one, and their size; close-on-exec set
        {"ioctl", {arg_eq(1, TCGETS)}}, {"ioctl", {arg_eq(1, TIOCGWINSZ)}}, {"ioctl", {arg_eq(1, FIOCLEX)}},
        // signals: handlers, masks, alarms of its own; to its own processes (Landlock's ABI 6 scopes them too)
        {"rt_sigaction"}, {"rt_sigprocmask"}, {"rt_sigreturn"}, {"sigaltstack"}, {"restart_syscall"},
        {"kill", {arg_below(0, 1u << 31)}}, {"tgkill"}, {"tkill"}, {"alarm"}, {"setitimer"}, {"getitimer"},
        // the time, who it is, the machine's size
        {"clock_gettime"}, {"clock_getres"}, {"gettimeofday"}, {"time"}, {"nanosleep"}, {"clock_nanosleep"},
        {"times"}, {"getrusage"}, {"sysinfo"}, {"uname"}, {"getpid"}, {"getppid"}, {"gettid"}, {"getuid"},
        {"geteuid"}, {"getgid"}, {"getegid"}, {"getresuid"}, {"getresgid"}, {"getgroups"},
        {"futex"}, {"sched_yield"}, {"sched_getaffinity"}, {"sched_get_priority_max"},
        {"sched_get_priority_min"}, {"getrandom"},
        // its own resource limits (cc1plus raises its stack's soft limit)
        {"prlimit64", {arg_eq(0, 0)}}, {"getrlimit"}, {"setrlimit"},
        // a filter of its own on top of this one, which can only narrow it: a reference function's process
        // forbids itself processes and programs (referee_child.py)
        {"seccomp"}, {"prctl", {arg_eq(0, PR_SET_NO_NEW_PRIVS)}}, {"prctl", {arg_eq(0, PR_GET_NO_NEW_PRIVS)}},
        {"prctl", {arg_eq(0, PR_GET_SECCOMP)}}, {"prctl", {arg_eq(0, PR_SET_SECCOMP)}},
    };
}

// ---- what a trapped call was -----------------------------------------------------------------------
// What a denied system call was an attempt to do, in words the report uses: "the kernel tried to <words>".
enum Kind { kProcess, kProgram, kSocket, kSignal, kOpen, kChange, kTrace, kSystem, kHandler, kLimit };
struct Call {
    const char* name;
    Kind kind;
    const char* words;  // kChange: a verb for the path; kSystem, kTrace, kLimit: what the call does
    int path;           // kChange: which argument is the path
};

#define MMSANDBOX_CALL(name, kind, words) {#name, kind, words, -1}
#define MMSANDBOX_PATH(name, words, arg) {#name, kChange, words, arg}
// The calls a report says in words of their own; any other is named ("make the system call mount_setattr").
inline const std::vector<Call>& kernel_words() {
    static const std::vector<Call> calls = {
        MMSANDBOX_CALL(clone, kProcess, nullptr),
        MMSANDBOX_CALL(clone3, kProcess, nullptr),
        MMSANDBOX_CALL(fork, kProcess, nullptr),
        MMSANDBOX_CALL(vfork, kProcess, nullptr),
        MMSANDBOX_CALL(execve, kProgram, nullptr),
        MMSANDBOX_CALL(execveat, kProgram, nullptr),
        MMSANDBOX_CALL(socket, kSocket, nullptr),
        MMSANDBOX_CALL(socketpair, kSocket, nullptr),
        MMSANDBOX_CALL(kill, kSignal, nullptr),
        MMSANDBOX_CALL(tkill, kSignal, nullptr),
        MMSANDBOX_CALL(tgkill, kSignal, nullptr),
        MMSANDBOX_CALL(rt_sigqueueinfo, kSignal, nullptr),
        MMSANDBOX_CALL(rt_tgsigqueueinfo, kSignal, nullptr),
        MMSANDBOX_CALL(pidfd_send_signal, kSignal, nullptr),
        MMSANDBOX_CALL(rt_sigaction, kHandler, nullptr),
        MMSANDBOX_CALL(prlimit64, kLimit, "raise its resource limits"),
        MMSANDBOX_CALL(setrlimit, kLimit, "raise its resource limits"),
        MMSANDBOX_CALL(open, kOpen, nullptr),
        MMSANDBOX_CALL(creat, kOpen, nullptr),
        MMSANDBOX_CALL(openat, kOpen, nullptr),
        MMSANDBOX_CALL(openat2, kOpen, nullptr),
        MMSANDBOX_PATH(mkdirat, "create the folder", 1),
        MMSANDBOX_PATH(unlinkat, "remove", 1),
        MMSANDBOX_PATH(renameat, "rename", 1),
        MMSANDBOX_PATH(renameat2, "rename", 1),
        MMSANDBOX_PATH(linkat, "link to", 1),
        MMSANDBOX_PATH(symlinkat, "make a symbolic link at", 2),
        MMSANDBOX_PATH(mknodat, "create the special file", 1),
        MMSANDBOX_PATH(fchmodat, "change the permissions of", 1),
        MMSANDBOX_PATH(fchownat, "change the owner of", 1),
        MMSANDBOX_PATH(truncate, "truncate", 0),
        MMSANDBOX_PATH(utimensat, "change the times of", 1),
        MMSANDBOX_PATH(mkdir, "create the folder", 0),
        MMSANDBOX_PATH(rmdir, "remove the folder", 0),
        MMSANDBOX_PATH(unlink, "remove", 0),
        MMSANDBOX_PATH(rename, "rename", 0),
        MMSANDBOX_PATH(link, "link to", 0),
        MMSANDBOX_PATH(symlink, "make a symbolic link at", 1),
        MMSANDBOX_PATH(mknod, "create the special file", 0),
        MMSANDBOX_PATH(chmod, "change the permissions of", 0),
        MMSANDBOX_PATH(chown, "change the owner of", 0),
        MMSANDBOX_PATH(lchown, "change the owner of", 0),
        MMSANDBOX_PATH(utime, "change the times of", 0),
        MMSANDBOX_PATH(utimes, "change the times of", 0),
        MMSANDBOX_PATH(futimesat, "change the times of", 1),
        MMSANDBOX_CALL(ptrace, kTrace, "trace another process"),
        MMSANDBOX_CALL(process_vm_readv, kTrace, "read another process's memory"),
        MMSANDBOX_CALL(process_vm_writev, kTrace, "write another process's memory"),
        MMSANDBOX_CALL(process_madvise, kTrace, "advise on another process's memory"),
        MMSANDBOX_CALL(kcmp, kTrace, "compare another process's resources"),
        MMSANDBOX_CALL(pidfd_open, kTrace, "open a handle on another process"),
        MMSANDBOX_CALL(pidfd_getfd, kTrace, "take a file from another process"),
        MMSANDBOX_CALL(mount, kSystem, "mount a file system"),
        MMSANDBOX_CALL(umount2, kSystem, "unmount a file system"),
        MMSANDBOX_CALL(pivot_root, kSystem, "change the root file system"),
        MMSANDBOX_CALL(chroot, kSystem, "change the root folder"),
        MMSANDBOX_CALL(unshare, kSystem, "leave its namespaces"),
        MMSANDBOX_CALL(setns, kSystem, "enter other namespaces"),
        MMSANDBOX_CALL(bpf, kSystem, "load a BPF program"),
        MMSANDBOX_CALL(perf_event_open, kSystem, "open a performance counter"),
        MMSANDBOX_CALL(io_uring_setup, kSystem, "set up an io_uring (which bypasses system call filters)"),
        MMSANDBOX_CALL(userfaultfd, kSystem, "handle page faults itself (userfaultfd)"),
        MMSANDBOX_CALL(keyctl, kSystem, "use the kernel's key store"),
        MMSANDBOX_CALL(add_key, kSystem, "use the kernel's key store"),
        MMSANDBOX_CALL(request_key, kSystem, "use the kernel's key store"),
        MMSANDBOX_CALL(name_to_handle_at, kSystem, "open a file by handle"),
        MMSANDBOX_CALL(open_by_handle_at, kSystem, "open a file by handle"),
        MMSANDBOX_CALL(kexec_load, kSystem, "load a new operating-system kernel"),
        MMSANDBOX_CALL(init_module, kSystem, "load an operating-system module"),
        MMSANDBOX_CALL(finit_module, kSystem, "load an operating-system module"),
        MMSANDBOX_CALL(delete_module, kSystem, "unload an operating-system module"),
        MMSANDBOX_CALL(reboot, kSystem, "reboot the machine"),
        MMSANDBOX_CALL(swapon, kSystem, "change the swap space"),
        MMSANDBOX_CALL(swapoff, kSystem, "change the swap space"),
        MMSANDBOX_CALL(sethostname, kSystem, "change the host name"),
        MMSANDBOX_CALL(setdomainname, kSystem, "change the domain name"),
        MMSANDBOX_CALL(settimeofday, kSystem, "set the clock"),
        MMSANDBOX_CALL(clock_settime, kSystem, "set the clock"),
        MMSANDBOX_CALL(adjtimex, kSystem, "set the clock"),
        MMSANDBOX_CALL(clock_adjtime, kSystem, "set the clock"),
        MMSANDBOX_CALL(acct, kSystem, "switch process accounting"),
        MMSANDBOX_CALL(quotactl, kSystem, "change disk quotas"),
        MMSANDBOX_CALL(syslog, kSystem, "read the system's log"),
        MMSANDBOX_CALL(vhangup, kSystem, "hang up the terminal"),
        MMSANDBOX_CALL(fanotify_init, kSystem, "watch the file system"),
        MMSANDBOX_CALL(move_pages, kSystem, "move another process's pages"),
        MMSANDBOX_CALL(migrate_pages, kSystem, "move another process's pages"),
        // System V and POSIX IPC: objects shared with every process of the machine (or container)
        MMSANDBOX_CALL(shmget, kSystem, "use System V shared memory"),
        MMSANDBOX_CALL(shmat, kSystem, "use System V shared memory"),
        MMSANDBOX_CALL(shmctl, kSystem, "use System V shared memory"),
        MMSANDBOX_CALL(msgget, kSystem, "use a System V message queue"),
        MMSANDBOX_CALL(msgsnd, kSystem, "use a System V message queue"),
        MMSANDBOX_CALL(msgrcv, kSystem, "use a System V message queue"),
        MMSANDBOX_CALL(msgctl, kSystem, "use a System V message queue"),
        MMSANDBOX_CALL(semget, kSystem, "use a System V semaphore"),
        MMSANDBOX_CALL(semop, kSystem, "use a System V semaphore"),
        MMSANDBOX_CALL(semtimedop, kSystem, "use a System V semaphore"),
        MMSANDBOX_CALL(semctl, kSystem, "use a System V semaphore"),
        MMSANDBOX_CALL(mq_open, kSystem, "open a POSIX message queue"),
        MMSANDBOX_CALL(iopl, kSystem, "access I/O ports"),
        MMSANDBOX_CALL(ioperm, kSystem, "access I/O ports"),
    };
    return calls;
}
#undef MMSANDBOX_CALL
#undef MMSANDBOX_PATH

// A trapped call as the trap's handler finds it: its name, the interface it came through where that is not this
// architecture's own ("x32", "i386"), and its words where kernel_words has them.
struct Trapped {
    std::string name;
    const char* abi;
    const Call* words;
};

// Every call of this architecture and of the other interfaces its processes may use, by number, as libseccomp
// names them: filled before any child starts, since the trap's handler must not ask libseccomp (it allocates).
class CallTable {
public:
    void fill() {
        if (!libseccomp().missing.empty()) return;
        add(kArch, SCMP_ARCH_NATIVE, 0, nullptr);
#if defined(__x86_64__)
        add(kArch, SCMP_ARCH_X32, kX32Bit, "x32");
        add(AUDIT_ARCH_I386, SCMP_ARCH_X86, 0, "i386");
#elif defined(__aarch64__)
        add(AUDIT_ARCH_ARM, SCMP_ARCH_ARM, 0, "arm");
#endif
    }

    // The call `nr` that came through the interface of architecture `arch` (a trap's si_arch); null where no
    // name is known.
    const Trapped* find(uint32_t arch, long nr) const {
        for (const Abi& abi : abis_) {
            long index = nr & ~kX32Bit;
            if (abi.arch == arch && (nr & kX32Bit) == abi.bit && index >= 0 && size_t(index) < abi.calls.size() &&
                !abi.calls[size_t(index)].name.empty())
                return &abi.calls[size_t(index)];
        }
        return nullptr;
    }

private:
    static constexpr long kNumbers = 1024;  // above every call's number today
    struct Abi {
        uint32_t arch;
        long bit;
        std::vector<Trapped> calls;
    };

    void add(uint32_t arch, uint32_t token, long bit, const char* label) {
        Abi abi{arch, bit, std::vector<Trapped>(kNumbers)};
        for (long nr = 0; nr < kNumbers; ++nr) {
            char* name = libseccomp().resolve_num_arch(token, int(nr | bit));
            if (!name) continue;
            abi.calls[size_t(nr)] = {name, label, label ? nullptr : words_of(name)};
            free(name);
        }
        abis_.push_back(std::move(abi));
    }

    static const Call* words_of(const std::string& name) {
        for (const Call& c : kernel_words())
            if (name == c.name) return &c;
        return nullptr;
    }

    std::vector<Abi> abis_;
};

// ---- limits ----------------------------------------------------------------------------------------
inline void limit(int resource, rlim_t value) {
    rlimit r{value, value};
    setrlimit(resource, &r);
}

}  // namespace mmsandbox
