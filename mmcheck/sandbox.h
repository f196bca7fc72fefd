// The sandbox's system calls, shared by the emulator's worker (worker.cpp: the processes that load and run
// a kernel) and the compilers' launcher (sandbox.cpp: g++ and nvcc).  sandbox.py says why these tools.
//
// - Landlock: which folders a process may read, and the one it may write (a scratch folder of its own);
//   from ABI 4 no TCP, from ABI 6 no signals to processes outside the sandbox.  It survives execve.
// - A seccomp filter: the system calls a process may not make.  Kernel code gets `kernel_filter`, whose
//   denials trap (SIGSYS), so that the worker can say what the kernel tried; compilers get `compiler_filter`,
//   which lets them run their own stages but fails sockets, tracing and signals to every process.
// - Resource limits: address space, CPU time, file size, no core files.
//
// The filter is plain BPF written here rather than built with libseccomp: its development header is
// missing on most hosts (CI images, graders' containers) while the kernel's own headers, which g++ needs
// anyway, are always there, and the filter is a short list of calls with a few argument checks.
#pragma once

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// System calls newer than some hosts' kernel headers: from 424 on, the same number on every architecture.
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
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

// ---- seccomp ---------------------------------------------------------------------------------------
#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#define MMSANDBOX_NO_SECCOMP 1
constexpr uint32_t kArch = 0;
#endif

// A filter: rules, each for one system call, checked in turn; a call no rule names is allowed.
class Filter {
public:
    explicit Filter(uint32_t deny) : deny_(deny) {}

    Filter& deny(long nr) { return rule(nr, {ret(deny_)}); }
    // Denied unless argument `arg`'s low 32 bits are `value`.
    Filter& deny_unless(long nr, int arg, uint32_t value) {
        return rule(nr, {load(arg_low(arg)), jeq(value, 0, 1), ret(SECCOMP_RET_ALLOW), ret(deny_)});
    }
    // Denied unless argument `arg` is 0 (all 64 bits: a pointer).
    Filter& deny_unless_null(long nr, int arg) {
        return rule(nr, {load(arg_low(arg)), jeq(0, 0, 3), load(arg_low(arg) + 4), jeq(0, 0, 1),
                         ret(SECCOMP_RET_ALLOW), ret(deny_)});
    }
    // Denied where argument `arg`'s low 32 bits are `value`.
    Filter& deny_if(long nr, int arg, uint32_t value) {
        return rule(nr, {load(arg_low(arg)), jeq(value, 0, 1), ret(deny_), ret(SECCOMP_RET_ALLOW)});
    }

    // Installs the filter on this process and its future children: "" on success, else what failed.
    std::string install() const {
#ifdef MMSANDBOX_NO_SECCOMP
        return "seccomp filters are not written for this architecture";
#else
        std::vector<sock_filter> prog = {load(offsetof(seccomp_data, arch)), jeq(kArch, 1, 0),
                                         ret(SECCOMP_RET_KILL_PROCESS)};
#if defined(__x86_64__)
        // The x32 calls (the same calls under other numbers) are all denied.
        prog.insert(prog.end(), {load(offsetof(seccomp_data, nr)), jge(0x40000000, 0, 1), ret(deny_)});
#endif
        prog.insert(prog.end(), body_.begin(), body_.end());
        prog.push_back(ret(SECCOMP_RET_ALLOW));
        sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0)
            return std::string("seccomp: ") + strerror(errno);
        return "";
#endif
    }

private:
    static sock_filter load(uint32_t offset) { return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); }
    static sock_filter ret(uint32_t action) { return BPF_STMT(BPF_RET | BPF_K, action); }
    static sock_filter jeq(uint32_t k, uint8_t yes, uint8_t no) { return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, yes, no); }
    static sock_filter jge(uint32_t k, uint8_t yes, uint8_t no) { return BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, k, yes, no); }
    static uint32_t arg_low(int arg) { return uint32_t(offsetof(seccomp_data, args) + 8 * arg); }  // little-endian

    Filter& rule(long nr, std::vector<sock_filter> then) {
        body_.push_back(load(offsetof(seccomp_data, nr)));
        body_.push_back(jeq(uint32_t(nr), 0, uint8_t(then.size())));
        body_.insert(body_.end(), then.begin(), then.end());
        return *this;
    }

    uint32_t deny_;
    std::vector<sock_filter> body_;
};

// What a denied system call was an attempt to do, in words the report uses: "the kernel tried to <words>".
enum Kind { kProcess, kProgram, kSocket, kSignal, kOpen, kChange, kTrace, kSystem, kHandler, kLimit };
struct Call {
    long nr;
    Kind kind;
    const char* words;  // kChange: a verb for the path; kSystem, kTrace: what the call does
    int path;           // kChange: which argument is the path
};

#define MMSANDBOX_CALL(name, kind, words) {SYS_##name, kind, words, -1}
#define MMSANDBOX_PATH(name, words, arg) {SYS_##name, kChange, words, arg}
// Calls that no kernel and no compiler has any business making.
inline const std::vector<Call>& system_calls() {
    static const std::vector<Call> calls = {
        MMSANDBOX_CALL(ptrace, kTrace, "trace another process"),
        MMSANDBOX_CALL(process_vm_readv, kTrace, "read another process's memory"),
        MMSANDBOX_CALL(process_vm_writev, kTrace, "write another process's memory"),
        MMSANDBOX_CALL(process_madvise, kTrace, "advise on another process's memory"),
        MMSANDBOX_CALL(kcmp, kTrace, "compare another process's resources"),
        MMSANDBOX_CALL(pidfd_open, kTrace, "open a handle on another process"),
        MMSANDBOX_CALL(pidfd_getfd, kTrace, "take a file from another process"),
        MMSANDBOX_CALL(pidfd_send_signal, kSignal, nullptr),
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
#ifdef SYS_iopl
        MMSANDBOX_CALL(iopl, kSystem, "access I/O ports"),
        MMSANDBOX_CALL(ioperm, kSystem, "access I/O ports"),
#endif
    };
    return calls;
}

// Calls denied to kernel code besides those: new processes and programs, sockets, files opened or changed
// by path (opens are let through when made on the kernel's behalf: see worker.cpp), signals and handlers.
inline const std::vector<Call>& kernel_calls() {
    static const std::vector<Call> calls = [] {
        std::vector<Call> c = {
            MMSANDBOX_CALL(clone, kProcess, nullptr),
            MMSANDBOX_CALL(clone3, kProcess, nullptr),
            MMSANDBOX_CALL(execve, kProgram, nullptr),
            MMSANDBOX_CALL(execveat, kProgram, nullptr),
            MMSANDBOX_CALL(socket, kSocket, nullptr),
            MMSANDBOX_CALL(socketpair, kSocket, nullptr),
            MMSANDBOX_CALL(kill, kSignal, nullptr),
            MMSANDBOX_CALL(tkill, kSignal, nullptr),
            MMSANDBOX_CALL(tgkill, kSignal, nullptr),
            MMSANDBOX_CALL(rt_sigqueueinfo, kSignal, nullptr),
            MMSANDBOX_CALL(rt_tgsigqueueinfo, kSignal, nullptr),
            MMSANDBOX_CALL(rt_sigaction, kHandler, nullptr),
            MMSANDBOX_CALL(prlimit64, kLimit, "raise its resource limits"),  // reading them is allowed
            MMSANDBOX_CALL(setrlimit, kSystem, "raise its resource limits"),
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
#ifdef SYS_fork  // the calls that newer architectures (aarch64) have only in their *at form
            MMSANDBOX_CALL(fork, kProcess, nullptr),
            MMSANDBOX_CALL(vfork, kProcess, nullptr),
            MMSANDBOX_CALL(open, kOpen, nullptr),
            MMSANDBOX_CALL(creat, kOpen, nullptr),
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
#endif
        };
        c.insert(c.end(), system_calls().begin(), system_calls().end());
        return c;
    }();
    return calls;
}
#undef MMSANDBOX_CALL
#undef MMSANDBOX_PATH

inline const Call* find_call(long nr, const std::vector<Call>& calls) {
    for (const Call& c : calls)
        if (c.nr == nr) return &c;
    return nullptr;
}

// The filter for kernel code (pid: the process's own id; magic: what an open made on the kernel's behalf
// carries in its sixth argument).  Every denial traps.
inline Filter kernel_filter(pid_t pid, uint32_t magic) {
    Filter f(SECCOMP_RET_TRAP);
    for (const Call& c : kernel_calls()) {
        if (c.kind == kSignal && c.nr != SYS_pidfd_send_signal)
            f.deny_unless(c.nr, 0, uint32_t(pid));  // abort() and raise() signal the process itself
        else if (c.kind == kHandler)
            f.deny_if(c.nr, 0, SIGSYS);  // the trap's own handler stays
        else if (c.kind == kLimit)
            f.deny_unless_null(c.nr, 2);  // prlimit64's new limits
        else if (c.kind == kOpen && c.nr != SYS_openat2)
            f.deny_unless(c.nr, 5, magic);
        else
            f.deny(c.nr);
    }
    return f;
}

// The filter for compilers, which run their own stages: they may start processes and programs, but open no
// socket other than a local one, and signal no process group but their own.  Denials fail with EPERM.
inline Filter compiler_filter() {
    Filter f(SECCOMP_RET_ERRNO | EPERM);
    f.deny_unless(SYS_socket, 0, AF_UNIX);
    f.deny_if(SYS_kill, 0, uint32_t(-1));  // every process the user may signal
    for (const Call& c : system_calls()) f.deny(c.nr);
    return f;
}

// ---- limits ----------------------------------------------------------------------------------------
inline void limit(int resource, rlim_t value) {
    rlimit r{value, value};
    setrlimit(resource, &r);
}

}  // namespace mmsandbox
