// wgmma on the emulator (part of libmmemu.so), with the PTX ISA's semantics ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"):
//   wgmma.mma_async.sync.aligned.m64nNkK of .f16 inputs (K 16, f16 or f32 accumulators), .bf16 (K 16, f32), .tf32
//     (K 8, f32) and .e4m3 / .e5m2 (K 32, each of A and B either, f16 or f32 accumulators), N from 8 to 256 in
//     steps of 8; A from shared memory (a matrix descriptor) or from registers, B from shared memory; scale-d (an
//     immediate or a predicate: D = A B + D, or A B), imm-scale-a and imm-scale-b (1, or -1 to negate A or B) and,
//     for 16-bit inputs, imm-trans-a and imm-trans-b (0: K-major, 1: M- or N-major);
//   wgmma.fence, wgmma.commit_group and wgmma.wait_group, each .sync.aligned.
//
// A wgmma is the warpgroup's: the 128 threads of 4 consecutive warps, the first a multiple of 4, all issue it with
// the same descriptors and immediates, and each gives its share of the fragments (A's, if in registers, and the
// accumulators).  The threads meet at the issue (each waits until all 128 have arrived: a thread that never comes
// ends the launch as a deadlock), where the operands in shared memory are read, through the async proxy
// (runtime_proxy.cpp: shared memory a thread wrote by ordinary stores needs a fence.proxy.async of that thread first).  The result
// lands in the accumulator registers only when the thread's wgmma.wait_group covers the wgmma's group; from the
// issue until then the accumulators hold a NaN (kPoison32, kPoison16x2), so that a read before the wait shows in the
// results.  At the wait the accumulators must still hold it: one written in between ends the launch, as does a
// write to the shared memory the wgmma read (it may read its operands at any time until the wait).  A wgmma on the
// accumulators of one in flight of the same shape takes that one's result as its C, in order, as the hardware
// chains them.  A thread's first wgmma needs a wgmma.fence before it, and so does a wgmma whose accumulators were
// written since the thread's last fence.  Registers A comes from are read at the issue: a write to them before the
// wait is not seen.
//
// A descriptor gives the start address (bits 0-13), the leading and the stride dimension byte offsets (LBO, bits
// 16-29; SBO, bits 32-45; each in 16 bytes), the base offset (bits 49-51) and the swizzle (bits 62-63: 0 none,
// 1 128B, 2 64B, 3 32B).  The operand is laid out in the canonical layouts of "Shared Memory Matrix Layout", in core
// matrices of 8 rows of 16 bytes (as CUTLASS's make_gmma_desc reads them), T = 16 / element size:
//   K-major, none:      (mn, k) at  (mn % 8) 16 + (mn / 8) SBO + (k % T) size + (k / T) LBO
//   K-major, W-byte:    (mn, k) at  (mn % 8) W + (mn / 8) SBO + (k % T) size + (k / T) 16
//   MN-major, none:     (mn, k) at  (mn % T) size + (mn / T) SBO + (k % 8) 16 + (k / 8) LBO
//   MN-major, W-byte:   (mn, k) at  (mn % T) size + (mn / T % (W / 16)) 16 + (mn / (T W / 16)) LBO + (k % 8) W
//                                   + (k / 8) SBO
// past the start address, then swizzled by address as the hardware does: the 16-byte chunk (address bits 4..) is
// XORed with address bits 7.. (3 bits for 128B, 2 for 64B, 1 for 32B: CUTLASS's Swizzle<3,4,3>, <2,4,3>,
// <1,4,3>), which repeat every 1024, 512 or 256 bytes; a pattern that starts elsewhere is named by the base offset,
// (its start >> 7) & 7, taken off bits 7-9 before the XOR.
//
// Arithmetic is mma.sync's (ptx.cpp): D[i][j] starts from C[i][j] (0 with scale-d false) and adds the K exact
// products in k order in float; a f16 D is rounded once at the end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <unordered_set>
#include <memory>
#include <utility>
#include <vector>

#include "include/mmemu_float16.h"
#include "ptx.h"
#include "runtime.h"

extern "C" mmemu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace mmemu_ptx {
namespace {

constexpr unsigned kWarpgroup = 128;
// Quiet NaNs with payloads of their own: an f32 accumulator of a wgmma in flight, and an f16 pair likewise (data.py's
// IN_FLIGHT, which the judge recognizes in a result).
constexpr uint32_t kPoison32 = 0x7fdead01;
constexpr uint32_t kPoison16x2 = 0x7e577e57;
constexpr size_t kKeptBlocks = 32;            // blocks whose state is kept: more than a cluster's, which run together

bool is_fp8(Type t) { return t == Type::kE4m3 || t == Type::kE5m2; }

// ---- decoding ----------------------------------------------------------------------------------------------------
// Whether the PTX ISA has wgmma of these types, and K for them.
int wgmma_k(const Instruction& in) {
    if (is_fp8(in.a) && is_fp8(in.b)) return in.acc == Type::kF16 || in.acc == Type::kF32 ? 32 : 0;
    if (in.a != in.b) return 0;
    switch (in.a) {
        case Type::kF16: return in.acc == Type::kF16 || in.acc == Type::kF32 ? 16 : 0;
        case Type::kBf16: return in.acc == Type::kF32 ? 16 : 0;
        case Type::kTf32: return in.acc == Type::kF32 ? 8 : 0;
        default: return 0;
    }
}

bool decode_mma_async(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kWgmma;
    in.predicates = 1u << 3;  // scale-d may be a predicate
    int m = 0, n = 0, k = 0, used = 0;
    if (q.size() != 8 || q[2] != "sync" || q[3] != "aligned" ||
        std::sscanf(q[4].c_str(), "m%dn%dk%d%n", &m, &n, &k, &used) != 3 || used != int(q[4].size()) ||
        !mma_type(q[5], in.acc) || !mma_type(q[6], in.a) || !mma_type(q[7], in.b))
        return false;
    in.n = n;
    in.k = wgmma_k(in);
    if (m != 64 || k != in.k || !k || n < 8 || n > 256 || n % 8) return false;
    // d, a-desc or {a}, b-desc, scale-d, imm-scale-a, imm-scale-b, then for 16-bit inputs imm-trans-a (with an A in
    // shared memory) and imm-trans-b.
    bool a_in_registers = in.operands.size() > 1 && in.operands[1].kind == Operand::kVector;
    size_t transposes = bytes_of(in.a) == 2 ? (a_in_registers ? 1 : 2) : 0;
    if (in.operands.size() != 6 + transposes) return false;
    for (size_t i = 2; i < in.operands.size(); ++i)
        if (in.operands[i].kind != Operand::kScalar) return false;
    return registers(in.operands[0], size_t(n / (in.acc == Type::kF16 ? 4 : 2))) &&
           (a_in_registers ? registers(in.operands[1], 4) : in.operands[1].kind == Operand::kScalar);
}

// ---- the state of threads and of wgmmas in flight ----------------------------------------------------------------
// A 16-byte row of a core matrix that a wgmma read, as it read it.
struct Chunk {
    uint32_t address;
    bool of_a;
    unsigned char bytes[16];
};

// One wgmma.mma_async of a warpgroup.
struct Wgmma {
    const Instruction* in = nullptr;
    int line = 0;
    unsigned first = 0;  // the thread that arrived first (its rank in the block), for messages
    uint64_t a_desc = 0, b_desc = 0;
    bool a_in_registers = false, scale_d = true, trans_a = false, trans_b = false;
    int scale_a = 1, scale_b = 1;
    unsigned arrived = 0;
    std::vector<uint32_t> a_words;                 // A's fragments, 4 words a thread, when A is in registers
    std::vector<uint32_t> c;                       // the accumulators at the issue, a row of registers a thread
    std::vector<std::shared_ptr<Wgmma>> chained;   // a thread's: the wgmma in flight whose result is its C, or null
    std::vector<uint32_t> a_bits, b_bits;          // the operands read from shared memory at the issue (64 x K, K x N)
    std::vector<Chunk> read;                       // the bytes they were read from
    bool computed = false;
    std::vector<uint32_t> d;                       // the result, as c

    size_t regs() const { return in->operands[0].values.size(); }
};

struct InFlight;

// A set of accumulator registers a thread's wgmmas use: each register a variable's address (the asm operand's) or,
// for one its statement declares, a key of that run of the statement.  A wgmma on the registers of an earlier one,
// in the same order, finds the same set.
struct Registers {
    std::vector<uintptr_t> keys;
    std::vector<uint32_t> known;  // their values at the thread's last wgmma.fence, or as a wgmma left them
    InFlight* newest = nullptr;   // the wgmma in flight that lands in them last
};

struct InFlight {
    std::shared_ptr<Wgmma> op;
    unsigned member;            // the thread's place in its warpgroup
    uint64_t serial;            // the run of the statement that issued it
    uint64_t group;             // its wgmma-group, 0 while uncommitted
    Registers* to;              // where its result lands: the issuing statement's registers (slots) while that
    std::vector<int> slots;     // statement runs, their variables after
    bool superseded = false;    // a later wgmma on the same registers lands there instead
};

struct ThreadState {
    bool fenced = false;
    uint64_t issued = 0, committed = 0;
    std::deque<InFlight> flight;  // issued and not yet complete, oldest first; its elements stay where they are
    std::list<Registers> sets;
};

struct Block {
    std::vector<ThreadState> threads;
    std::map<std::pair<unsigned, uint64_t>, std::shared_ptr<Wgmma>> arriving;  // (warpgroup, sequence number)
};

unsigned thread_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

mmemu_dim3 thread_of(unsigned rank) {
    return {rank % blockDim.x, rank / blockDim.x % blockDim.y, rank / blockDim.x / blockDim.y};
}

Block& current_block() {
    static std::map<uint64_t, Block> blocks;
    static std::deque<uint64_t> order;  // of arrival: a block long past is forgotten
    uint64_t id = blockIdx.x + uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
    auto found = blocks.find(id);
    if (found != blocks.end()) return found->second;
    if (order.size() == kKeptBlocks) {
        blocks.erase(order.front());
        order.pop_front();
    }
    order.push_back(id);
    Block& block = blocks[id];
    block.threads.resize(blockDim.x * blockDim.y * blockDim.z);
    return block;
}

ThreadState& current_thread() { return current_block().threads[thread_rank()]; }

uint32_t poison(const Wgmma& op) { return op.in->acc == Type::kF16 ? kPoison16x2 : kPoison32; }

// An accumulator's variable, read unchecked by AddressSanitizer: one whose function has returned is read only to
// be found changed.
__attribute__((no_sanitize_address)) uint32_t value_of(const unsigned char* variable) {
    uint32_t value;
    __builtin_memcpy(&value, variable, sizeof value);
    return value;
}

// ---- the operands ------------------------------------------------------------------------------------------------
// An operand the PTX ISA wants as an immediate: a number in the text or an "n" operand (ptxas takes no register).
int32_t immediate(const Context& c, size_t operand, const char* name) {
    const Value& v = c.in.operands[operand].values[0];
    if (v.reg >= 0 && !c.call.constant(v.reg))
        mmemu_violation("%s at line %d: %s is a register; the PTX ISA wants an immediate there", c.op(), c.line, name);
    return int32_t(uint32_t(c.get(v)));
}

int32_t one_of(const Context& c, size_t operand, const char* name, int32_t x, int32_t y) {
    int32_t value = immediate(c, operand, name);
    if (value != x && value != y)
        mmemu_violation("%s at line %d: %s is %d; the PTX ISA allows %d or %d", c.op(), c.line, name, value, x, y);
    return value;
}

// The wgmma's description from the operands of the calling thread.
Wgmma describe(const Context& c, unsigned rank) {
    const Instruction& in = c.in;
    Wgmma op;
    op.in = &in;
    op.line = c.line;
    op.first = rank;
    op.b_desc = c.get(2);
    op.a_in_registers = in.operands[1].kind == Operand::kVector;
    if (!op.a_in_registers) op.a_desc = c.get(1);
    const Operand& scale_d = in.operands[3];
    op.scale_d = scale_d.values[0].predicate ? c.get(scale_d.values[0]) != 0 : one_of(c, 3, "scale-d", 0, 1);
    op.scale_a = one_of(c, 4, "imm-scale-a", 1, -1);
    op.scale_b = one_of(c, 5, "imm-scale-b", 1, -1);
    if (in.operands.size() == 8) op.trans_a = one_of(c, 6, "imm-trans-a", 0, 1);
    if (in.operands.size() > 6) op.trans_b = one_of(c, in.operands.size() - 1, "imm-trans-b", 0, 1);
    return op;
}

// Every thread of the warpgroup gives the same wgmma: the same instruction, descriptors and immediates.
void agree(const Wgmma& op, const Wgmma& mine, unsigned rank) {
    mmemu_dim3 t = thread_of(rank), f = thread_of(op.first);
    if (op.in != mine.in)
        mmemu_violation("the threads of a warpgroup are at different wgmma.mma_async instructions: line %d (thread "
                        "(%u,%u,%u)) and line %d (thread (%u,%u,%u))", op.line, f.x, f.y, f.z, mine.line, t.x, t.y,
                        t.z);
    const std::pair<const char*, std::pair<uint64_t, uint64_t>> fields[] = {
        {"a-desc", {op.a_desc, mine.a_desc}},       {"b-desc", {op.b_desc, mine.b_desc}},
        {"scale-d", {op.scale_d, mine.scale_d}},    {"imm-scale-a", {uint64_t(op.scale_a), uint64_t(mine.scale_a)}},
        {"imm-scale-b", {uint64_t(op.scale_b), uint64_t(mine.scale_b)}}};
    for (const auto& [name, values] : fields)
        if (values.first != values.second)
            mmemu_violation("%s at line %d: thread (%u,%u,%u) gives %s 0x%llx where thread (%u,%u,%u) of its warpgroup "
                            "gave 0x%llx; every thread of the warpgroup must give the same", op.in->opcode.c_str(),
                            op.line, t.x, t.y, t.z, name, static_cast<unsigned long long>(values.second), f.x, f.y, f.z,
                            static_cast<unsigned long long>(values.first));
}

// A matrix descriptor's fields, in bytes.
struct Layout {
    uint32_t start, lbo, sbo, base;
    uint32_t width;  // the swizzle's row: 128, 64 or 32 bytes; 0 for none

    explicit Layout(uint64_t desc)
        : start(uint32_t(desc & 0x3fff) << 4), lbo(uint32_t(desc >> 16 & 0x3fff) << 4),
          sbo(uint32_t(desc >> 32 & 0x3fff) << 4), base(uint32_t(desc >> 49 & 7)),
          width(desc >> 62 ? 256u >> (desc >> 62) : 0) {}

    // The shared address of element (mn, k) of `size` bytes, mn being A's row or B's column.
    uint32_t address(bool mn_major, int mn, int k, int size) const {
        uint32_t t = 16 / uint32_t(size), m = uint32_t(mn), kk = uint32_t(k), s = uint32_t(size), at = start;
        if (!mn_major && width) at += m % 8 * width + m / 8 * sbo + kk % t * s + kk / t * 16;
        else if (!mn_major) at += m % 8 * 16 + m / 8 * sbo + kk % t * s + kk / t * lbo;
        else if (width) at += m % t * s + m / t % (width / 16) * 16 + m / (t * width / 16) * lbo + kk % 8 * width +
                              kk / 8 * sbo;
        else at += m % t * s + m / t * sbo + kk % 8 * 16 + kk / 8 * lbo;
        return width ? at ^ (((at >> 7) - base) & (width / 16 - 1)) << 4 : at;
    }
};

// The one place where wgmma reads shared memory: the 16-byte rows of core matrices (chunks) that A's and B's
// elements lie in, each checked to be the block's shared memory and read through the async proxy (the stores so far
// attributed once, then each chunk checked), and kept, for the wait to find them unchanged.  A and B come out
// row-major (64 x K and K x N), A only when it is not in registers.
void read_operands(const Context& c, Wgmma& op) {
    const Instruction& in = *op.in;
    mmemu_rt::proxy_look();
    const unsigned char* window = nullptr;  // shared address 0, as a pointer
    auto read = [&](uint64_t desc, bool mn_major, int mns, int size, bool of_a, std::vector<uint32_t>& out) {
        Layout layout(desc);
        out.resize(size_t(mns * in.k));
        int per_chunk = 16 / size;
        for (int mn = 0; mn < mns; ++mn)
            for (int k = 0; k < in.k; ++k) {
                uint32_t at = layout.address(mn_major, mn, k, size);
                if ((mn_major ? mn : k) % per_chunk == 0) {  // the first element of its chunk
                    Chunk chunk{at, of_a, {}};
                    const void* p = mmemu_shared_pointer(at, sizeof chunk.bytes, c.op(), c.line);
                    mmemu_rt::proxy_check(p, sizeof chunk.bytes, c.op(), c.line);
                    std::memcpy(chunk.bytes, p, sizeof chunk.bytes);
                    op.read.push_back(chunk);
                    window = static_cast<const unsigned char*>(p) - at;
                }
                uint32_t bits = 0;
                const unsigned char* element = window + at;
                if (size == 4) std::memcpy(&bits, element, 4);  // each size its own copy: one load, not a call
                else if (size == 2) std::memcpy(&bits, element, 2);
                else std::memcpy(&bits, element, 1);
                out[of_a ? size_t(mn * in.k + k) : size_t(k * mns + mn)] = bits;
            }
    };
    if (!op.a_in_registers) read(op.a_desc, op.trans_a, 64, bytes_of(in.a), true, op.a_bits);
    read(op.b_desc, op.trans_b, in.n, bytes_of(in.b), false, op.b_bits);
}

// Shared memory that a wgmma read, found unchanged at the wait that completes it.
void check_unchanged(const Context& c, const Wgmma& op) {
    for (const Chunk& chunk : op.read) {
        const auto* p = static_cast<const unsigned char*>(mmemu_shared_pointer(chunk.address, 16, c.op(), c.line));
        for (uint32_t i = 0; i < 16; ++i) {
            if (p[i] == chunk.bytes[i]) continue;
            mmemu_rt::proxy_look();
            mmemu_violation("wgmma.mma_async at line %d: the shared memory it reads (%s, at shared address 0x%x) "
                            "was written (by %s) between its issue and the wgmma.wait_group at line %d that completes "
                            "it: a race, since a wgmma reads its operands at any time until then", op.line,
                            chunk.of_a ? "A" : "B", chunk.address + i, mmemu_rt::proxy_writer(p + i).text, c.line);
        }
    }
}

// ---- the arithmetic ----------------------------------------------------------------------------------------------
// Accumulator element x (0 .. N/2 - 1) of the warpgroup's thread t, as the PTX ISA lays out wgmma's D: warp t / 32
// holds rows 16 (t / 32) .. + 15, and in it lane 4 groupID + threadID_in_group holds, of each 8 columns, row
// groupID's and groupID + 8's columns 2 threadID_in_group and + 1; an f16 register holds two, the first low.
std::pair<int, int> d_position(unsigned t, int x) {
    int lane = int(t % 32), group = lane / 4, thread = lane % 4;
    return {16 * int(t / 32) + group + 8 * (x % 4 / 2), 8 * (x / 4) + 2 * thread + x % 2};
}

// Where each thread's accumulator elements (d_position's x) lie in D (64 x n, row-major), thread by thread, made
// once for each n.
const std::vector<uint32_t>& d_offsets(int n) {
    static std::map<int, std::vector<uint32_t>> made;
    std::vector<uint32_t>& offsets = made[n];
    if (offsets.empty()) {
        int elements = n / 2;  // a thread's
        offsets.resize(size_t(kWarpgroup) * size_t(elements));
        for (unsigned t = 0; t < kWarpgroup; ++t)
            for (int x = 0; x < elements; ++x) {
                auto [i, j] = d_position(t, x);
                offsets[t * size_t(elements) + size_t(x)] = uint32_t(i * n + j);
            }
    }
    return offsets;
}

// Element (i, k) of an A in registers: warp i / 16's, laid out as mma.sync's A of 16 rows (ptx_mma.cpp's product).
uint32_t a_register_element(const Wgmma& op, int i, int k, int& index) {
    int size = bytes_of(op.in->a), per = 4 / size, half_k = 4 * per, row = i % 16;
    int lane = (row % 8) * 4 + (k % half_k) / per, reg = (row >= 8) + 2 * (k >= half_k);
    index = k % per;
    return op.a_words[size_t((i / 16 * 32 + lane) * 4 + reg)];
}

// row[j] += x y[j] for j < n, a multiple of 4: one product for each of n sums, four sums at a time.
void add_products(float* row, float x, const float* y, int n) {
    typedef float Four __attribute__((vector_size(16)));
    for (int j = 0; j < n; j += 4) {
        Four sums, ys;
        std::memcpy(&sums, row + j, sizeof sums);
        std::memcpy(&ys, y + j, sizeof ys);
        sums += x * ys;
        std::memcpy(row + j, &sums, sizeof sums);
    }
}

bool finite(const std::vector<float>& values) {
    return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// Whether adding a zero leaves each of D's elements [from, to) as it is: none is -0 (-0 + +0 is +0) or a NaN (a
// signalling one is quietened).
bool unmoved(const float* from, const float* to) {
    bool all = true;  // every element looked at, so that the loop is vectorized
    for (const float* d = from; d < to; ++d) {
        uint32_t bits;
        std::memcpy(&bits, d, sizeof bits);
        all &= bits != 0x80000000u && (bits & 0x7fffffffu) <= 0x7f800000u;
    }
    return all;
}

void compute(const Context& c, Wgmma& op) {
    const Instruction& in = *op.in;
    check_unchanged(c, op);
    int k = in.k, n = in.n;
    std::vector<float> a(size_t(64 * k)), b(size_t(k * n));
    for (int i = 0; i < 64; ++i)
        for (int kk = 0; kk < k; ++kk) {
            int index = 0;
            uint32_t word = op.a_in_registers ? a_register_element(op, i, kk, index) : op.a_bits[size_t(i * k + kk)];
            a[size_t(i * k + kk)] = float(op.scale_a) * real(word, index, in.a);
        }
    for (size_t e = 0; e < b.size(); ++e) b[e] = float(op.scale_b) * real(op.b_bits[e], 0, in.b);
    size_t regs = op.regs();
    int per = in.acc == Type::kF16 ? 2 : 1;
    const std::vector<uint32_t>& offsets = d_offsets(n);
    // D (64 x N) from C, gathered from the threads' registers (a chained wgmma's result where a thread has one),
    // then the K exact products added in k order, a row at a time (each sum in its own order: a vector of them).
    std::vector<float> d(size_t(64 * n), 0.0f);
    for (unsigned t = 0; t < kWarpgroup && op.scale_d; ++t) {
        const Wgmma* from = op.chained[t].get();
        if (from && !from->computed) compute(c, *op.chained[t]);
        const uint32_t* words = from ? &from->d[t * regs] : &op.c[t * regs];
        const uint32_t* at = &offsets[t * regs * size_t(per)];
        for (size_t r = 0; r < regs; ++r)
            for (int e = 0; e < per; ++e) d[at[r * size_t(per) + size_t(e)]] = real(words[r], e, in.acc);
    }
    // A thin problem's tiles are mostly zeros (a TMA's fill past the matrix, a guard's stores): a zero row of A, or
    // B's columns past its last nonzero one, add only zeros to D, which leave an unmoved element where it is, so
    // long as the other operand is finite (0 * inf is a NaN).  Such products are not made.
    bool a_finite = finite(a), b_finite = finite(b);
    int width = 0;  // B's columns up to its last nonzero one, in fours
    for (int kk = 0; kk < k; ++kk)
        for (int j = n - 1; j >= width; --j)
            if (b[size_t(kk * n + j)] != 0.0f) {
                width = (j + 4) / 4 * 4;
                break;
            }
    for (int i = 0; i < 64; ++i) {
        float* row = &d[size_t(i * n)];
        const float* ai = &a[size_t(i * k)];
        if (b_finite && std::all_of(ai, ai + k, [](float v) { return v == 0.0f; }) &&
            (!op.scale_d || unmoved(row, row + n)))
            continue;
        int columns = a_finite && (!op.scale_d || unmoved(row + width, row + n)) ? width : n;
        for (int kk = 0; kk < k; ++kk) add_products(row, ai[kk], &b[size_t(kk * n)], columns);
    }
    op.d.assign(kWarpgroup * regs, 0);
    for (unsigned t = 0; t < kWarpgroup; ++t) {
        const uint32_t* at = &offsets[t * regs * size_t(per)];
        for (size_t r = 0; r < regs; ++r) {
            uint32_t word = 0;
            for (int e = 0; e < per; ++e) {
                float sum = d[at[r * size_t(per) + size_t(e)]];
                word |= per == 2 ? uint32_t(mmemu::Fp16Format::round(sum)) << (16 * e) : float_bits(sum);
            }
            op.d[t * regs + r] = word;
        }
    }
    op.computed = true;
}

// ---- the instructions --------------------------------------------------------------------------------------------
int all_arrived(const void* op) { return static_cast<const Wgmma*>(op)->arrived == kWarpgroup; }

// A register's key: its variable's address, or for a register the statement declares, that run of the statement
// and the register's place in it (no address: those are below 2^63).
uintptr_t key_of(const Call& call, int slot) {
    return slot < call.count ? uintptr_t(call.operands[slot].bits) : uintptr_t(1) << 63 | call.serial << 16 | slot;
}

bool declared(uintptr_t key) { return key >> 63; }

// The thread's set of these registers: the one that holds them in this order, or a new one, for which any other set
// that holds some of them is forgotten (a wgmma in flight on it is a wgmma of another shape on its registers).
Registers& registers_of(const Context& c, ThreadState& me, const std::vector<uintptr_t>& keys) {
    for (Registers& set : me.sets)
        if (set.keys == keys) return set;
    if (me.sets.empty()) return me.sets.emplace_back(Registers{keys, {}, nullptr});  // a thread's first: none to forget
    std::unordered_set<uintptr_t> mine(keys.begin(), keys.end());
    for (auto set = me.sets.begin(); set != me.sets.end();) {
        bool shared = std::any_of(set->keys.begin(), set->keys.end(), [&](uintptr_t k) { return mine.count(k); });
        if (shared && set->newest)
            mmemu_violation("%s at line %d: its accumulators are in part those of the wgmma.mma_async at line %d, "
                            "in flight; only a wgmma of the same shape on the same accumulators may follow one in "
                            "flight", c.op(), c.line, set->newest->op->line);
        set = shared ? me.sets.erase(set) : std::next(set);
    }
    me.sets.push_back(Registers{keys, {}, nullptr});
    return me.sets.back();
}

void issue(const Context& c) {
    const Instruction& in = c.in;
    unsigned rank = thread_rank(), threads = blockDim.x * blockDim.y * blockDim.z, group = rank / kWarpgroup;
    if ((group + 1) * kWarpgroup > threads)
        mmemu_violation("%s at line %d: warpgroup %u (threads %u to %u) is not whole, the block having %u threads; a "
                        "wgmma is issued by the 4 warps of a warpgroup", c.op(), c.line, group, group * kWarpgroup,
                        (group + 1) * kWarpgroup - 1, threads);
    Block& block = current_block();
    ThreadState& me = block.threads[rank];
    if (!me.fenced)
        mmemu_violation("%s at line %d: no wgmma.fence before the warpgroup's first wgmma.mma_async", c.op(), c.line);
    Wgmma mine = describe(c, rank);
    // The accumulators: their values, and the wgmma in flight whose result they are, if any.
    const std::vector<Value>& acc = in.operands[0].values;
    // Its words and keys, in buffers that every fiber of the launch shares: used up before it waits for the others.
    static std::vector<uint32_t> words;
    static std::vector<uintptr_t> keys;
    words.resize(acc.size());
    keys.resize(acc.size());
    std::vector<int> slots(acc.size());
    for (size_t r = 0; r < acc.size(); ++r) {
        int slot = slots[r] = acc[r].reg;
        if (slot < c.call.count && !c.call.output(slot))
            mmemu_violation("%s at line %d: accumulator %%%d is an input of the asm statement; a wgmma writes its "
                            "accumulators (\"+f\" or \"+r\")", c.op(), c.line, slot);
        if (slot < c.call.count && c.call.operands[slot].pointee != 4)
            mmemu_violation("%s at line %d: accumulator %%%d is a %llu-byte variable; they are 32-bit registers",
                            c.op(), c.line, slot, static_cast<unsigned long long>(c.call.operands[slot].pointee));
        words[r] = uint32_t(c.get(acc[r]));
        keys[r] = key_of(c.call, slot);
    }
    Registers& set = registers_of(c, me, keys);
    std::shared_ptr<Wgmma> from;
    if (InFlight* earlier = set.newest) {
        if (earlier->op->in->n != in.n || earlier->op->in->acc != in.acc)
            mmemu_violation("%s at line %d: its accumulators are those of the wgmma.mma_async at line %d, in flight, "
                            "of another shape; only a wgmma of the same shape may follow one in flight", c.op(),
                            c.line, earlier->op->line);
        from = earlier->op;
        earlier->superseded = true;
    }
    for (size_t r = 0; r < acc.size() && !set.known.empty(); ++r)
        if (words[r] != set.known[r])
            mmemu_violation(from ? "%s at line %d: accumulator %%%d of the wgmma.mma_async at line %d was written "
                                   "before the wgmma.wait_group that completes it"
                                 : "%s at line %d: accumulator %%%d was written since the thread's last wgmma.fence; "
                                   "a wgmma.fence must come between a write to a wgmma's registers and the wgmma",
                            c.op(), c.line, slots[r], from ? from->line : 0);
    // Meet the warpgroup: the first thread to come describes the wgmma, each adds its fragments.
    auto arrival = std::make_pair(group, me.issued++);
    std::shared_ptr<Wgmma>& arriving = block.arriving[arrival];
    if (!arriving) {
        arriving = std::make_shared<Wgmma>(mine);
        arriving->c.resize(kWarpgroup * acc.size());
        arriving->chained.resize(kWarpgroup);
        if (mine.a_in_registers) arriving->a_words.resize(kWarpgroup * 4);
    }
    std::shared_ptr<Wgmma> op = arriving;
    agree(*op, mine, rank);
    unsigned member = rank % kWarpgroup;
    std::copy(words.begin(), words.end(), op->c.begin() + std::ptrdiff_t(member * acc.size()));
    op->chained[member] = from;
    if (op->a_in_registers)
        for (size_t r = 0; r < 4; ++r) op->a_words[member * 4 + r] = uint32_t(c.get(in.operands[1].values[r]));
    if (++op->arrived == kWarpgroup) {
        block.arriving.erase(arrival);
        read_operands(c, *op);
    }
    mmemu_rv_poll(all_arrived, op.get(), c.op(), c.line);
    for (const Value& v : acc) c.set(v, poison(*op));
    set.known.assign(acc.size(), poison(*op));
    me.flight.push_back(InFlight{op, member, c.call.serial, 0, &set, std::move(slots)});
    set.newest = &me.flight.back();
}

// wgmma.fence: the registers' values as they are now are those the next wgmmas may read.
void fence() {
    ThreadState& me = current_thread();
    me.fenced = true;
    for (Registers& set : me.sets)
        if (!set.newest && !declared(set.keys[0]))
            for (size_t r = 0; r < set.keys.size(); ++r)
                set.known[r] = value_of(reinterpret_cast<const unsigned char*>(set.keys[r]));
}

void commit() {
    ThreadState& me = current_thread();
    ++me.committed;
    for (InFlight& e : me.flight)
        if (!e.group) e.group = me.committed;
}

// Where a wgmma's register r lands now: the issuing statement's register while it runs (null), else its variable.
uint32_t* landing(const Context& c, const InFlight& e, size_t r) {
    if (e.serial == c.call.serial) return nullptr;
    if (declared(e.to->keys[r]))
        mmemu_violation("%s at line %d: the wgmma.mma_async at line %d that it completes had accumulators declared in "
                        "its asm statement (.reg), which ended before this wait", c.op(), c.line, e.op->line);
    return reinterpret_cast<uint32_t*>(e.to->keys[r]);
}

// wgmma.wait_group N: every wgmma-group of the thread but the newest N completes, its results landing.
void wait(const Context& c) {
    uint64_t pending = uint64_t(uint32_t(immediate(c, 0, "N")));
    ThreadState& me = current_thread();
    if (me.committed <= pending) return;
    uint64_t last = me.committed - pending;
    while (!me.flight.empty() && me.flight.front().group && me.flight.front().group <= last) {
        InFlight& e = me.flight.front();
        Wgmma& op = *e.op;
        if (!op.computed) compute(c, op);
        size_t regs = op.regs();
        for (size_t r = 0; r < regs && !e.superseded; ++r) {
            uint32_t* variable = landing(c, e, r), value = op.d[e.member * regs + r];
            uint32_t now = variable ? value_of(reinterpret_cast<const unsigned char*>(variable))
                                    : uint32_t(c.regs[size_t(e.slots[r])]);
            if (now != poison(op))
                mmemu_violation("%s at line %d: accumulator %%%d of the wgmma.mma_async at line %d was written before "
                                "this wgmma.wait_group, which completes it", c.op(), c.line, e.slots[r], op.line);
            e.to->known[r] = value;
            if (!variable) {  // the issuing statement's register, which it copies to its variable as it ends
                c.regs[size_t(e.slots[r])] = value;
                continue;
            }
            *variable = value;
            for (int i = 0; i < c.call.count; ++i)  // an output of this statement that is the variable ends as it
                if (c.call.output(i) && c.call.operands[i].bits == reinterpret_cast<uint64_t>(variable))
                    c.regs[size_t(i)] = value;
        }
        if (e.to->newest == &e) e.to->newest = nullptr;
        me.flight.pop_front();
    }
}

}  // namespace

bool decode_wgmma(Instruction& in, const std::vector<std::string>& q) {
    if (q.size() > 1 && q[1] == "mma_async") return decode_mma_async(in, q);
    if (q.size() != 4 || q[2] != "sync" || q[3] != "aligned") return false;
    in.op = q[1] == "fence" ? Op::kWgmmaFence : q[1] == "commit_group" ? Op::kWgmmaCommit : Op::kWgmmaWait;
    if (q[1] == "wait_group") return shaped(in, "s");
    return (q[1] == "fence" || q[1] == "commit_group") && shaped(in, "");
}

void run_wgmma(const Context& c) {
    switch (c.in.op) {
        case Op::kWgmmaFence: return fence();
        case Op::kWgmmaCommit: return commit();
        case Op::kWgmmaWait: return wait(c);
        default: return issue(c);
    }
}

}  // namespace mmemu_ptx
