// Hopper's asynchronous machinery on the emulator (part of libmmemu.so), with the PTX ISA's semantics: mbarrier
// objects, and the bulk copies (cp.async.bulk) and TMA copies (cp.async.bulk.tensor) that complete on them or in
// bulk async-groups.  Shared memory is named by .shared::cluster addresses (mmemu.h), so that an mbarrier and a tile
// are found alike from their own block and from another block of the cluster (a remote arrive, a copy into a mapa'd
// address, a multicast).
//
// An mbarrier counts, in its current phase, the arrivals still pending (of the expected count mbarrier.init set)
// and the transaction bytes still pending (expect-tx adds, complete-tx subtracts); when both reach zero the phase
// completes: the phase advances, pending arrivals are the expected count again and the transaction count zero.
// Its state lives here, keyed by its .shared::cluster address, and an encoding of it in its 8 bytes, so that an ordinary
// store over a live mbarrier is caught at its next use.  A wait (test_wait, try_wait) parks the thread until the
// phase it names completes; when nothing else in the block can proceed it times out, returning false, and a
// thread that times out again with nothing changed meanwhile is in a deadlock, which names the mbarrier, its
// arrivals and its expected and arrived bytes.
//
// A copy into shared memory lands, under the forward schedule, when issued; under the others only when no thread
// of the cluster can proceed without it (runtime.cpp's scheduler calls async_land) or its block exits, one copy at a time, oldest first: a kernel
// that reads a tile before its mbarrier's phase completes reads the old bytes, and a phase whose expect_tx counted
// too few bytes completes before its last copy lands (which is then caught landing in a later phase).  A copy out
// of shared memory (a bulk store, a TMA store) reads its source, and writes global memory, when its bulk group is
// waited for (or when its block exits); shared memory changed between the issue and that read is a race (the
// missing cp.async.bulk.wait_group.read), and the source's bytes are checked against the async proxy's rule
// (runtime_proxy.cpp) when it is issued.
//
// A TMA copy reads the tensor map mmcheck fills (128 bytes, 64-byte aligned, little-endian): the global address
// (offset 0), global dimensions (8, five uint64, innermost first), the strides of dimensions 1..4 in bytes (48),
// the box (80, five uint32), the element strides (100, five uint32), then bytes for the rank (120), the element's
// size (121), the swizzle (122: none, 32B, 64B, 128B), interleave (123), the out-of-bounds fill (124: zeros, NaN),
// the data type (125) and the magic "MT" (126, 127).  The box lands in shared memory innermost dimension first,
// ceil(box[i] / elementStrides[i]) elements along dimension i > 0 (dimension 0's stride is ignored), its rows (the
// elements along dimension 0) one after another, each element at its shared address with the swizzle applied: the
// 16-byte chunk index (address bits 4-6, 4-5 or 4) XORed with bits 7-9, 7-8 or 7 (CUTLASS's Swizzle<3,4,3>, <2,4,3>,
// <1,4,3>).  A swizzled box's rows are a swizzle span (128, 64 or 32 bytes) apart, those narrower than it leaving
// the rest of their span as it was; its transactions count the box's own bytes (as an H200 does).  The box's
// innermost coordinate must be a multiple of 16 bytes into its row (an H200 traps otherwise).  Elements
// outside the tensor are filled with zeros or the hardware's NaN (0x7ff7 in every 16 bits) on a load and left out
// of a store.  A multicast load (.multicast::cluster) is one copy per block of its cta mask, each landing at the
// same offset in its block's shared memory and completing on that block's mbarrier at the same offset.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "runtime.h"

namespace {

constexpr uint32_t kMaxCount = (1u << 20) - 1;  // an mbarrier's arrivals, and the magnitude of its tx-count

struct Mbarrier {
    uint32_t expected, pending;
    uint64_t phase;
    int64_t tx;                              // the transaction bytes the phase still awaits
    uint64_t expected_bytes, arrived_bytes;  // the phase's expect-tx and complete-tx bytes, for messages
    int line;                                // of its mbarrier.init
    uint64_t word;                           // what its 8 bytes hold
};
std::map<uint32_t, Mbarrier> mbarriers;

struct TensorMap {
    const unsigned char* global;
    uint64_t dim[5], stride[5];  // stride[0]: the element's size
    uint32_t box[5], step[5];
    int rank, elem, swizzle, fill;
    uint32_t pitch;              // bytes from a row of the box to the next in shared memory
};

struct Copy {
    bool load;           // into shared memory, completing on an mbarrier; else out of it, in a bulk group
    unsigned thread;     // the issuing thread
    const char* op;
    int line;
    uint32_t shared;     // the shared-memory side (a .shared::cluster address, as every address here)
    uint32_t size;       // its bytes: the copy's, or the box's
    uint32_t span;       // the shared bytes it touches (more than `size` where a swizzled box's rows are narrow)
    uint32_t mbarrier;   // a load's, and its phase when the copy was issued
    uint64_t phase;
    uint64_t group;      // a store's bulk group, 0 while uncommitted
    unsigned char* global;  // a plain copy's global side
    bool tensor;
    TensorMap map;
    int32_t coords[5];
    std::vector<unsigned char> image;  // a store's source as it was issued
};
std::vector<Copy> flight;         // copies issued and not landed, oldest first
std::vector<uint64_t> committed;  // per thread of the cluster: how many bulk groups it has committed

constexpr uint32_t kOffset = (1u << MMEMU_CLUSTER_SHIFT) - 1;  // an address's offset in its block's shared memory

unsigned rank_of(uint32_t address) { return (address >> MMEMU_CLUSTER_SHIFT) - 1; }

unsigned char* shared(uint32_t address, size_t size, const char* op, int line) {
    return static_cast<unsigned char*>(mmemu_cluster_pointer(address, size, op, line));
}

// An address already checked.
unsigned char* at(uint32_t address) { return shared(address, 1, "an asynchronous copy", 0); }

// An address as messages name it: its offset, and its block where the cluster has several.
struct Named {
    char text[80];
};
Named named(uint32_t address) {
    Named n;
    int used = snprintf(n.text, sizeof n.text, "shared address 0x%x", address & kOffset);
    if (mmemu_cluster_now()->size > 1)
        snprintf(n.text + used, sizeof n.text - size_t(used), " of the block of rank %u", rank_of(address));
    return n;
}

[[noreturn]] void copy_violation(const Copy& c, const char* what) {
    mmemu_rt::blame(c.thread);
    mmemu_violation("%s at line %d: %s", c.op, c.line, what);
}

// ---- mbarriers ----
// An encoding of its state into its 8 bytes (phase parity, tx-count, expected and pending arrivals): a later use
// that finds other bytes there knows an ordinary store has overwritten it.
void store(uint32_t address, Mbarrier& b) {
    uint64_t tx = uint64_t(b.tx) & ((1ull << 21) - 1);
    b.word = (b.phase & 1) << 63 | tx << 42 | uint64_t(b.expected) << 21 | b.pending;
    unsigned char* p = at(address);
    std::memcpy(p, &b.word, 8);
    mmemu_rt::proxy_written(p, 8);
}

void aligned8(uint32_t address, const char* op, int line) {
    if (address % 8)
        mmemu_violation("%s at line %d: mbarrier address 0x%x is not 8-byte aligned", op, line, address & kOffset);
}

Mbarrier& object(uint32_t address, const char* op, int line) {
    aligned8(address, op, line);
    const unsigned char* p = shared(address, 8, op, line);
    auto found = mbarriers.find(address);
    if (found == mbarriers.end())
        mmemu_violation("%s at line %d: no mbarrier at %s: mbarrier.init has not run there (or mbarrier.inval has "
                        "since)", op, line, named(address).text);
    if (std::memcmp(p, &found->second.word, 8) != 0)
        mmemu_violation("%s at line %d: the mbarrier at %s (initialized at line %d) was overwritten by an ordinary "
                        "store", op, line, named(address).text, found->second.line);
    return found->second;
}

void settle(uint32_t address, Mbarrier& b) {
    if (b.pending == 0 && b.tx == 0) {
        ++b.phase;
        b.pending = b.expected;
        b.expected_bytes = b.arrived_bytes = 0;
    }
    store(address, b);
    mmemu_rt::progress();
}

void change_tx(uint32_t address, Mbarrier& b, int64_t bytes, const char* op, int line) {
    b.tx += bytes;
    (bytes > 0 ? b.expected_bytes : b.arrived_bytes) += uint64_t(bytes > 0 ? bytes : -bytes);
    if (b.tx > int64_t(kMaxCount) || b.tx < -int64_t(kMaxCount))
        mmemu_violation("%s at line %d: the transaction count of the mbarrier at %s would be %lld bytes, past the "
                        "2^20 - 1 an mbarrier holds", op, line, named(address).text, static_cast<long long>(b.tx));
}

struct Wait {
    uint32_t address;
    uint64_t phase;
    bool parity;
};

int completed(const void* arg) {
    const Wait& w = *static_cast<const Wait*>(arg);
    auto found = mbarriers.find(w.address);
    if (found == mbarriers.end()) return 1;  // invalidated meanwhile: the thread's next use of it says so
    uint64_t phase = found->second.phase;
    return w.parity ? (phase & 1) != (w.phase & 1) : uint32_t(phase) != uint32_t(w.phase);
}

void describe(const void* arg, char* text, size_t size) {
    const Wait& w = *static_cast<const Wait*>(arg);
    auto found = mbarriers.find(w.address);
    if (found == mbarriers.end()) {
        snprintf(text, size, "on the mbarrier at %s, since invalidated", named(w.address).text);
        return;
    }
    const Mbarrier& b = found->second;
    int n = snprintf(text, size, "on the mbarrier at %s (initialized at line %d), whose phase %llu awaits %u of its "
                     "%u arrivals", named(w.address).text, b.line, static_cast<unsigned long long>(b.phase), b.pending,
                     b.expected);
    if ((b.tx || b.expected_bytes || b.arrived_bytes) && n >= 0 && size_t(n) < size)
        snprintf(text + n, size - size_t(n), " and %lld bytes of its transactions: %llu bytes expected (expect_tx), "
                 "%llu arrived (complete_tx)", static_cast<long long>(b.tx),
                 static_cast<unsigned long long>(b.expected_bytes), static_cast<unsigned long long>(b.arrived_bytes));
}

// ---- tensor maps ----
template <class T>
T field(const unsigned char* map, size_t offset) {
    T value;
    std::memcpy(&value, map + offset, sizeof value);
    return value;
}

TensorMap read_map(const void* at, int dims, const char* op, int line) {
    const unsigned char* m = static_cast<const unsigned char*>(at);
    if (reinterpret_cast<uintptr_t>(at) % 64)
        mmemu_violation("%s at line %d: the tensor map at %p is not 64-byte aligned", op, line, at);
    if (m[126] != 'M' || m[127] != 'T')
        mmemu_violation("%s at line %d: the tensor map at %p is not one mmcheck filled (its last two bytes are 0x%02x "
                        "0x%02x, not \"MT\"): the emulator reads the maps a spec's [kernel.tensormaps] describe", op,
                        line, at, m[126], m[127]);
    TensorMap t{};
    t.global = reinterpret_cast<const unsigned char*>(field<uint64_t>(m, 0));
    t.rank = m[120];
    t.elem = m[121];
    t.swizzle = m[122];
    t.fill = m[124];
    const char* wrong = nullptr;
    if (t.rank != dims) wrong = "its rank is not the instruction's dimensions";
    else if (t.elem != 1 && t.elem != 2 && t.elem != 4 && t.elem != 8) wrong = "its element size is not 1, 2, 4 or 8";
    else if (t.swizzle > 3 || t.fill > 1) wrong = "its swizzle or fill is none of the CUDA driver's";
    else if (reinterpret_cast<uintptr_t>(t.global) % 16) wrong = "its global address is not 16-byte aligned";
    for (int d = 0; d < 5 && !wrong; ++d) {
        t.dim[d] = d < t.rank ? field<uint64_t>(m, 8 + 8 * size_t(d)) : 1;
        t.stride[d] = d == 0 ? uint64_t(t.elem) : d < t.rank ? field<uint64_t>(m, 40 + 8 * size_t(d)) : 0;
        t.box[d] = d < t.rank ? field<uint32_t>(m, 80 + 4 * size_t(d)) : 1;
        t.step[d] = d < t.rank && d > 0 ? field<uint32_t>(m, 100 + 4 * size_t(d)) : 1;
        if (!t.dim[d] || t.box[d] < 1 || t.box[d] > 256 || t.step[d] < 1 || t.step[d] > 8 || (d && t.stride[d] % 16))
            wrong = "a dimension, stride, box or element stride is outside what cuTensorMapEncodeTiled allows";
    }
    uint32_t inner = t.box[0] * uint32_t(t.elem);
    if (!wrong && (inner % 16 || (t.swizzle && inner > 16u << t.swizzle)))
        wrong = "its box's inner dimension is not a multiple of 16 bytes within its swizzle's span";
    if (wrong) mmemu_violation("%s at line %d: the tensor map at %p is not valid: %s", op, line, at, wrong);
    if (m[123]) mmemu_unsupported("a TMA copy of a tensor map with interleave (16B or 32B)", op, line);
    t.pitch = t.swizzle ? 16u << t.swizzle : inner;
    return t;
}

uint32_t box_rows(const TensorMap& t) {
    uint32_t rows = 1;
    for (int d = 1; d < 5; ++d) rows *= (t.box[d] + t.step[d] - 1) / t.step[d];
    return rows;
}

uint32_t swizzled(uint32_t address, int swizzle) {
    return swizzle ? address ^ ((address >> 7) & ((1u << swizzle) - 1)) << 4 : address;
}

// Calls each(shared address, element's global address or null where outside the tensor) for every element of the
// box, in its order in shared memory.
template <class Each>
void traverse(const Copy& c, Each each) {
    const TensorMap& t = c.map;
    uint32_t n[5], i[5] = {0, 0, 0, 0, 0};
    for (int d = 0; d < 5; ++d) n[d] = (t.box[d] + t.step[d] - 1) / t.step[d];
    for (uint32_t row = 0, rows = box_rows(t); row < rows; ++row)
        for (uint32_t column = 0; column < t.box[0]; ++column) {
            const unsigned char* at = t.global;
            i[0] = column;
            for (int d = 0; d < 5 && at; ++d) {
                int64_t g = int64_t(c.coords[d]) + int64_t(i[d]) * t.step[d];
                at = g >= 0 && uint64_t(g) < t.dim[d] ? at + uint64_t(g) * t.stride[d] : nullptr;
            }
            each(swizzled(c.shared + row * t.pitch + column * uint32_t(t.elem), t.swizzle), at);
            if (column + 1 == t.box[0])
                for (int d = 1; d < 5 && ++i[d] == n[d]; ++d) i[d] = 0;
        }
}

// ---- copies ----
// The shared memory of the block the address names, from its offset 0.
unsigned char* home(uint32_t address) { return at(address) - (address & kOffset); }

void perform_load(const Copy& c) {
    unsigned char* base = home(c.shared) - (c.shared & ~kOffset);  // indexed by .shared::cluster addresses
    if (!c.tensor) {
        std::memcpy(base + c.shared, c.global, c.size);
    } else {
        const unsigned char nan[8] = {0xf7, 0x7f, 0xf7, 0x7f, 0xf7, 0x7f, 0xf7, 0x7f};
        traverse(c, [&](uint32_t to, const unsigned char* from) {
            if (from) std::memcpy(base + to, from, size_t(c.map.elem));
            else if (c.map.fill) std::memcpy(base + to, nan, size_t(c.map.elem));
            else std::memset(base + to, 0, size_t(c.map.elem));
        });
    }
    mmemu_rt::proxy_written(base + c.shared, c.span);
}

void perform_store(const Copy& c) {
    const unsigned char* base = home(c.shared) - (c.shared & ~kOffset);
    if (std::memcmp(base + c.shared, c.image.data(), c.span) != 0)
        copy_violation(c, "shared memory the copy reads was written after the copy was issued and before it read "
                          "it: a cp.async.bulk.wait_group.read covering the copy is missing before that write");
    if (!c.tensor) {
        std::memcpy(c.global, base + c.shared, c.size);
        return;
    }
    traverse(c, [&](uint32_t from, const unsigned char* to) {
        if (to) std::memcpy(const_cast<unsigned char*>(to), base + from, size_t(c.map.elem));
    });
}

void land(const Copy& c) {
    if (!c.load) return perform_store(c);
    auto found = mbarriers.find(c.mbarrier);
    char text[384];
    if (found == mbarriers.end()) {
        snprintf(text, sizeof text, "the mbarrier at %s that the copy completes on was invalidated before the copy "
                 "landed", named(c.mbarrier).text);
        copy_violation(c, text);
    }
    Mbarrier& b = found->second;
    if (b.phase != c.phase) {
        snprintf(text, sizeof text, "the copy's %u bytes land on the mbarrier at %s in its phase %llu, but the copy was "
                 "issued in phase %llu, which completed without them: that phase's expect_tx counted fewer bytes than "
                 "its copies bring", c.size, named(c.mbarrier).text,
                 static_cast<unsigned long long>(b.phase), static_cast<unsigned long long>(c.phase));
        copy_violation(c, text);
    }
    perform_load(c);
    change_tx(c.mbarrier, b, -int64_t(c.size), c.op, c.line);
    settle(c.mbarrier, b);
}

void issue(Copy c) {
    c.thread = mmemu_rt::current_thread();
    if (c.load) {
        c.phase = object(c.mbarrier, c.op, c.line).phase;
    } else {
        const unsigned char* source = shared(c.shared, c.span, c.op, c.line);
        mmemu_async_proxy_read(source, c.span, c.op, c.line);
        c.image.assign(source, source + c.span);
    }
    if (mmemu_rt::early_copies()) land(c);
    else flight.push_back(std::move(c));
}

// A copy's shared side: `align`-byte aligned, `span` bytes of the block's shared memory.
Copy shared_side(bool load, uint32_t address, uint32_t size, uint32_t span, uint32_t align, const char* op, int line) {
    if (address % align)
        mmemu_violation("%s at line %d: %s is not %u-byte aligned", op, line, named(address).text, align);
    shared(address, span, op, line);
    Copy c{};
    c.load = load;
    c.op = op;
    c.line = line;
    c.shared = address;
    c.size = size;
    c.span = span;
    return c;
}

Copy plain(bool load, uint32_t address, void* global, uint32_t size, const char* op, int line) {
    if (size % 16 || !size)
        mmemu_violation("%s at line %d: %u bytes; a bulk copy moves a multiple of 16 bytes", op, line, size);
    if (reinterpret_cast<uintptr_t>(global) % 16)
        mmemu_violation("%s at line %d: global address %p is not 16-byte aligned", op, line, global);
    Copy c = shared_side(load, address, size, size, 16, op, line);
    c.global = static_cast<unsigned char*>(mmemu_global_pointer(reinterpret_cast<uintptr_t>(global), op, line));
    return c;
}

Copy tensor(bool load, uint32_t address, const void* map, const int32_t* coords, int dims, const char* op, int line) {
    TensorMap t = read_map(map, dims, op, line);
    if (int64_t(coords[0]) * t.elem % 16)  // an H200 traps (an illegal instruction) on such a box
        mmemu_violation("%s at line %d: the box's innermost coordinate %d is not a multiple of 16 bytes (%d-byte "
                        "elements) into its row, as TMA requires", op, line, coords[0], t.elem);
    uint32_t rows = box_rows(t), size = rows * t.box[0] * uint32_t(t.elem), span = rows * t.pitch;
    Copy c = shared_side(load, address, size, span, t.swizzle ? 128u << t.swizzle : 128u, op, line);
    c.tensor = true;
    c.map = t;
    for (int d = 0; d < 5; ++d) c.coords[d] = d < dims ? coords[d] : 0;
    return c;
}

// A load issued, or with a cta mask one load per block of the mask, each at the offsets of `c.shared` and
// `c.mbarrier` in that block's shared memory.
void load(Copy c, uint16_t ranks) {
    if (!ranks) return issue(std::move(c));
    unsigned blocks = mmemu_cluster_now()->size;
    if (ranks >> blocks)
        mmemu_violation("%s at line %d: cta mask 0x%x names a block outside the cluster of %u", c.op, c.line, ranks,
                        blocks);
    for (unsigned r = 0; r < blocks; ++r) {
        if (!(ranks >> r & 1)) continue;
        Copy each = c;
        uint32_t block = (r + 1) << MMEMU_CLUSTER_SHIFT;
        each.shared = block | (c.shared & kOffset);
        each.mbarrier = block | (c.mbarrier & kOffset);
        shared(each.shared, each.span, c.op, c.line);
        issue(std::move(each));
    }
}

}  // namespace

namespace mmemu_rt {

void mbarrier_init(uint32_t address, uint32_t count, const char* op, int line) {
    aligned8(address, op, line);
    shared(address, 8, op, line);
    if (count < 1 || count > kMaxCount)
        mmemu_violation("%s at line %d: an expected arrival count of %u; an mbarrier counts 1 to 2^20 - 1", op, line,
                        count);
    Mbarrier& b = mbarriers[address];
    b = Mbarrier{count, count, 0, 0, 0, 0, line, 0};
    settle(address, b);
}

void mbarrier_inval(uint32_t address, const char* op, int line) {
    object(address, op, line);
    for (const Copy& c : flight)
        if (c.load && c.mbarrier == address)
            mmemu_violation("%s at line %d: the mbarrier at %s is invalidated while the copy at line %d is still to "
                            "complete on it", op, line, named(address).text, c.line);
    mbarriers.erase(address);
}

uint64_t mbarrier_arrive(uint32_t address, uint32_t count, uint32_t tx, bool drop, bool no_complete, const char* op,
                         int line) {
    Mbarrier& b = object(address, op, line);
    if (tx) change_tx(address, b, int64_t(tx), op, line);
    if (count < 1 || count > b.pending)
        mmemu_violation("%s at line %d: %u arrivals, but the phase of the mbarrier at %s awaits %u", op, line, count,
                        named(address).text, b.pending);
    uint64_t state = uint64_t(address) << 32 | uint32_t(b.phase);
    b.pending -= count;
    if (no_complete && b.pending == 0 && b.tx == 0)
        mmemu_violation("%s at line %d: the arrival completes the phase of the mbarrier at %s, which .noComplete says "
                        "it does not", op, line, named(address).text);
    if (drop) b.expected -= count;
    settle(address, b);
    return state;
}

void mbarrier_tx_change(uint32_t address, int64_t bytes, const char* op, int line) {
    Mbarrier& b = object(address, op, line);
    change_tx(address, b, bytes, op, line);
    settle(address, b);
}

bool mbarrier_wait(uint32_t address, uint64_t phase, bool parity, const char* op, int line) {
    object(address, op, line);
    if (!parity && phase >> 32 != address)
        mmemu_violation("%s at line %d: the state waited for is not one an arrive on the mbarrier at %s returned", op,
                        line, named(address).text);
    Wait w{address, phase, parity};
    return wait(completed, &w, describe, true, op, line);
}

void bulk_load(uint32_t shared, const void* global, uint32_t size, uint32_t mbarrier, uint16_t ranks,
               const char* op, int line) {
    Copy c = plain(true, shared, const_cast<void*>(global), size, op, line);
    c.mbarrier = mbarrier;
    load(std::move(c), ranks);
}

void bulk_store(void* global, uint32_t shared, uint32_t size, const char* op, int line) {
    issue(plain(false, shared, global, size, op, line));
}

void tensor_load(uint32_t shared, const void* map, const int32_t* coords, int dims, uint32_t mbarrier,
                 uint16_t ranks, const char* op, int line) {
    Copy c = tensor(true, shared, map, coords, dims, op, line);
    c.mbarrier = mbarrier;
    load(std::move(c), ranks);
}

void tensor_store(const void* map, const int32_t* coords, int dims, uint32_t shared, const char* op, int line) {
    issue(tensor(false, shared, map, coords, dims, op, line));
}

void bulk_commit() {
    unsigned t = current_thread();
    ++committed[t];
    for (Copy& c : flight)
        if (!c.load && c.thread == t && !c.group) c.group = committed[t];
}

// The copies in flight for which done(copy) holds land, in the order they were issued.
template <class Done>
void land_where(Done done) {
    std::vector<Copy> kept, landing;
    for (Copy& c : flight) (done(c) ? landing : kept).push_back(std::move(c));
    flight.swap(kept);
    for (const Copy& c : landing) land(c);
}

void bulk_wait(unsigned pending) {
    unsigned t = current_thread();
    if (committed[t] <= pending) return;
    uint64_t last = committed[t] - pending;
    land_where([&](const Copy& c) { return !c.load && c.thread == t && c.group && c.group <= last; });
}

void async_cluster_start() {
    mbarriers.clear();
    flight.clear();
    committed.assign(cluster_threads(), 0);
}

bool async_land() {
    auto load = std::find_if(flight.begin(), flight.end(), [](const Copy& c) { return c.load; });
    if (load == flight.end()) return false;
    Copy c = std::move(*load);
    flight.erase(load);
    land(c);
    return true;
}

void async_block_exit(unsigned rank) {
    land_where([&](const Copy& c) { return rank_of(c.shared) == rank; });
}

void async_cluster_end() {
    land_where([](const Copy&) { return true; });
}

}  // namespace mmemu_rt
