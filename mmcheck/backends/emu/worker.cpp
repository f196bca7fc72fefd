// mmemu-worker: the process that owns the emulator's buffers and kernel modules, driven by worker.py over
// two pipes (fds given as argv[1], argv[2]).  Each launch runs in a forked child, so that a crash, a
// hang or a sanitizer abort in a kernel ends only the child; buffers are MAP_SHARED, so the child's
// writes are the worker's.  Every process a launch starts ends with it (end_launch), and its output comes
// back with its result, capped (Output).  Built twice from the same source: plain, and with -fsanitize=address.
//
// Frames, both ways: u32 length, then that many bytes.  A request starts with an op byte; a reply with
// 0 (ok) or 1 (refused, followed by a message).  All integers little-endian.  wire
#include "mmemu.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>  // ASAN_POISON_MEMORY_REGION does nothing without -fsanitize=address

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
// Kernel faults are reported by the child's own handlers; ASan stops at the first error.
extern "C" const char* __asan_default_options() {
    return "detect_leaks=0:allow_user_segv_handler=1:halt_on_error=1:print_legend=0:color=never";
}
#endif

namespace {

int g_in, g_out;
size_t g_page;

struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
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

std::string alloc(Reader& in) {
    size_t nbytes = in.get<uint64_t>();
    size_t body = round_up(std::max<size_t>(round_up(nbytes, kAlignment), 1), g_page);
    size_t map_size = body + 2 * g_page;
    void* p = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Refused("cannot map " + std::to_string(nbytes) + " bytes: " + strerror(errno));
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
    return Writer().put(id).out;
}

Buffer& buffer(uint32_t id) {
    auto it = g_buffers.find(id);
    if (it == g_buffers.end()) throw Refused("no buffer " + std::to_string(id));
    return it->second;
}

std::string read_buffer(Reader& in) {
    const Buffer& b = buffer(in.get<uint32_t>());
    Writer w;
    w.out.append(b.data, b.nbytes);
    return w.out;
}

std::string free_buffer(Reader& in) {
    uint32_t id = in.get<uint32_t>();
    const Buffer& b = buffer(id);
    ASAN_UNPOISON_MEMORY_REGION(b.map, b.map_size);
    munmap(b.map, b.map_size);
    g_buffers.erase(id);
    return Writer().out;
}

// ---- kernel modules ---------------------------------------------------------------------------------
std::vector<const mmemu_kernel*> g_kernels;

std::string load(Reader& in) {
    std::string path = in.bytes(in.left());
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw Refused(dlerror());
    auto info = reinterpret_cast<const mmemu_kernel* (*)()>(dlsym(handle, "mmemu_kernel_info"));
    if (!info) throw Refused(path + " exports no mmemu_kernel_info");
    const mmemu_kernel* k = info();
    if (k->abi != MMEMU_ABI) throw Refused(path + " was built for another emulator ABI");
    g_kernels.push_back(k);
    Writer w;
    w.put(uint32_t(g_kernels.size() - 1)).put(k->nparams);
    w.out.append(reinterpret_cast<const char*>(k->params), k->nparams * sizeof(mmemu_param));
    return w.out;
}

// ---- launches -----------------------------------------------------------------------------------------
mmemu_status* g_status;  // one shared page, reused by every launch

// What a launch writes: the first kOutputCap bytes of its stdout (a kernel's printf), the last kErrorCap of its
// stderr (a sanitizer's report comes last), and how many bytes stdout had.  Read while the launch runs, so that
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

// The processes a launch left behind: with the worker their subreaper, orphans come to it, even those that left
// the launch's process group.  Killed and reaped until none is left.
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

// Ends a launch's processes: its group, then whatever escaped it.
void end_launch(pid_t pid) {
    kill(-pid, SIGKILL);
    end_descendants();
}

// Runs until the launch's process `pid` exits (`exited` becomes readable: its pidfd, or a pipe that only it
// holds), reading its output meanwhile; false after timeout_ms.  A request pipe that becomes readable means
// the client has gone (it sends nothing while it waits for a launch): the launch is ended, and the worker.
bool wait_exit(pid_t pid, int exited, int out_fd, int err_fd, int timeout_ms, Output& output) {
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pollfd fds[4] = {{exited, POLLIN, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {g_in, POLLIN, 0}};
    for (;;) {
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed >= timeout_ms) return false;
        int r = poll(fds, 4, int(timeout_ms - elapsed));
        if (r < 0 && errno != EINTR) return true;  // cannot wait: let waitpid decide
        if (r <= 0) continue;
        if (fds[3].revents) {
            end_launch(pid);
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

std::string launch(Reader& in) {
    uint32_t kernel = in.get<uint32_t>();
    if (kernel >= g_kernels.size()) throw Refused("no kernel " + std::to_string(kernel));
    mmemu_launch L{};
    L.kernel = g_kernels[kernel];
    L.grid = in.get<mmemu_dim3>();
    L.block = in.get<mmemu_dim3>();
    L.smem = in.get<uint64_t>();
    L.schedule = in.get<uint8_t>();
    L.fibers = in.get<uint8_t>();
    L.strict = in.get<uint8_t>();
    L.seed = in.get<uint64_t>();
    int timeout_ms = int(in.get<uint32_t>());
    uint32_t nargs = in.get<uint32_t>();
    std::vector<uint64_t> slots(nargs);
    std::vector<void*> args(nargs);
    for (uint32_t i = 0; i < nargs; ++i) {
        if (in.get<uint8_t>() == 0) {  // a buffer: id, byte offset of the kernel's pointer
            const Buffer& b = buffer(in.get<uint32_t>());
            slots[i] = reinterpret_cast<uint64_t>(b.data + in.get<uint64_t>());
        } else {  // a scalar: its bytes, zero-padded to 8
            slots[i] = in.get<uint64_t>();
        }
        args[i] = &slots[i];
    }
    L.args = args.data();

    memset(g_status, 0, sizeof *g_status);
    // The child's stdout and stderr, and a pipe that tells of its exit where there is no pidfd (Linux < 5.3).
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, exitp[2] = {-1, -1};
    if (pipe(outp) != 0 || pipe(errp) != 0 || pipe(exitp) != 0) {
        std::string why = strerror(errno);
        for (int fd : {outp[0], outp[1], errp[0], errp[1], exitp[0], exitp[1]})
            if (fd >= 0) close(fd);
        throw Refused("cannot start a launch: " + why);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        // A process group of its own, killed as one when the launch ends; dead with the worker, should that
        // go first; and none of the worker's pipes, lest it hold the client's reply pipe open.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        close(g_in);
        close(g_out);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        for (int fd : {outp[0], outp[1], errp[0], errp[1], exitp[0]}) close(fd);
        mmemu_child_run(&L, g_status);
    }
    for (int fd : {outp[1], errp[1], exitp[1]}) close(fd);
    Output output;
    bool timed_out = false;
    int wait_status = 0;
    if (pid > 0) {
        setpgid(pid, pid);  // as the child does, whichever runs first
        int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
        timed_out = !wait_exit(pid, pidfd >= 0 ? pidfd : exitp[0], outp[0], errp[0], timeout_ms, output);
        if (pidfd >= 0) close(pidfd);
        if (timed_out) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        waitpid(pid, &wait_status, 0);
        end_launch(pid);
        drain(outp[0], true, output);
        drain(errp[0], false, output);
    }
    for (int fd : {outp[0], errp[0], exitp[0]}) close(fd);
    if (pid < 0) throw Refused(std::string("fork failed: ") + strerror(errno));
    std::string err = output.err.size() > kErrorCap ? output.err.substr(output.err.size() - kErrorCap) : output.err;

    const mmemu_status& s = *g_status;
    int32_t where_buffer = -1;  // the buffer whose mapping holds the faulting address, if any
    int64_t where_offset = 0;   // its byte offset from the buffer's first element
    for (const auto& [id, b] : g_buffers) {
        if (s.addr >= uint64_t(b.map) && s.addr < uint64_t(b.map + b.map_size)) {
            where_buffer = int32_t(id);
            where_offset = int64_t(s.addr - uint64_t(b.data));
        }
    }
    Writer w;
    w.put(uint8_t(timed_out ? MMEMU_TIMEOUT : s.state)).put(s.block).put(s.thread);
    w.put(int32_t(s.in_kernel)).put(int32_t(s.signo)).put(int32_t(s.code)).put(int32_t(s.is_write));
    w.put(uint64_t(s.addr)).put(uint32_t(s.access_size)).put(int32_t(wait_status));
    w.put(where_buffer).put(where_offset);
    w.str(std::string(s.message, strnlen(s.message, sizeof s.message)));
    w.str(std::string(s.warnings, strnlen(s.warnings, sizeof s.warnings)));
    w.str(err);
    w.str(output.out).put(output.out_total);
    return w.out;
}

std::string dispatch(const std::string& request) {
    Reader in(request);
    switch (in.get<char>()) {
        case 'A': return alloc(in);
        case 'R': return read_buffer(in);
        case 'F': return free_buffer(in);
        case 'L': return load(in);
        case 'X': return launch(in);
        default: throw Refused("unknown request");
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    g_in = atoi(argv[1]);
    g_out = atoi(argv[2]);
    g_page = size_t(sysconf(_SC_PAGESIZE));
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
        } catch (const Refused& e) {
            send(std::string(1, '\1') + e.what());
        }
    }
}
