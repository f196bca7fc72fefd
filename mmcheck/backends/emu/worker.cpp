// mmemu-worker: the process that owns the emulator's buffers and kernel modules, driven by worker.py over
// two pipes (fds given as argv[1], argv[2]).  Each launch runs in a forked child, so that a crash, a
// hang or a sanitizer abort in a kernel ends only the child; buffers are MAP_SHARED, so the child's
// writes are the worker's.  Built twice from the same source: plain, and with -fsanitize=address.
//
// Frames, both ways: u32 length, then that many bytes.  A request starts with an op byte; a reply with
// 0 (ok) or 1 (refused, followed by a message).  All integers little-endian.  wire
#include "mmemu.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
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

std::string slurp(int fd, size_t cap) {  // the last `cap` bytes of what the child wrote to fd
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > off_t(cap) ? size - off_t(cap) : 0;
    std::string out(size_t(size - from), '\0');
    if (pread(fd, out.data(), out.size(), from) != ssize_t(out.size())) out.clear();
    return out;
}

// Waits for the child to exit, at most timeout_ms; the child holds the write end of `pipe_r`'s pipe, so
// the read end reports hang-up exactly when the child has gone.
bool wait_exit(int pipe_r, int timeout_ms) {
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed >= timeout_ms) return false;
        pollfd p{pipe_r, POLLIN, 0};
        int r = poll(&p, 1, int(timeout_ms - elapsed));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return true;  // cannot wait: let waitpid decide
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
    int errfd = memfd_create("mmemu-stderr", 0);  // the child's stderr, for sanitizer reports and asserts
    int pipefd[2];
    if (errfd < 0 || pipe(pipefd) != 0) {
        std::string why = strerror(errno);
        if (errfd >= 0) close(errfd);
        throw Refused("cannot start a launch: " + why);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        dup2(errfd, 2);
        mmemu_child_run(&L, g_status);
    }
    close(pipefd[1]);
    bool timed_out = pid > 0 && !wait_exit(pipefd[0], timeout_ms);
    if (timed_out) kill(pid, SIGKILL);
    int wait_status = 0;
    if (pid > 0) waitpid(pid, &wait_status, 0);
    close(pipefd[0]);
    std::string err = slurp(errfd, 16384);
    close(errfd);
    if (pid < 0) throw Refused(std::string("fork failed: ") + strerror(errno));

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
