// The tensor-core instructions of tutorials in inline PTX (part of libmmemu.so; ptx_parse.cpp parses the statement,
// ptx.cpp hands these over), with the PTX ISA's semantics:
//   mma.sync.aligned.m16n8k16 / m16n8k8 .row.col with .f16 inputs and f16 or f32 accumulators, .bf16 inputs and
//     f32 accumulators, and m16n8k8 with .tf32 inputs and f32 accumulators;
//   mma.sync.aligned.m16n8k16 / m16n8k32 .row.col{.satfinite}.s32 with .s8 or .u8 inputs (A's and B's each), and
//     m16n8k32 .row.col.f32 with .e4m3 or .e5m2 inputs (A's and B's each) and f32 accumulators;
//   ldmatrix.sync.aligned.m8n8 .x1/.x2/.x4 {.trans} {.shared{::cta}} .b16, and stmatrix, its inverse.
//
// mma.sync, ldmatrix and stmatrix are warp-collective: every lane's operands meet at a gather (mmemu_rv_gather),
// each lane computes its own destination registers (or rows) from them, and a second gather keeps every lane's
// operands alive until all have.  Arithmetic of mma: D[i][j] starts from C[i][j] and adds the K products
// A[i][k] B[k][j] in k order in float, rounding each sum to nearest; every product is exact in float (f16 and bf16
// have at most 11 significant bits, tf32 11, e4m3 4 and e5m2 3), and a f16 D is rounded once at the end.  Tensor
// cores also form exact products but add them with their own alignment, order and rounding, so results are the
// GPU's exactly where the sums are exact and may differ in the last bits otherwise (as WMMA's, include/mma.h).  A
// .tf32 operand is read as its top 19 bits, the float with the 13 low fraction bits dropped.  An integer D is C
// plus the products, exactly, wrapped to 32 bits, or with .satfinite clamped to the range of int32.
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "include/mmemu_float16.h"
#include "ptx.h"

namespace {

using namespace mmemu_ptx;

bool int8(Type type) { return type == Type::kS8 || type == Type::kU8; }
bool fp8(Type type) { return type == Type::kE4m3 || type == Type::kE5m2; }

// Whether the emulator runs this combination of inputs, K and accumulators, each one the PTX ISA has.
bool mma_runs(const Instruction& in) {
    if (int8(in.a) && int8(in.b)) return in.acc == Type::kS32 && in.k != 8;
    if (in.satfinite) return false;  // integers only
    if (fp8(in.a) && fp8(in.b)) return in.acc == Type::kF32 && in.k == 32;
    if (in.a != in.b || in.k == 32) return false;
    switch (in.a) {
        case Type::kF16: return in.acc == Type::kF16 || in.acc == Type::kF32;
        case Type::kBf16: return in.acc == Type::kF32;
        case Type::kTf32: return in.acc == Type::kF32 && in.k == 8;
        default: return false;
    }
}

// An 8-bit float, exactly: e4m3 (exponent bias 7, no infinities, NaN only at S.1111.111) or e5m2 (bias 15, IEEE's
// infinities and NaNs).
float fp8(uint8_t bits, Type type) {
    bool e4m3 = type == Type::kE4m3;
    int fraction_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, top = e4m3 ? 15 : 31;
    int exponent = (bits & 0x7f) >> fraction_bits, fraction = bits & ((1 << fraction_bits) - 1);
    float magnitude;
    if (exponent == top && (!e4m3 || fraction == 7)) magnitude = e4m3 || fraction ? NAN : INFINITY;
    else magnitude = std::ldexp(float(exponent ? fraction | 1 << fraction_bits : fraction),
                                (exponent ? exponent : 1) - bias - fraction_bits);
    return bits & 0x80 ? -magnitude : magnitude;
}

}  // namespace

namespace mmemu_ptx {

bool mma_type(const std::string& name, Type& type) {
    static const std::map<std::string, Type> types = {
        {"f16", Type::kF16},   {"bf16", Type::kBf16}, {"tf32", Type::kTf32}, {"f32", Type::kF32}, {"e4m3", Type::kE4m3},
        {"e5m2", Type::kE5m2}, {"s8", Type::kS8},     {"u8", Type::kU8},     {"s32", Type::kS32}};
    auto found = types.find(name);
    if (found == types.end()) return false;
    type = found->second;
    return true;
}

int bytes_of(Type type) {
    switch (type) {
        case Type::kF16: case Type::kBf16: return 2;
        case Type::kE4m3: case Type::kE5m2: case Type::kS8: case Type::kU8: return 1;
        default: return 4;
    }
}

bool decode_mma(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kMma;
    in.satfinite = q.size() == 11 && q[6] == "satfinite";
    size_t d = in.satfinite ? 7 : 6;  // .dtype, then .atype, .btype and .ctype
    if (q.size() != d + 4 || q[1] != "sync" || q[2] != "aligned" || q[4] != "row" || q[5] != "col" ||
        q[d] != q[d + 3])  // ptxas wants .dtype = .ctype
        return false;
    in.k = q[3] == "m16n8k8" ? 8 : q[3] == "m16n8k16" ? 16 : q[3] == "m16n8k32" ? 32 : 0;
    if (!in.k || !mma_type(q[d], in.acc) || !mma_type(q[d + 1], in.a) || !mma_type(q[d + 2], in.b) || !mma_runs(in))
        return false;
    // A's 16 x K and B's K x 8 elements packed into the 32 lanes' 32-bit registers.
    size_t a = size_t(in.k * bytes_of(in.a) / 8), b = size_t(in.k * bytes_of(in.b) / 16);
    size_t acc = in.acc == Type::kF16 ? 2 : 4;
    return shaped(in, "vvvv") && registers(in.operands[0], acc) && in.operands[1].values.size() == a &&
           in.operands[2].values.size() == b && in.operands[3].values.size() == acc;
}

// ldmatrix / stmatrix .sync.aligned.m8n8 .x1/.x2/.x4 {.trans} {.shared{::cta}} .b16, qualifiers in any order.
bool decode_matrix(Instruction& in, const std::vector<std::string>& q) {
    bool load = q[0] == "ldmatrix";
    in.op = load ? Op::kLdmatrix : Op::kStmatrix;
    if (q.size() < 6 || q[1] != "sync" || q[2] != "aligned") return false;
    bool shape = false, type = false;
    in.count = 0;
    for (size_t i = 3; i < q.size(); ++i) {
        if (q[i] == "m8n8") shape = true;
        else if (q[i] == "b16") type = true;
        else if (q[i] == "x1" || q[i] == "x2" || q[i] == "x4") in.count = q[i][1] - '0';
        else if (q[i] == "trans") in.trans = true;
        else if (q[i] == "shared" || q[i] == "shared::cta") in.space = Space::kShared;
        else return false;
    }
    if (!shape || !type || !in.count || !shaped(in, load ? "va" : "av")) return false;
    const Operand& fragments = in.operands[load ? 0 : 1];
    return load ? registers(fragments, size_t(in.count)) : fragments.values.size() == size_t(in.count);
}

// Every 8-bit float of a type, decoded once: a tensor-core kernel decodes millions.
const float* fp8_values(Type type) {
    static const auto tables = [] {
        std::array<std::array<float, 256>, 2> values{};
        for (int bits = 0; bits < 256; ++bits) {
            values[0][size_t(bits)] = fp8(uint8_t(bits), Type::kE4m3);
            values[1][size_t(bits)] = fp8(uint8_t(bits), Type::kE5m2);
        }
        return values;
    }();
    return tables[type == Type::kE5m2].data();
}

}  // namespace mmemu_ptx

namespace {

using namespace mmemu_ptx;

// ---- mma.sync ----
// A lane's operands, each element of its A and B registers also decoded (a value of the inputs' type, exactly, as
// a float or, for integer inputs, an integer), once: every lane of the warp reads them, 16 rows or 8 columns of it.
struct MmaLane {
    const Instruction* at;
    uint32_t a[4], b[2], c[4];
    float real_a[16], real_b[8];
    int32_t int_a[16], int_b[8];
};

// Element `index` of a register of `type`s as an integer.
int64_t integer(uint32_t word, int index, Type type) {
    uint8_t byte = uint8_t(word >> 8 * index);
    return type == Type::kS8 ? int8_t(byte) : type == Type::kU8 ? int64_t(byte) : int32_t(word);
}

// The elements of `count` registers of `type`s, register after register, the low bits' first.
template <class Number>
void decode(const uint32_t* words, size_t count, Type type, Number* out) {
    int per = 4 / bytes_of(type);
    for (size_t w = 0; w < count; ++w)
        for (int e = 0; e < per; ++e) {
            if constexpr (std::is_same_v<Number, float>) out[w * size_t(per) + size_t(e)] = real(words[w], e, type);
            else out[w * size_t(per) + size_t(e)] = Number(integer(words[w], e, type));
        }
}

// D[i][j], its bits, from C[i][j] and the lanes' A and B, as the PTX ISA lays out the fragments ("Matrix Fragments
// for mma.m16n8k8", "... m16n8k16", "... m16n8k32"): lane 4 * groupID + threadID_in_group holds, of A, rows groupID
// and groupID + 8, and of B, column groupID.  A register packs `per` k-neighbours, the lowest k in the low bits;
// registers run over the row halves of A first, then over k's halves.  k = half * 4 per + lane's q * per + e, so the
// loops below run over k in order.
uint32_t product(const Instruction& in, const MmaLane* const* lanes, uint32_t c_word, int c_index, int i, int j) {
    int per = 4 / bytes_of(in.a), halves = in.k / (4 * per), row = i % 8, upper = i >= 8;
    if (in.acc == Type::kS32) {
        int64_t sum = integer(c_word, c_index, in.acc);
        for (int half = 0; half < halves; ++half)
            for (int q = 0; q < 4; ++q) {
                const int32_t* a = lanes[row * 4 + q]->int_a + (upper + 2 * half) * per;
                const int32_t* b = lanes[j * 4 + q]->int_b + half * per;
                for (int e = 0; e < per; ++e) sum += int64_t(a[e]) * b[e];
            }
        return uint32_t(in.satfinite ? std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX) : sum);
    }
    float sum = real(c_word, c_index, in.acc);
    for (int half = 0; half < halves; ++half)
        for (int q = 0; q < 4; ++q) {
            const float* a = lanes[row * 4 + q]->real_a + (upper + 2 * half) * per;
            const float* b = lanes[j * 4 + q]->real_b + half * per;
            for (int e = 0; e < per; ++e) sum += a[e] * b[e];  // the product is exact; the sum rounds
        }
    return in.acc == Type::kF16 ? mmemu::Fp16Format::round(sum) : float_bits(sum);
}

constexpr char kMma[] = "mma.sync", kLdmatrix[] = "ldmatrix", kStmatrix[] = "stmatrix";

template <class Record>
void gather(const Context& c, const Record& mine, const char* op, const Record* (&lanes)[32]) {
    const void* all[32];
    mmemu_rv_gather(&mine, all, op, c.line);
    for (int l = 0; l < 32; ++l) {
        lanes[l] = static_cast<const Record*>(all[l]);
        if (lanes[l]->at != &c.in)
            mmemu_violation("%s at line %d: lane %d is at another %s instruction of the same line; all lanes of the "
                            "warp must run the same one", c.op(), c.line, l, op);
    }
}

void mma(const Context& c) {
    const Instruction& in = c.in;
    MmaLane mine{&in, {}, {}, {}, {}, {}, {}, {}};
    size_t a_count = in.operands[1].values.size(), b_count = in.operands[2].values.size();
    for (size_t i = 0; i < a_count; ++i) mine.a[i] = uint32_t(c.get(in.operands[1].values[i]));
    for (size_t i = 0; i < b_count; ++i) mine.b[i] = uint32_t(c.get(in.operands[2].values[i]));
    for (size_t i = 0; i < in.operands[3].values.size(); ++i) mine.c[i] = uint32_t(c.get(in.operands[3].values[i]));
    if (in.acc == Type::kS32) {
        decode(mine.a, a_count, in.a, mine.int_a);
        decode(mine.b, b_count, in.b, mine.int_b);
    } else {
        decode(mine.a, a_count, in.a, mine.real_a);
        decode(mine.b, b_count, in.b, mine.real_b);
    }
    const MmaLane* lanes[32];
    gather(c, mine, kMma, lanes);
    // Element r (0..3) of C and D is (groupID + 8 (r / 2), 2 threadID_in_group + r % 2); `per` of them a register,
    // the lower column in the low bits.
    int group = int(lane()) / 4, thread = int(lane()) % 4, per = 4 / bytes_of(in.acc);
    uint32_t d[4];
    for (int r = 0; r < 4; ++r)
        d[r] = product(in, lanes, mine.c[r / per], r % per, group + 8 * (r / 2), 2 * thread + r % 2);
    mmemu_rv_gather(nullptr, nullptr, kMma, c.line);
    const std::vector<Value>& out = in.operands[0].values;
    for (size_t n = 0; n < out.size(); ++n) {
        uint32_t word = 0;
        for (int e = 0; e < per; ++e) word |= d[n * size_t(per) + size_t(e)] << (32 / per * e);
        c.set(out[n], word);
    }
}

// ---- ldmatrix and stmatrix ----
struct RowAddress {
    const Instruction* at;
    uint64_t address;
};

// The 16-byte row at a lane's address: a shared address, or with no state space given a generic pointer, which
// must point into shared memory.
unsigned char* row(const Context& c, uint64_t address, int lane_of_row) {
    if (address % 16)
        mmemu_violation("%s at line %d: lane %d's row address 0x%llx is not 16-byte aligned", c.op(), c.line,
                        lane_of_row, static_cast<unsigned long long>(address));
    if (c.in.space == Space::kShared)
        return static_cast<unsigned char*>(mmemu_shared_pointer(address, 16, c.op(), c.line));
    void* pointer = reinterpret_cast<void*>(address);
    mmemu_shared_address(pointer, c.op(), c.line);
    return static_cast<unsigned char*>(pointer);
}

// Lanes 8 m .. 8 m + 7 give the rows of matrix m; lane l receives, of each matrix, row l / 4's elements 2 (l % 4)
// and 2 (l % 4) + 1, or with .trans column l / 4's elements at those rows (the lower one in the low half).
void ldmatrix(const Context& c) {
    const Instruction& in = c.in;
    const RowAddress mine{&in, c.address(1)}, *lanes[32];  // mine lives until every lane has read it
    gather(c, mine, kLdmatrix, lanes);
    const unsigned char* rows[32];
    for (int l = 0; l < 8 * in.count; ++l) rows[l] = row(c, lanes[l]->address, l);
    unsigned l = lane();
    uint32_t words[4];
    for (int m = 0; m < in.count; ++m) {
        uint16_t lo, hi;
        if (in.trans) {
            std::memcpy(&lo, rows[8 * m + 2 * (l % 4)] + 2 * (l / 4), 2);
            std::memcpy(&hi, rows[8 * m + 2 * (l % 4) + 1] + 2 * (l / 4), 2);
        } else {
            std::memcpy(&lo, rows[8 * m + l / 4] + 4 * (l % 4), 2);
            std::memcpy(&hi, rows[8 * m + l / 4] + 4 * (l % 4) + 2, 2);
        }
        words[m] = lo | uint32_t(hi) << 16;
    }
    mmemu_rv_gather(nullptr, nullptr, kLdmatrix, c.line);
    for (int m = 0; m < in.count; ++m) c.set(in.operands[0].values[size_t(m)], words[m]);
}

struct RowStore {
    const Instruction* at;
    uint64_t address;
    uint32_t words[4];
};

// stmatrix, ldmatrix's inverse: lanes 8 m .. 8 m + 7 give the rows of matrix m, and lane l's register m holds row
// l / 4's elements 2 (l % 4) and 2 (l % 4) + 1, or with .trans column l / 4's at those rows.  Lane l writes row l.
void stmatrix(const Context& c) {
    const Instruction& in = c.in;
    RowStore mine{&in, c.address(0), {}};
    for (int m = 0; m < in.count; ++m) mine.words[m] = uint32_t(c.get(in.operands[1].values[size_t(m)]));
    const RowStore* lanes[32];
    gather(c, mine, kStmatrix, lanes);
    int l = int(lane()), m = l / 8, r = l % 8;
    if (m < in.count) {
        unsigned char* out = row(c, mine.address, l);
        for (int e = 0; e < 8; ++e) {  // element e of row r: the fragment's (r, e), or with .trans its (e, r)
            int from = in.trans ? 4 * e + r / 2 : 4 * r + e / 2, half = in.trans ? r % 2 : e % 2;
            uint16_t bits = uint16_t(lanes[from]->words[m] >> (16 * half));
            std::memcpy(out + 2 * e, &bits, 2);
        }
    }
    mmemu_rv_gather(nullptr, nullptr, kStmatrix, c.line);
}

}  // namespace

namespace mmemu_ptx {

void run_mma(const Context& c) { mma(c); }

void run_matrix(const Context& c) { c.in.op == Op::kLdmatrix ? ldmatrix(c) : stmatrix(c); }

}  // namespace mmemu_ptx
