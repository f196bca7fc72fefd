// Inline PTX on the emulator (part of libmmemu.so).  The compile unit rewrites each asm statement of a kernel file
// into a call of mmemu_rv_asm (unit.py, shim.h); ptx_parse.cpp parses the statement's template, once per launch,
// and this file runs it on a register file of its own: the statement's operands, then the registers it declares
// (.reg, predicates among them), instruction after instruction, leaving out those whose guard (@p, @!p) is false
// and following bra to the statement's labels.
//
// Each instruction family has its file, which decodes and runs it with the PTX ISA's semantics:
//   here: cp.async.ca/.cg .shared{::cta}.global of 4, 8 or 16 bytes (with src-size), cp.async.commit_group,
//     cp.async.wait_group, cp.async.wait_all; cvta.to.shared / cvta.shared; ld and st (scalars, .v2, .v4) of the
//     .global, .shared or .shared::cluster state space or of a generic address, .weak, .volatile, .relaxed.scope,
//     .acquire.scope (ld) or .release.scope (st); mov (mov.pred too), integer cvt and cvt.rna.tf32.f32; lop3.b32
//     (any function of three words, as its immediate table says); setp (integer comparisons) and selp; bra{.uni};
//   ptx_mma.cpp: what tensor-core tutorials write: mma.sync, ldmatrix and stmatrix;
//   ptx_cluster.cpp: thread-block clusters: the special registers (%laneid, %tid, %ctaid, ... and the cluster's),
//     barrier.cluster, mapa, getctarank, atom and red, fence;
//   ptx_async.cpp: what Hopper kernels write: mbarrier, cp.async.bulk and cp.async.bulk.tensor (TMA, multicast
//     too), fence.proxy.async, elect.sync, and as the no-ops they are here setmaxnreg, griddepcontrol,
//     prefetch.tensormap, fence.proxy.tensormap and fence.mbarrier_init;
//   ptx_wgmma.cpp: wgmma.mma_async, .fence, .commit_group and .wait_group.
// Anything else (another instruction or form, a predicate where none is taken, a label the statement lacks) makes
// the statement unsupported: a launch that reaches it ends naming that instruction.
#include "mmemu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptx.h"

extern "C" mmemu_dim3 threadIdx, blockDim;

namespace mmemu_ptx {

unsigned lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32; }

bool scalar_type(const std::string& t, int& bytes, bool& sign) {
    static const std::map<std::string, std::pair<int, bool>> types = {
        {"b8", {1, false}},  {"u8", {1, false}},  {"s8", {1, true}},   {"b16", {2, false}}, {"u16", {2, false}},
        {"s16", {2, true}},  {"f16", {2, false}}, {"b32", {4, false}}, {"u32", {4, false}}, {"s32", {4, true}},
        {"f32", {4, false}}, {"b64", {8, false}}, {"u64", {8, false}}, {"s64", {8, true}},  {"f64", {8, false}}};
    auto found = types.find(t);
    if (found == types.end()) return false;
    bytes = found->second.first;
    sign = found->second.second;
    return true;
}

uint64_t mask(int bytes) { return bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1; }

uint64_t extend(uint64_t bits, int bytes, bool sign) {
    bits &= mask(bytes);
    if (sign && bytes < 8 && (bits >> (8 * bytes - 1) & 1)) bits |= ~mask(bytes);
    return bits;
}

}  // namespace mmemu_ptx

namespace {

using namespace mmemu_ptx;

bool decode_cp(Instruction& in, const std::vector<std::string>& q) {
    if (q.size() < 3 || q[1] != "async") return false;
    if (q.size() == 3) {
        in.op = q[2] == "commit_group" ? Op::kCommit : q[2] == "wait_group" ? Op::kWaitGroup : Op::kWaitAll;
        if (q[2] == "wait_group") return shaped(in, "s");
        return (q[2] == "commit_group" || q[2] == "wait_all") && shaped(in, "");
    }
    if ((q[2] != "ca" && q[2] != "cg") || q.size() < 5 || (q[3] != "shared" && q[3] != "shared::cta") ||
        q[4] != "global")
        return false;
    for (size_t i = 5; i < q.size(); ++i)  // prefetch sizes are hints; a cache hint would bring a policy operand
        if (q[i] != "L2::64B" && q[i] != "L2::128B" && q[i] != "L2::256B") return false;
    in.op = Op::kCpAsync;
    in.bytes = q[2] == "cg" ? 16 : 0;  // .cg copies 16 bytes only
    return shaped(in, "aas") || shaped(in, "aass");
}

// What a qualifier of ld or st before its type names: a memory order, a scope, a state space or a vector.
enum class Said { kOrder, kScope, kSpace, kVector };

// ld and st: a memory order (.weak or .volatile, or .relaxed, .acquire (ld) or .release (st) with a scope), a state
// space (.global, .shared{::cta}, .shared::cluster, or none: a generic address), .v2 or .v4, each at most once and in
// any order, as ptxas takes them, then the type.
bool decode_memory(Instruction& in, const std::vector<std::string>& q) {
    static const std::map<std::string, Said> said = {
        {"weak", Said::kOrder},    {"volatile", Said::kOrder}, {"relaxed", Said::kOrder}, {"acquire", Said::kOrder},
        {"release", Said::kOrder}, {"cta", Said::kScope},      {"cluster", Said::kScope}, {"gpu", Said::kScope},
        {"sys", Said::kScope},     {"global", Said::kSpace},   {"shared", Said::kSpace},  {"shared::cta", Said::kSpace},
        {"shared::cluster", Said::kSpace}, {"v2", Said::kVector}, {"v4", Said::kVector}};
    bool load = q[0] == "ld";
    in.op = load ? Op::kLoad : Op::kStore;
    std::map<Said, std::string> seen;
    for (size_t i = 1; i + 1 < q.size(); ++i) {
        auto found = said.find(q[i]);
        if (found == said.end() || q[i] == (load ? "release" : "acquire") || !seen.emplace(found->second, q[i]).second)
            return false;
    }
    bool scoped = seen.count(Said::kScope) > 0;
    const std::string &order = seen[Said::kOrder], &space = seen[Said::kSpace], &vector = seen[Said::kVector];
    if (scoped != (order == "relaxed" || order == "acquire" || order == "release")) return false;
    in.space = space.empty()              ? Space::kGeneric
               : space == "global"          ? Space::kGlobal
               : space == "shared::cluster" ? Space::kCluster
                                            : Space::kShared;
    in.count = vector.empty() ? 1 : vector[1] - '0';
    const char* kinds = load ? (in.count > 1 ? "va" : "sa") : (in.count > 1 ? "av" : "as");
    if (q.size() < 2 || !scalar_type(q.back(), in.bytes, in.sign) || !shaped(in, kinds)) return false;
    const Operand& data = in.operands[load ? 0 : 1];
    return data.values.size() == size_t(in.count) && (!load || registers(data, size_t(in.count)));
}

// setp.CmpOp.type p, a, b (integer types); selp.type d, a, b, p (types of 16 bits or more, f16 aside).
bool decode_select(Instruction& in, const std::vector<std::string>& q) {
    static const char* const compares[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
    bool setp = q[0] == "setp";
    in.op = setp ? Op::kSetp : Op::kSelp;
    in.predicates = setp ? 1u : 1u << 3;
    const std::string& type = q.back();
    if (q.size() != (setp ? 3u : 2u) || !scalar_type(type, in.bytes, in.sign) ||
        (setp ? type[0] == 'f' : type == "f16" || in.bytes < 2) || !shaped(in, setp ? "sss" : "ssss") ||
        !registers(in.operands[0], 1))
        return false;
    in.code = int(std::find(compares, compares + 10, q[1]) - compares);
    return !setp || in.code < 10;
}

}  // namespace

namespace mmemu_ptx {

// The floating-point arithmetic that inline PTX may do, as Instruction::code numbers it.
const std::map<std::string, int> kFloatOps = {{"add", 0}, {"sub", 1}, {"mul", 2}, {"fma", 3}};

bool decode_core(Instruction& in, const std::vector<std::string>& q) {
    const std::string& name = q[0];
    if (name == "mma") return decode_mma(in, q);
    if (name == "ldmatrix" || name == "stmatrix") return decode_matrix(in, q);
    if (name == "setp" || name == "selp") return decode_select(in, q);
    if (name == "cp") return decode_cp(in, q);
    if (name == "cvta" && (q.size() == 4 || q.size() == 3)) {  // cvta.to.shared.u32/u64, cvta.shared.u64
        bool to = q.size() == 4 && q[1] == "to";
        const std::string& space = q[q.size() - 2];
        in.op = to ? Op::kCvtaToShared : Op::kCvtaToGeneric;
        return (space == "shared" || space == "shared::cta") && (q.back() == "u64" || (to && q.back() == "u32")) &&
               shaped(in, "ss") && registers(in.operands[0], 1);
    }
    if (name == "ld" || name == "st") return decode_memory(in, q);
    if (name == "wgmma") return decode_wgmma(in, q);
    if (name == "mov" && q.size() == 2) {
        in.op = Op::kMov;
        in.predicates = q[1] == "pred" ? 3 : 0;  // a predicate's value is 0 or 1: one byte's worth
        in.bytes = 1;
        return (in.predicates || scalar_type(q[1], in.bytes, in.sign)) && shaped(in, "ss") &&
               registers(in.operands[0], 1);
    }
    if (kFloatOps.count(name) && (q.back() == "f32" || q.back() == "f64")) {
        // IEEE's arithmetic rounded to nearest: .rn said, or for add, sub and mul left to the default; .ftz, .sat and
        // the other roundings are not emulated.
        in.op = Op::kFloat;
        in.code = kFloatOps.at(name);
        in.bytes = q.back() == "f32" ? 4 : 8;
        bool rounding = q.size() == 3 ? q[1] == "rn" : q.size() == 2 && name != "fma";
        return rounding && shaped(in, name == "fma" ? "ssss" : "sss") && registers(in.operands[0], 1);
    }
    if (name == "lop3" && q.size() == 2 && q[1] == "b32") {  // d, a, b, c, the table of f(0xF0, 0xCC, 0xAA)
        in.op = Op::kLop3;
        return shaped(in, "sssss") && registers(in.operands[0], 1);
    }
    if (name == "cvt" && q.size() == 4 && q[1] == "rna" && q[2] == "tf32" && q[3] == "f32") {
        in.op = Op::kCvtTf32;
        return shaped(in, "ss") && registers(in.operands[0], 1);
    }
    if (name == "cvt" && q.size() == 3) {  // between integer types
        in.op = Op::kCvt;
        return q[1][0] != 'f' && q[2][0] != 'f' && q[1][0] != 'b' && q[2][0] != 'b' &&
               scalar_type(q[1], in.bytes, in.sign) && scalar_type(q[2], in.from_bytes, in.from_sign) &&
               shaped(in, "ss") && registers(in.operands[0], 1);
    }
    return decode_cluster(in, q);
}

}  // namespace mmemu_ptx

namespace {

// The registers of a statement that live on its fiber's stack: a wgmma's 128 accumulators and its operands fit.
constexpr int kStackRegisters = 256;

// An operand's bytes to or from its register, copied inline for the sizes a register has.
void copy_bytes(void* to, const void* from, size_t size) {
    switch (size) {
        case 8: std::memcpy(to, from, 8); return;
        case 4: std::memcpy(to, from, 4); return;
        case 2: std::memcpy(to, from, 2); return;
        case 1: std::memcpy(to, from, 1); return;
        default: std::memcpy(to, from, size);
    }
}

// add, sub, mul or fma (Instruction::code) of T, each rounded once to nearest, as IEEE's are.
template <class T>
T arithmetic(const Context& c) {
    auto value = [&](size_t operand) {
        uint64_t bits = c.get(operand);
        T x;
        std::memcpy(&x, &bits, sizeof x);
        return x;
    };
    T a = value(1), b = value(2);
    switch (c.in.code) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        default: return std::fma(a, b, value(3));
    }
}

// The bits of arithmetic()'s result, in the low bytes of a register.
uint64_t float_result(const Context& c) {
    uint64_t bits = 0;
    if (c.in.bytes == 4) {
        float r = arithmetic<float>(c);
        std::memcpy(&bits, &r, sizeof r);
    } else {
        double r = arithmetic<double>(c);
        std::memcpy(&bits, &r, sizeof r);
    }
    return bits;
}

// cvt.rna.tf32.f32: to the nearest value with 10 fraction bits, ties away from zero; the low 13 bits are zero.
uint32_t round_tf32(uint32_t bits) {
    if ((bits & 0x7f800000u) == 0x7f800000u) return bits & 0x007fffffu ? 0x7fffffffu : bits;  // NaN, infinities
    return (bits + 0x1000u) & 0xffffe000u;  // a carry into the exponent rounds up to the next binade, or infinity
}

// lop3.b32: bit i of the result is bit (4 a_i + 2 b_i + c_i) of the table, the table being the function's value on
// a = 0xF0, b = 0xCC, c = 0xAA.
uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t table) {
    uint32_t out = 0;
    for (int row = 0; row < 8; ++row)
        if (table >> row & 1) out |= (row & 4 ? a : ~a) & (row & 2 ? b : ~b) & (row & 1 ? c : ~c);
    return out;
}

// setp's comparison of a and b (Instruction::code: eq, ne, lt, le, gt, ge, then the unsigned lo, ls, hi, hs).
bool compare(const Context& c) {
    const Instruction& in = c.in;
    bool sign = in.sign && in.code < 6;
    uint64_t a = extend(c.get(1), in.bytes, sign), b = extend(c.get(2), in.bytes, sign);
    auto less = [sign](uint64_t x, uint64_t y) { return sign ? int64_t(x) < int64_t(y) : x < y; };
    switch (in.code < 6 ? in.code : in.code - 4) {
        case 0: return a == b;
        case 1: return a != b;
        case 2: return less(a, b);
        case 3: return !less(b, a);
        case 4: return less(b, a);
        default: return !less(a, b);
    }
}

void run(const Context& c) {
    const Instruction& in = c.in;
    switch (in.op) {
        case Op::kMma: return run_mma(c);
        case Op::kLdmatrix: case Op::kStmatrix: return run_matrix(c);
        case Op::kSetp: return c.set(0, compare(c));
        case Op::kSelp: return c.set(0, (c.get(3) ? c.get(1) : c.get(2)) & mask(in.bytes));
        case Op::kBranch: return;  // the statement's run takes it
        case Op::kAsync: return run_async(c);
        case Op::kCpAsync: {
            uint64_t size = c.get(2), src_size = in.operands.size() > 3 ? c.get(3) : size;
            if (in.bytes && size != uint64_t(in.bytes))
                mmemu_violation("%s at line %d: cp-size %llu; .cg copies 16 bytes", c.op(), c.line,
                                static_cast<unsigned long long>(size));
            void* dst = mmemu_shared_pointer(c.address(0), 1, c.op(), c.line);  // mmemu_rv_cp_async checks the rest
            return mmemu_rv_cp_async(dst, reinterpret_cast<const void*>(c.address(1)), size, src_size, c.op(), c.line);
        }
        case Op::kCommit: return mmemu_async_commit();
        case Op::kWaitGroup: return mmemu_async_wait(unsigned(c.get(0)));
        case Op::kWaitAll:  // cp.async.commit_group; cp.async.wait_group 0
            mmemu_async_commit();
            return mmemu_async_wait(0);
        case Op::kCvtaToShared:
            return c.set(0, mmemu_shared_address(reinterpret_cast<const void*>(c.get(1)), c.op(), c.line));
        case Op::kCvtaToGeneric:
            return c.set(0, reinterpret_cast<uintptr_t>(mmemu_shared_pointer(c.get(1), 1, c.op(), c.line)));
        // Every memory order loads and stores plainly: the threads run one at a time and switch only at a
        // rendezvous, so each access is atomic and all threads see all accesses in one order, which every order
        // PTX names allows (as __threadfence is empty, shim.h).
        case Op::kLoad: {
            size_t size = size_t(in.bytes * in.count);
            const unsigned char* p = c.memory(c.address(1), size);
            for (int e = 0; e < in.count; ++e) {
                uint64_t bits = 0;
                std::memcpy(&bits, p + e * in.bytes, size_t(in.bytes));
                c.set(in.operands[0].values[size_t(e)], extend(bits, in.bytes, in.sign));
            }
            return;
        }
        case Op::kStore: {
            size_t size = size_t(in.bytes * in.count);
            unsigned char* p = c.memory(c.address(0), size);
            for (int e = 0; e < in.count; ++e) {
                uint64_t bits = c.get(in.operands[1].values[size_t(e)]);
                std::memcpy(p + e * in.bytes, &bits, size_t(in.bytes));
            }
            return;
        }
        case Op::kMov: return c.set(0, c.get(1) & mask(in.bytes));
        case Op::kCvt: return c.set(0, extend(c.get(1), in.from_bytes, in.from_sign) & mask(in.bytes));
        case Op::kCvtTf32: return c.set(0, round_tf32(uint32_t(c.get(1))));
        case Op::kFloat: return c.set(0, float_result(c));
        case Op::kLop3:
            return c.set(0, lop3(uint32_t(c.get(1)), uint32_t(c.get(2)), uint32_t(c.get(3)), uint32_t(c.get(4))));
        case Op::kBarrierCluster: case Op::kFence: case Op::kMapa: case Op::kGetctarank: case Op::kAtom:
            return run_cluster(c);
        case Op::kWgmma: case Op::kWgmmaFence: case Op::kWgmmaCommit: case Op::kWgmmaWait: return run_wgmma(c);
    }
}

}  // namespace

MMEMU_EXPORT float mmemu_round_tf32(float value) { return as_float(round_tf32(float_bits(value))); }

MMEMU_EXPORT void mmemu_rv_cp_async(void* dst, const void* src, uint64_t size, uint64_t src_size, const char* op,
                                    int line) {
    if (size != 4 && size != 8 && size != 16)
        mmemu_violation("%s at line %d: %llu bytes; an asynchronous copy moves 4, 8 or 16", op, line,
                        static_cast<unsigned long long>(size));
    if (src_size > size)
        mmemu_violation("%s at line %d: src-size %llu is larger than the copy's %llu bytes", op, line,
                        static_cast<unsigned long long>(src_size), static_cast<unsigned long long>(size));
    for (const void* p : {static_cast<const void*>(dst), src})
        if (reinterpret_cast<uintptr_t>(p) % size)
            mmemu_violation("%s at line %d: %s %p is not %llu-byte aligned", op, line, p == dst ? "the destination"
                            : "the source", p, static_cast<unsigned long long>(size));
    mmemu_shared_pointer(mmemu_shared_address(dst, op, line), size, op, line);
    mmemu_rv_async_copy(dst, src, size, src_size, nullptr);
}

MMEMU_EXPORT void mmemu_rv_asm(int line, const char* text, const char* constraints, const mmemu_asm_operand* operands,
                               int count) {
    const Program& program = program_of(text, count);
    if (!program.unsupported.empty()) mmemu_unsupported("inline assembly", program.unsupported.c_str(), line);
    const Constraints& said = constraints_of(constraints);
    if (said.kinds.size() != size_t(count) && count) mmemu_unsupported("inline assembly", text, line);
    // The registers: on the calling fiber's stack where they fit, as a statement may wait in between (at a barrier,
    // at a wgmma's meeting) and each fiber has a stack of its own; a heap block for every run of a statement was a
    // tenth of a wgmma GEMM's time.
    uint64_t on_stack[kStackRegisters];
    std::vector<uint64_t> on_heap(program.registers > kStackRegisters ? size_t(program.registers) : 0);
    uint64_t* regs = on_heap.empty() ? on_stack : on_heap.data();
    std::fill_n(regs, program.registers, uint64_t(0));
    // Outputs start from the variable's value, so that "+r" reads it and an output never written keeps it;
    // an input tied to an output ("0") is that output's value.
    static uint64_t serial = 0;
    const Call call{operands, said, count, ++serial};
    for (int i = 0; i < count; ++i) {
        regs[size_t(i)] = operands[i].bits;
        if (call.output(i)) {
            regs[size_t(i)] = 0;
            copy_bytes(&regs[size_t(i)], reinterpret_cast<const void*>(operands[i].bits), operands[i].pointee);
        } else if (call.is(i, Constraints::kTied)) {
            regs[size_t(said.tied[size_t(i)])] = operands[i].bits;
        }
    }
    for (size_t pc = 0; pc < program.code.size();) {
        const Instruction& in = program.code[pc++];
        if (in.guard >= 0 && (regs[size_t(in.guard)] != 0) == in.negated) continue;
        if (in.op == Op::kBranch) pc = size_t(in.target);
        else run(Context{in, regs, line, call});
    }
    for (int i = 0; i < count; ++i)
        if (call.output(i))
            copy_bytes(reinterpret_cast<void*>(operands[i].bits), &regs[size_t(i)], operands[i].pointee);
}
