// mmemu-worker: the process that owns the emulator's buffers and knows the kernel modules, driven by
// worker.py over two pipes.  Each launch runs in a forked child, so that a crash, a hang or a sanitizer
// abort in a kernel ends only the child; buffers are MAP_SHARED, so the child's writes are the worker's.
// Every process a launch starts ends with it (end_launch), and its output comes back with its result,
// capped (Output).  Built twice from the same source: plain, and with -fsanitize=address.
//
// No code of a kernel file ever runs in the worker itself: a module is loaded (its static constructors
// run) only in a child, which enters the sandbox first (../../sandbox.h): Landlock lets it read the
// system's libraries, the module and the kernel's folder and write no file, resource limits bound its
// memory and CPU time, and a seccomp filter, an allow-list built once by the worker, traps every call that
// the runtime, the C library and AddressSanitizer do not need.  The trap's handler (on_blocked), with every
// other signal masked, writes what was tried to a pipe whose read end only the worker holds (the report pipe,
// at a fixed descriptor) and ends the child: the launch's report says it.
// A file is opened on the kernel's behalf by that handler, which tells Landlock's refusal (EACCES) apart
// and reports it as the attempt it was.  Loading a module is such a child too: it reads the kernel's
// parameter list and exits.  The kernel's code can rewrite the status page, so the worker believes it only
// as far as what it saw itself bears it out (believed): the child's exit status, a pipe the child
// writes once on entering the sandbox and closes before it loads the module, and the report pipe, whose
// report wins over the page and over a clean exit.
//
// Usage: mmemu-worker IN_FD OUT_FD SCRATCH MEMORY PROTECT READ...  MEMORY: bytes of address space a
// child may add (0: no limit); PROTECT: letters of the protections to apply, l (Landlock) and s
// (seccomp); READ: what a child may read besides the module and the kernel's folder.
//
// Frames, both ways: u32 length, then that many bytes.  A request starts with an op byte; a reply with 0 (ok),
// 1 (refused, followed by a message) or 2 (refused for want of memory, likewise).  All integers little-endian.
// A launch is one request: the buffers freed since the last, those it places, the launch, and the buffers it
// reads back (launch()).  wire
#include "mmemu.h"
#include "../../sandbox.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>  // ASAN_POISON_MEMORY_REGION does nothing without -fsanitize=address

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
// Kernel faults are reported by the child's own handlers; ASan stops at the first error.  An allocation past
// the sandbox's memory limit fails (malloc returns null) as it does in the plain build.
extern "C" const char* __asan_default_options() {
    return "detect_leaks=0:allow_user_segv_handler=1:halt_on_error=1:print_legend=0:color=never:"
           "allocator_may_return_null=1";
}
#endif

namespace {

int g_in, g_out;
size_t g_page;

// The sandbox every child enters (main's arguments).
std::string g_scratch;
uint64_t g_memory;
bool g_landlock, g_seccomp;
std::vector<std::string> g_reads;
uint32_t g_magic;  // what an open made by on_blocked carries, which the filter lets through
mmsandbox::Program g_filter;     // the kernel's filter, built once, with stand-ins for each child's own values
std::string g_filter_failed;     // why it could not be built ("" where it was)
mmsandbox::CallTable g_calls;    // the names of the calls a child may make, for the reports of those it traps

struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A refusal for want of memory: its reply says so (status 2), as the caller tells it apart.
struct NoMemory : Refused {
    using Refused::Refused;
};

class Reader {
public:
    explicit Reader(const std::string& s) : p_(s.data()), end_(s.data() + s.size()) {}
    template <class T>
    T get() {
        T v;
        copy(&v, sizeof v);
        return v;
    }
    std::string bytes(size_t n) {
        std::string out(n, '\0');
        copy(out.data(), n);
        return out;
    }
    void copy(void* dst, size_t n) {
        if (left() < n) throw Refused("truncated request");
        memcpy(dst, p_, n);
        p_ += n;
    }
    size_t left() const { return size_t(end_ - p_); }

private:
    const char *p_, *end_;
};

class Writer {
public:
    template <class T>
    Writer& put(T v) {
        out.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Writer& str(const std::string& s) {
        put(uint32_t(s.size()));
        out += s;
        return *this;
    }
    std::string out = std::string(1, '\0');  // the ok byte
};

bool read_all(int fd, void* buf, size_t n) {
    for (char* p = static_cast<char*>(buf); n;) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= size_t(r);
    }
    return true;
}

void write_all(int fd, const void* buf, size_t n) {
    for (const char* p = static_cast<const char*>(buf); n;) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) _exit(1);  // the client is gone
        p += r;
        n -= size_t(r);
    }
}

void send(const std::string& payload) {
    uint32_t n = uint32_t(payload.size());
    write_all(g_out, &n, sizeof n);
    write_all(g_out, payload.data(), n);
}

// ---- buffers: [guard page][slack][payload][slack][guard page] --------------------------------------
// The payload starts 256-byte aligned, as cudaMalloc's allocations do (kernels may rely on it: vector
// loads need 16 bytes, WMMA 32), and ends as close to the trailing guard page as that allows, less than
// 256 bytes before it, so that running off the end soon faults; the slack is filled with 0xff and, under
// AddressSanitizer, everything but the payload is poisoned, which makes every out-of-bounds byte an error.
struct Buffer {
    char* map;
    size_t map_size;
    char* data;
    size_t nbytes;
};
std::map<uint32_t, Buffer> g_buffers;
uint32_t g_next_buffer = 1;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

constexpr size_t kAlignment = 256;

// A new buffer holding the request's next bytes (a u64 count, then the bytes): its id.
uint32_t place(Reader& in) {
    size_t nbytes = in.get<uint64_t>();
    size_t body = round_up(std::max<size_t>(round_up(nbytes, kAlignment), 1), g_page);
    size_t map_size = body + 2 * g_page;
    void* p = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw NoMemory("cannot map " + std::to_string(nbytes) + " bytes: " + strerror(errno));
    Buffer b{static_cast<char*>(p), map_size, nullptr, nbytes};
    mprotect(b.map, g_page, PROT_NONE);
    mprotect(b.map + g_page + body, g_page, PROT_NONE);
    char *lo = b.map + g_page, *hi = lo + body;
    b.data = hi - round_up(nbytes, kAlignment);
    in.copy(b.data, nbytes);
    memset(lo, 0xff, size_t(b.data - lo));
    memset(b.data + nbytes, 0xff, size_t(hi - b.data - nbytes));
    // the guard pages too: AddressSanitizer must see an overrun before the page fault does
    ASAN_POISON_MEMORY_REGION(b.map, size_t(b.data - b.map));
    ASAN_POISON_MEMORY_REGION(b.data + nbytes, size_t(b.map + map_size - b.data - nbytes));
    uint32_t id = g_next_buffer++;
    g_buffers[id] = b;
    return id;
}

Buffer& buffer(uint32_t id) {
    auto it = g_buffers.find(id);
    if (it == g_buffers.end()) throw Refused("no buffer " + std::to_string(id));
    return it->second;
}

// The address too: a table of pointers into this buffer holds it (backend.py, base.Pointers).
Writer& placed(Writer& w, uint32_t id) {
    return w.put(id).put(uint64_t(reinterpret_cast<uintptr_t>(buffer(id).data)));
}

std::string alloc(Reader& in) {
    Writer w;
    return placed(w, place(in)).out;
}

std::string read_buffer(Reader& in) {
    const Buffer& b = buffer(in.get<uint32_t>());
    Writer w;
    w.out.append(b.data, b.nbytes);
    return w.out;
}

void free_one(uint32_t id) {
    const Buffer& b = buffer(id);
    ASAN_UNPOISON_MEMORY_REGION(b.map, b.map_size);
    munmap(b.map, b.map_size);
    g_buffers.erase(id);
}

// Buffers freed: a u32 count, then their ids.
void free_buffers(Reader& in) {
    for (uint32_t n = in.get<uint32_t>(); n; --n) free_one(in.get<uint32_t>());
}

std::string free_request(Reader& in) {
    free_buffers(in);
    return Writer().out;
}

// ---- children: the sandbox they enter, and what a trapped call was ---------------------------------
mmemu_status* g_status;  // one shared page, reused by every child

// A path a kernel passed, for the report: at most 200 characters, control characters as '?'.
std::string shown(uint64_t address) {
    const char* p = reinterpret_cast<const char*>(address);
    if (!p) return "(null)";
    std::string out;
    for (size_t i = 0; p[i] && i < 200; ++i) out += (unsigned char)p[i] < 32 ? '?' : p[i];
    return out;
}

std::string signal_target(long pid) {
    if (pid == getppid()) return "the emulator's worker (pid " + std::to_string(pid) + ")";
    if (pid == 0) return "its process group";
    if (pid == -1) return "every process it may signal";
    return "another process (pid " + std::to_string(pid) + ")";
}

std::string signal_name(long signo) {
#if __GLIBC_PREREQ(2, 32)
    if (const char* name = sigabbrev_np(int(signo))) return std::string("SIG") + name;
#endif
    return "signal " + std::to_string(signo);
}

// What a trapped call was an attempt to do, "the kernel tried to <this>", from what the table knows of it (null:
// nothing), its number and its arguments.
std::string attempt(const mmsandbox::Trapped* t, long nr, const uint64_t* a) {
    using namespace mmsandbox;
    if (!t) return "make the system call number " + std::to_string(nr) + ", which this host's libseccomp does not name";
    if (t->abi) return "make the system call " + t->name + " through the " + t->abi + " interface";
    if (!t->words) return "make the system call " + t->name;
    const std::string& name = t->name;
    switch (t->words->kind) {
        case kProcess: {
            uint64_t flags = name == "clone3" ? (a[0] ? *reinterpret_cast<const uint64_t*>(a[0]) : 0)
                                              : name == "clone" ? a[0] : 0;
            return flags & CLONE_THREAD ? "start a thread" : "start a process";
        }
        case kProgram: return "run a program (" + shown(name == "execve" ? a[0] : a[1]) + ")";
        case kSocket:
            if (name == "socketpair") return "open a pair of local sockets";
            if (a[0] == AF_INET || a[0] == AF_INET6) return "open a network socket";
            if (a[0] == AF_UNIX) return "open a local socket";
            return "open a socket (address family " + std::to_string(a[0]) + ")";
        case kSignal: {
            long signo = name == "tgkill" || name == "rt_tgsigqueueinfo" ? long(a[2]) : long(a[1]);
            return "send " + signal_name(signo) + " to " +
                   (name == "pidfd_send_signal" ? std::string("another process") : signal_target(int(a[0])));
        }
        case kHandler: return "take over the sandbox's signal (SIGSYS)";
        case kOpen: return "open a file by a call the sandbox forbids (" + shown(a[1]) + ")";  // openat2
        case kChange: return std::string(t->words->words) + " " + shown(a[t->words->path]);
        case kTrace:
        case kSystem:
        case kLimit: return t->words->words;
    }
    return "make the system call " + name;
}

// A trapped call's arguments 0..5, and its result, in the interrupted context's registers.
#if defined(__x86_64__)
greg_t& reg(ucontext_t* uc, int i) {
    static const int order[] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9, REG_RAX};
    return uc->uc_mcontext.gregs[order[i]];
}
constexpr int kResult = 6;
#elif defined(__aarch64__)
auto& reg(ucontext_t* uc, int i) { return uc->uc_mcontext.regs[i]; }
constexpr int kResult = 0;
#endif

// Every signal but the trap's own: what the trap's handler runs with.  SIGSYS stays open because the handler's
// own calls may trap again (AddressSanitizer reads /proc/self/maps on the signal stack, an open made there), and
// its handler is the sandbox's, which the filter lets no kernel replace.
sigset_t trap_mask() {
    sigset_t mask;
    sigfillset(&mask);
    sigdelset(&mask, SIGSYS);
    return mask;
}

// Where a child's trap writes its report: a pipe whose read end only the worker holds.  A number fixed in the
// code, since the kernel's code can rewrite any variable; it cannot make a pipe (pipe, dup and the like are not
// on its allow-list), so a pipe found there is the worker's.
constexpr int kReportFd = 99;

// A report on the report pipe: the call's number, then what was tried, written at once (atomic up to PIPE_BUF).
constexpr size_t kReportMax = PIPE_BUF;

// Ends a sandboxed child, reporting that the kernel tried `what` (by system call nr): on the report pipe where
// it is still there, else on the status page.  Every other signal is masked first (trap_mask), so that a fault
// from here on ends the child instead of reaching a handler of the kernel's, which could jump back into its code.
[[noreturn]] void blocked(const std::string& what, long nr) {
    sigset_t mask = trap_mask();
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    char report[kReportMax];
    int32_t code = int32_t(nr);
    size_t n = sizeof code + std::min(what.size(), kReportMax - sizeof code);
    memcpy(report, &code, sizeof code);
    memcpy(report + sizeof code, what.data(), n - sizeof code);
    struct stat pipe_stat;
    bool sent = fstat(kReportFd, &pipe_stat) == 0 && S_ISFIFO(pipe_stat.st_mode) &&
                write(kReportFd, report, n) == ssize_t(n);
    // The kernel closed the pipe: the page, which it may have made read-only, believed only with the exit below.
    if (!sent && mprotect(g_status, round_up(sizeof *g_status, g_page), PROT_READ | PROT_WRITE) == 0) {
        snprintf(g_status->message, sizeof g_status->message, "%s", what.c_str());
        g_status->code = int(nr);
        g_status->state = MMEMU_BLOCKED;
    }
    _exit(mmemu_exit_status(MMEMU_BLOCKED));
}

// The seccomp trap.  An open is made here, marked so that the filter lets it through; Landlock decides,
// and only its refusal is an attempt to report.  Every other trapped call is one.
void on_blocked(int, siginfo_t* info, void* context) {
    auto* uc = static_cast<ucontext_t*>(context);
    uint64_t a[6];
    for (int i = 0; i < 6; ++i) a[i] = uint64_t(reg(uc, i));
    long nr = info->si_syscall;
    // x32's and i386's numbers mean other calls: only this architecture's own open is made here
    bool native = info->si_arch == mmsandbox::kArch && !(nr & mmsandbox::kX32Bit);
    std::string what;
    bool open_call = native && nr == SYS_openat;
    long dirfd = AT_FDCWD;
    uint64_t path = a[1], flags = a[2], mode = a[3];
#ifdef SYS_open
    if (native && (nr == SYS_open || nr == SYS_creat)) {
        open_call = true;
        path = a[0];
        flags = nr == SYS_creat ? O_CREAT | O_WRONLY | O_TRUNC : a[1];
        mode = nr == SYS_creat ? a[1] : a[2];
    }
#endif
    if (open_call) {
        if (nr == SYS_openat) dirfd = long(int(a[0]));
        int interrupted_errno = errno;  // the interrupted code's, which the call made here must not change
        long fd = syscall(SYS_openat, dirfd, path, flags, mode, 0, uint64_t(g_magic));  // all 64 bits compared
        if (fd >= 0 || errno != EACCES) {
            reg(uc, kResult) = fd >= 0 ? fd : -errno;
            errno = interrupted_errno;
            return;
        }
        bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
        what = std::string(writes ? "write " : "read ") + shown(path);
    } else {
        what = attempt(g_calls.find(info->si_arch, nr), nr, a);
    }
    blocked(what, nr);
}

// The first field of /proc/self/statm: the address space mapped now, in pages.
uint64_t mapped_pages() {
    FILE* f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return pages;
}

// Every file mapped into this process (its libraries): a child may read them (AddressSanitizer's symbolizer
// does), wherever the toolchain keeps them.
std::vector<std::string> mapped_files() {
    std::vector<std::string> out;
    FILE* f = fopen("/proc/self/maps", "r");
    if (!f) return out;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char* path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        if (std::find(out.begin(), out.end(), path) == out.end()) out.emplace_back(path);
    }
    fclose(f);
    return out;
}

// Enters the sandbox, in a child, before any code of the kernel's file runs (its module is loaded after
// this); a protection that cannot be applied ends the child, saying why.
void enter_sandbox(const std::string& module, const std::string& folder, int timeout_ms) {
    close(g_in);
    close(g_out);
    using namespace mmsandbox;
    limit(RLIMIT_CORE, 0);
    limit(RLIMIT_FSIZE, 64 << 20);  // what it writes to its stdout and stderr
    rlim_t cpu = rlim_t(timeout_ms / 1000 + 2);
    rlimit r{cpu, cpu + 1};  // the soft limit's SIGXCPU says why the child ended
    setrlimit(RLIMIT_CPU, &r);
    // What is mapped already counts (AddressSanitizer's shadow: terabytes, reserved in the worker)
    if (g_memory) limit(RLIMIT_AS, rlim_t(mapped_pages() * g_page + g_memory));
    auto refuse = [](const std::string& why) {
        snprintf(g_status->message, sizeof g_status->message, "cannot enter the sandbox: %s", why.c_str());
        g_status->state = MMEMU_BLOCKED;
        g_status->code = -1;
        _exit(4);
    };
    if (g_landlock) {
        std::vector<std::string> reads = g_reads;
        std::vector<std::string> mapped = mapped_files();
        reads.insert(reads.end(), mapped.begin(), mapped.end());
        reads.push_back(module);
        reads.push_back(folder);
        // Of its own /proc entries, those the sanitizers' reports read: its memory map, command line and
        // environment (the worker's: mmcheck gives it a clean one).  Nothing else of /proc.
        reads.insert(reads.end(), {"/proc/self/maps", "/proc/self/cmdline", "/proc/self/environ"});
        // No folder to write: a kernel writes no file (the zoo's and the tutorials' do not), so every write is
        // an attempt to report, and nothing a launch writes takes disk or memory, or is left for the next.
        std::string failed = restrict_files(reads, {"/dev/null"}, true);
        if (!failed.empty()) refuse(failed);
    }
    if (g_seccomp) {
        static char altstack[64 * 1024];  // the trap may come on a fiber's small stack
        stack_t ss{};
        ss.ss_sp = altstack;
        ss.ss_size = sizeof altstack;
        sigaltstack(&ss, nullptr);
        struct sigaction sa{};
        sa.sa_sigaction = on_blocked;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sa.sa_mask = trap_mask();  // a fault in the handler ends the child: no handler of the kernel's may catch it
        sigaction(SIGSYS, &sa, nullptr);
        if (!g_filter_failed.empty()) refuse(g_filter_failed);
        if (getrandom(&g_magic, sizeof g_magic, 0) != sizeof g_magic) refuse("no random numbers");
        std::string failed = install(own_filter(g_filter, uint32_t(getpid()), g_magic));
        if (!failed.empty()) refuse(failed);
    }
}

// The module's kernel, loaded in a sandboxed child; ends the child, saying why, where it cannot be.
const mmemu_kernel* load_module(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* why = handle ? nullptr : dlerror();
    auto info = handle ? reinterpret_cast<const mmemu_kernel* (*)()>(dlsym(handle, "mmemu_kernel_info")) : nullptr;
    const mmemu_kernel* k = info ? info() : nullptr;
    if (handle && !k) why = "the module exports no mmemu_kernel_info";
    if (k && k->abi != MMEMU_ABI) why = "the module was built for another emulator ABI";
    if (why) {
        snprintf(g_status->message, sizeof g_status->message, "%s", why);
        g_status->state = MMEMU_DONE;
        g_status->code = -1;
        _exit(mmemu_exit_status(MMEMU_DONE));
    }
    return k;
}

// What a child writes: the first kOutputCap bytes of its stdout (a kernel's printf), the last kErrorCap of its
// stderr (a sanitizer's report comes last), and how many bytes stdout had.  Read while the child runs, so that
// a kernel that prints without end neither blocks on a full pipe nor fills memory.
constexpr size_t kOutputCap = 64 * 1024, kErrorCap = 16 * 1024;

struct Output {
    std::string out, err;
    uint64_t out_total = 0;

    // Reads what `fd` holds now: the bytes read, 0 at end-of-file, -1 where there are none now.
    ssize_t take(int fd, bool is_out) {
        char chunk[65536];
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r <= 0) return r < 0 ? -1 : 0;
        if (is_out) {
            out_total += uint64_t(r);
            if (out.size() < kOutputCap) out.append(chunk, std::min(size_t(r), kOutputCap - out.size()));
        } else {
            err.append(chunk, size_t(r));
            if (err.size() > 2 * kErrorCap) err.erase(0, err.size() - kErrorCap);
        }
        return r;
    }
};

// The processes a child left behind (where the sandbox could not stop it starting them): with the worker their
// subreaper, orphans come to it, even those that left the child's process group.  Killed and reaped until none
// is left.
void end_descendants() {
    for (int round = 0; round < 100; ++round) {
        std::vector<pid_t> children;
        if (DIR* tasks = opendir("/proc/self/task")) {
            while (dirent* t = readdir(tasks)) {
                if (t->d_name[0] == '.') continue;
                std::string path = std::string("/proc/self/task/") + t->d_name + "/children";
                if (FILE* f = fopen(path.c_str(), "r")) {
                    for (int pid; fscanf(f, "%d", &pid) == 1;) children.push_back(pid);
                    fclose(f);
                }
            }
            closedir(tasks);
        }
        if (children.empty()) return;
        for (pid_t c : children) kill(c, SIGKILL);
        for (pid_t c : children) waitpid(c, nullptr, 0);
    }
}

// Ends a child's processes: its group, then whatever escaped it.
void end_child(pid_t pid) {
    kill(-pid, SIGKILL);
    end_descendants();
}

// A child stopped for sleeping rather than computing: after this many times its limit, in wall time.
constexpr long kSleepingTimes = 4;

long milliseconds(clockid_t clock, const timespec& since = {}) {
    timespec now;
    if (clock_gettime(clock, &now) != 0) return -1;
    return (now.tv_sec - since.tv_sec) * 1000 + (now.tv_nsec - since.tv_nsec) / 1000000;
}

// Runs until the child `pid` exits (`exited` becomes readable: its pidfd, or a pipe that only it holds),
// reading its output meanwhile; false once it has run timeout_ms of CPU time (its own clock, so that a busy
// machine never makes a kernel hang; the child runs one thread), or slept kSleepingTimes as long.  A request pipe
// that becomes readable means the client has gone (it sends nothing while it waits for a child): the child is
// ended, and the worker.
bool wait_exit(pid_t pid, int exited, int out_fd, int err_fd, int timeout_ms, Output& output) {
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    clockid_t cpu;
    bool counted = clock_getcpuclockid(pid, &cpu) == 0;
    pollfd fds[4] = {{exited, POLLIN, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {g_in, POLLIN, 0}};
    for (;;) {
        long elapsed = milliseconds(CLOCK_MONOTONIC, start);
        long ran = counted ? milliseconds(cpu) : -1;
        if (ran < 0) ran = elapsed;  // no clock of its own (it is exiting): the wall's
        long left = std::min(timeout_ms - ran, kSleepingTimes * timeout_ms - elapsed);
        if (left <= 0) return false;
        // Its CPU time grows no faster than the wall's: waiting what is left cannot overshoot the limit.
        int r = poll(fds, 4, int(left));
        if (r < 0 && errno != EINTR) return true;  // cannot wait: let waitpid decide
        if (r <= 0) continue;
        if (fds[3].revents) {
            end_child(pid);
            _exit(0);
        }
        for (int i = 1; i < 3; ++i)
            if (fds[i].revents && output.take(fds[i].fd, i == 1) == 0) fds[i].fd = -1;  // poll skips it from now
        if (fds[0].revents) return true;
    }
}

// What is left in a pipe whose writers are gone (or stuck: it is not waited for).
void drain(int fd, bool is_out, Output& output) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    while (output.take(fd, is_out) > 0) {
    }
}

// What the report pipe holds once its writers are gone: a report, and whatever else was written there, up to
// a little past the longest report (more is not the trap's).
std::string take_report(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::string report;
    char chunk[kReportMax + 1];
    for (ssize_t r; report.size() <= kReportMax && (r = read(fd, chunk, sizeof chunk)) > 0;)
        report.append(chunk, size_t(r));
    return report;
}

struct Ended {
    bool timed_out;
    bool entered;  // the child said it had entered the sandbox, before any code of the kernel's file ran
    int wait_status;
    Output output;
    std::string report;  // what the report pipe held ("": the trap wrote none)
};

struct Module {
    std::string path, folder;  // the compiled module, and the kernel file's folder
    std::vector<mmemu_param> params;  // its kernel's parameters, as the loading child reported them
};

// Runs `body` (which never returns) in a forked child, sandboxed for module `m`, at most timeout_ms: in a
// process group of its own, ended with everything it started, its stdout and stderr read as it runs.
template <class Body>
Ended run_child(const Module& m, int timeout_ms, Body body) {
    memset(g_status, 0, sizeof *g_status);
    // The child's stdout and stderr, a pipe that tells of its exit where there is no pidfd (Linux < 5.3), one
    // that it writes once, having entered the sandbox, and closes before the kernel's file is loaded, and the
    // report pipe of its trap.
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, exitp[2] = {-1, -1}, entry[2] = {-1, -1}, report[2] = {-1, -1};
    if (pipe(outp) != 0 || pipe(errp) != 0 || pipe(exitp) != 0 || pipe(entry) != 0 || pipe(report) != 0) {
        std::string why = strerror(errno);
        for (int fd : {outp[0], outp[1], errp[0], errp[1], exitp[0], exitp[1], entry[0], entry[1], report[0],
                       report[1]})
            if (fd >= 0) close(fd);
        throw Refused("cannot start a child: " + why);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        // A process group of its own, killed as one when the child ends; dead with the worker, should that go
        // first.  (enter_sandbox closes the worker's pipes, lest the child hold the client's reply pipe open.)
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        if (dup2(report[1], kReportFd) != kReportFd) _exit(1);
        for (int fd : {outp[0], outp[1], errp[0], errp[1], exitp[0], entry[0], report[0], report[1]})
            if (fd != kReportFd) close(fd);
        enter_sandbox(m.path, m.folder, timeout_ms);
        write_all(entry[1], "E", 1);
        close(entry[1]);
        body();
    }
    for (int fd : {outp[1], errp[1], exitp[1], entry[1], report[1]}) close(fd);
    Ended e{false, false, 0, {}, {}};
    if (pid > 0) {
        setpgid(pid, pid);  // as the child does, whichever runs first
        int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
        e.timed_out = !wait_exit(pid, pidfd >= 0 ? pidfd : exitp[0], outp[0], errp[0], timeout_ms, e.output);
        if (pidfd >= 0) close(pidfd);
        if (e.timed_out) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        waitpid(pid, &e.wait_status, 0);
        end_child(pid);
        drain(outp[0], true, e.output);
        drain(errp[0], false, e.output);
        char said;
        e.entered = read(entry[0], &said, 1) == 1;  // its writers are gone: end-of-file where it never wrote
        e.report = take_report(report[0]);
    }
    for (int fd : {outp[0], errp[0], exitp[0], entry[0], report[0]}) close(fd);
    if (pid < 0) throw Refused(std::string("fork failed: ") + strerror(errno));
    if (e.output.err.size() > kErrorCap) e.output.err.erase(0, e.output.err.size() - kErrorCap);
    return e;
}

// ---- a child's report: the kernel's code ran in the child and may have rewritten it --------------------
// How a report not to be believed names the state it gives.
std::string state_name(int state) {
    static const char* const names[] = {"the launch still ran", "it finished", "a fault", "a sanitizer's report",
                                        "barrier misuse", "__trap()", "a timeout", "a violated precondition",
                                        "an unsupported construct", "a blocked system call"};
    if (state >= MMEMU_RUNNING && state <= MMEMU_BLOCKED) return names[state];
    return "state " + std::to_string(state);
}

// Why the report `s` of a child that ended as `e` is not to be believed; "" where it is.  Until the child said it
// had entered the sandbox no code of the kernel's file had run, so its report is the sandbox's own; after, a
// report that the sandbox could not be entered is forged, and so is one that contradicts how the child ended.
// A child that loads a module (`loading`) runs no launch, so it reports no launch's end.
std::string forged(const mmemu_status& s, const Ended& e, bool loading) {
    if (!e.entered) return "";
    bool loads = s.state == MMEMU_RUNNING || s.state == MMEMU_DONE || s.state == MMEMU_BLOCKED;
    if (s.state < MMEMU_RUNNING || s.state > MMEMU_BLOCKED || s.state == MMEMU_TIMEOUT || (loading && !loads))
        return "it says " + state_name(s.state) + ", which no " + (loading ? "loading " : "") + "child reports";
    if (s.state == MMEMU_BLOCKED && s.code < 0)
        return "it says the sandbox could not be entered, after the child had entered it";
    int status = mmemu_exit_status(s.state);
    if (status >= 0 && WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) != status)
        return "it says " + state_name(s.state) + ", but the child exited with status " +
               std::to_string(WEXITSTATUS(e.wait_status)) + ", not " + std::to_string(status);
    if (s.state == MMEMU_FAULT && (s.signo < 1 || s.signo > 64))
        return "it says signal " + std::to_string(s.signo) + ", which is none";
    return "";
}

// A report that a child's own was not to be believed, saying why.
mmemu_status forged_report(const std::string& why) {
    mmemu_status f{};
    f.state = MMEMU_FORGED;
    snprintf(f.message, sizeof f.message, "%s", why.c_str());
    return f;
}

// A copy of the page (the child is gone), its texts ended within it.
mmemu_status page() {
    mmemu_status s = *g_status;
    s.message[sizeof s.message - 1] = s.warnings[sizeof s.warnings - 1] = '\0';
    return s;
}

// The report a child's trap wrote to the report pipe (`report`), with where the page says the launch was.  The
// kernel's code can write to that pipe too: what the trap never writes (a negative call number, control
// characters, more than one report) is forged, so that at worst it makes the kernel fail.
mmemu_status trapped(const std::string& report) {
    int32_t nr = -1;
    if (report.size() > sizeof nr && report.size() <= kReportMax) memcpy(&nr, report.data(), sizeof nr);
    std::string what = report.substr(std::min(report.size(), sizeof nr));
    bool printable = std::none_of(what.begin(), what.end(), [](char c) { return (unsigned char)c < 32 || c == 127; });
    if (nr < 0 || what.empty() || !printable)
        return forged_report("its report pipe holds what the sandbox's trap never writes");
    mmemu_status s = page();
    s.state = MMEMU_BLOCKED;
    s.code = nr;
    snprintf(s.message, sizeof s.message, "%s", what.c_str());
    return s;
}

// The report of the child that ended as `e`, as the worker believes it: its trap's, where it wrote one (the trap
// ends the child, whatever the page or the exit says), else the page's; how a child killed by a signal ended is
// its wait status's to say.
mmemu_status believed(const Ended& e, bool loading) {
    if (!e.report.empty()) return trapped(e.report);
    mmemu_status s = page();
    if (WIFSIGNALED(e.wait_status)) s.state = MMEMU_RUNNING;
    std::string why = forged(s, e, loading);
    return why.empty() ? s : forged_report(why);
}

// ---- kernel modules: loaded in a child, which reports the kernel's parameters ----------------------
std::vector<Module> g_modules;

// Whether `p` describes a parameter as shim.h's param_of does (the module's own code wrote it).
bool well_formed(const mmemu_param& p) {
    if (p.kind == 'p') return p.elem_kind && strchr("vpfius", p.elem_kind);
    return p.kind && strchr("fius", p.kind) && p.elem_kind == 0;
}

// Why the parameters a loading child reported (`n` of them, in the page's message) are not to be believed; "".
std::string malformed_params(const mmemu_status& s, int n) {
    if (n < 0 || size_t(n) > sizeof s.message / sizeof(mmemu_param))
        return "it gives " + std::to_string(n) + " parameters, more than a report holds";
    const auto* params = reinterpret_cast<const mmemu_param*>(s.message);
    for (int i = 0; i < n; ++i)
        if (!well_formed(params[i])) return "parameter " + std::to_string(i + 1) + " has no kind a C++ type has";
    return "";
}

std::string load(Reader& in) {
    int timeout_ms = int(in.get<uint32_t>());
    Module m;
    m.path = in.bytes(in.get<uint32_t>());
    m.folder = in.bytes(in.left());
    Ended e = run_child(m, timeout_ms, [&] {
        const mmemu_kernel* k = load_module(m.path);
        size_t n = std::min<size_t>(k->nparams, sizeof g_status->message / sizeof(mmemu_param));
        memcpy(g_status->message, k->params, n * sizeof(mmemu_param));
        g_status->code = int(n);
        g_status->state = MMEMU_DONE;
        _exit(mmemu_exit_status(MMEMU_DONE));
    });
    mmemu_status s = believed(e, true);
    std::string malformed = s.state == MMEMU_DONE && s.code >= 0 ? malformed_params(s, s.code) : "";
    if (!malformed.empty()) s = forged_report(malformed);
    Writer w;
    if (s.state == MMEMU_DONE && s.code >= 0 && !e.timed_out) {
        const auto* params = reinterpret_cast<const mmemu_param*>(s.message);
        m.params.assign(params, params + s.code);
        g_modules.push_back(m);
        w.put(uint8_t(1)).put(uint32_t(g_modules.size() - 1)).put(uint32_t(s.code));  // loaded
        w.out.append(s.message, size_t(s.code) * sizeof(mmemu_param));
        return w.out;
    }
    // Not loaded: the state says why (MMEMU_DONE with code -1: dlopen's message), with the child's end.
    w.put(uint8_t(0)).put(uint8_t(e.timed_out ? MMEMU_TIMEOUT : s.state)).put(uint8_t(e.entered));
    w.put(int32_t(s.code)).put(int32_t(e.wait_status));
    w.str(std::string(s.message, strnlen(s.message, sizeof s.message)));
    w.str(e.output.err);
    return w.out;
}

// ---- launches -----------------------------------------------------------------------------------------
// A buffer as a launch names it: tag 0, one the worker held before (its id); tag 3, one the launch placed (its
// position among them).
uint32_t named(uint8_t tag, Reader& in, const std::vector<uint32_t>& fresh) {
    uint32_t key = in.get<uint32_t>();
    if (tag == 0) return key;
    if (key >= fresh.size()) throw Refused("no new buffer " + std::to_string(key));
    return fresh[key];
}

std::string launch_placed(Reader& in, const std::vector<uint32_t>& fresh) {
    uint32_t kernel = in.get<uint32_t>();
    if (kernel >= g_modules.size()) throw Refused("no kernel " + std::to_string(kernel));
    const Module& module = g_modules[kernel];
    mmemu_launch L{};
    L.grid = in.get<mmemu_dim3>();
    L.block = in.get<mmemu_dim3>();
    L.cluster = in.get<mmemu_dim3>();
    L.smem = in.get<uint64_t>();
    L.schedule = in.get<uint8_t>();
    L.fibers = in.get<uint8_t>();
    L.strict = in.get<uint8_t>();
    L.explicit_cluster = in.get<uint8_t>();
    const mmemu_dim3 &g = L.grid, &c = L.cluster;
    if (!c.x || !c.y || !c.z || g.x % c.x || g.y % c.y || g.z % c.z)
        throw Refused("the grid is not a whole number of clusters");
    L.seed = in.get<uint64_t>();
    int timeout_ms = int(in.get<uint32_t>());
    uint32_t nargs = in.get<uint32_t>();
    std::vector<uint64_t> slots(nargs);
    std::vector<void*> args(nargs);
    std::vector<std::string> values;  // parameters of more than 8 bytes: each in a string of its own, aligned in it
    values.reserve(nargs);
    for (uint32_t i = 0; i < nargs; ++i) {
        args[i] = &slots[i];
        uint8_t tag = in.get<uint8_t>();
        if (tag == 0 || tag == 3) {  // a buffer (named), byte offset of the kernel's pointer
            const Buffer& b = buffer(named(tag, in, fresh));
            slots[i] = reinterpret_cast<uint64_t>(b.data + in.get<uint64_t>());
        } else if (tag == 1) {  // a scalar: its bytes, zero-padded to 8
            slots[i] = in.get<uint64_t>();
        } else {  // a parameter of any size (a CUtensorMap): its alignment and size, which the module's must be
            uint32_t align = in.get<uint32_t>(), size = in.get<uint32_t>();
            const mmemu_param* p = i < module.params.size() ? &module.params[i] : nullptr;
            if (!p || p->kind != 's' || p->size != size || p->align != align || align == 0 || (align & (align - 1)))
                throw Refused("parameter " + std::to_string(i + 1) + ": " + std::to_string(size) + " bytes aligned to " +
                              std::to_string(align) + ", which is not the kernel's parameter");
            values.emplace_back(size + align, '\0');
            char* at = values.back().data();
            at += (align - reinterpret_cast<uintptr_t>(at) % align) % align;
            in.copy(at, size);
            args[i] = at;
        }
    }
    L.args = args.data();
    std::vector<uint32_t> reads(in.get<uint32_t>());
    for (uint32_t& id : reads) {
        uint8_t tag = in.get<uint8_t>();
        id = named(tag, in, fresh);
        buffer(id);  // refused now, rather than after the launch
    }

    Ended e = run_child(module, timeout_ms, [&] {
        L.kernel = load_module(module.path);
        mmemu_child_run(&L, g_status);
    });

    const mmemu_status s = believed(e, false);
    int32_t where_buffer = -1;  // the buffer whose mapping holds the faulting address, if any
    int64_t where_offset = 0;   // its byte offset from the buffer's first element
    for (const auto& [id, b] : g_buffers) {
        if (s.addr >= uint64_t(b.map) && s.addr < uint64_t(b.map + b.map_size)) {
            where_buffer = int32_t(id);
            where_offset = int64_t(s.addr - uint64_t(b.data));
        }
    }
    Writer w;
    w.put(uint32_t(fresh.size()));
    for (uint32_t id : fresh) placed(w, id);
    w.put(uint8_t(e.timed_out ? MMEMU_TIMEOUT : s.state)).put(uint8_t(e.entered)).put(s.block).put(s.thread);
    w.put(int32_t(s.in_kernel)).put(int32_t(s.signo)).put(int32_t(s.code)).put(int32_t(s.is_write));
    w.put(uint64_t(s.addr)).put(uint32_t(s.access_size)).put(int32_t(e.wait_status));
    w.put(where_buffer).put(where_offset);
    w.str(std::string(s.message, strnlen(s.message, sizeof s.message)));
    w.str(std::string(s.warnings, strnlen(s.warnings, sizeof s.warnings)));
    w.str(e.output.err);
    w.str(e.output.out).put(e.output.out_total);
    w.put(uint32_t(reads.size()));
    for (uint32_t id : reads) {
        const Buffer& b = buffer(id);
        w.put(uint64_t(b.nbytes)).out.append(b.data, b.nbytes);
    }
    return w.out;
}

// The request: the buffers freed (a count, ids), those placed (a count, each as `place` takes it), the kernel, the
// launch's dimensions and settings, its arguments, and the buffers read back after it (a count, each a tag and a
// u32).  The reply: each placed buffer's id and address, the launch's result, and each buffer read back (a u64
// count, then its bytes).  Placed buffers are freed again where the request is refused.
std::string launch(Reader& in) {
    free_buffers(in);
    std::vector<uint32_t> fresh;
    try {
        for (uint32_t n = in.get<uint32_t>(); n; --n) fresh.push_back(place(in));
        return launch_placed(in, fresh);
    } catch (const Refused&) {
        for (uint32_t id : fresh) free_one(id);
        throw;
    }
}

std::string dispatch(const std::string& request) {
    Reader in(request);
    switch (in.get<char>()) {
        case 'A': return alloc(in);
        case 'R': return read_buffer(in);
        case 'F': return free_request(in);
        case 'L': return load(in);
        case 'X': return launch(in);
        default: throw Refused("unknown request");
    }
}

}  // namespace

// The C library's ways to run a program, and to start a thread, block every signal before they make the
// call, which turns the trap into a plain kill that says nothing; so the worker defines them, and a kernel's
// call is reported as what it was.  A module's references resolve to the executable's definitions first
// (the worker is linked with -rdynamic), and the worker itself never calls these.
extern "C" int system(const char* command) { blocked("run a program (" + shown(uint64_t(command)) + ")", SYS_execve); }

extern "C" FILE* popen(const char* command, const char*) {
    blocked("run a program (" + shown(uint64_t(command)) + ")", SYS_execve);
}

extern "C" int posix_spawn(pid_t*, const char* path, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                           char* const*, char* const*) {
    blocked("run a program (" + shown(uint64_t(path)) + ")", SYS_execve);
}

extern "C" int posix_spawnp(pid_t*, const char* file, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                            char* const*, char* const*) {
    blocked("run a program (" + shown(uint64_t(file)) + ")", SYS_execve);
}

extern "C" int pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*) {
    blocked("start a thread", SYS_clone);
}

// A timer that calls back on a thread (SIGEV_THREAD) starts one; any other is the C library's, which the filter
// judges.
extern "C" int timer_create(clockid_t clock, sigevent* event, timer_t* timer) {
    if (event && event->sigev_notify == SIGEV_THREAD) blocked("start a thread", SYS_clone);
    auto library = reinterpret_cast<int (*)(clockid_t, sigevent*, timer_t*)>(dlsym(RTLD_NEXT, "timer_create"));
    return library(clock, event, timer);
}

int main(int argc, char** argv) {
    if (argc < 6) return 2;
    g_in = atoi(argv[1]);
    g_out = atoi(argv[2]);
    g_scratch = argv[3];
    g_memory = strtoull(argv[4], nullptr, 10);
    g_landlock = strchr(argv[5], 'l') != nullptr;
    g_seccomp = strchr(argv[5], 's') != nullptr;
    g_reads.assign(argv + 6, argv + argc);
    g_page = size_t(sysconf(_SC_PAGESIZE));
    mmsandbox::limit(RLIMIT_CORE, 0);
    if (chdir(g_scratch.c_str()) != 0) return 1;
    // The worker itself runs no kernel code, but writes nothing outside its scratch folder either.
    if (g_landlock && !mmsandbox::restrict_files({}, {g_scratch, "/dev/null"}, false).empty()) return 1;
    // The kernel's filter and the names of the calls it traps, made once for every child.
    if (g_seccomp) {
        g_filter_failed = mmsandbox::build_filter(mmsandbox::kernel_allowed(), SCMP_ACT_TRAP, g_filter);
        g_calls.fill();
    }
    void* status = mmap(nullptr, round_up(sizeof(mmemu_status), g_page), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (status == MAP_FAILED) return 1;
    g_status = static_cast<mmemu_status*>(status);
    prctl(PR_SET_CHILD_SUBREAPER, 1);  // see end_descendants
    for (;;) {
        uint32_t n;
        if (!read_all(g_in, &n, sizeof n)) return 0;  // the client closed the pipe: done
        std::string request(n, '\0');
        if (!read_all(g_in, request.data(), n)) return 0;
        try {
            send(dispatch(request));
        } catch (const NoMemory& e) {
            send(std::string(1, '\2') + e.what());
        } catch (const Refused& e) {
            send(std::string(1, '\1') + e.what());
        }
    }
}
