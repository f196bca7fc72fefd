// What the sources of the inline-PTX interpreter share (part of libmmemu.so, never seen by kernels): a statement
// as ptx.cpp parses it, the context an instruction runs in, and the instruction families kept in files of their
// own (ptx_wgmma.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mmemu.h"

#pragma GCC visibility push(hidden)
namespace mmemu::ptx {

// ---- a statement, parsed -----------------------------------------------------------------------------------------
struct Value {
    int reg = -1;  // a register: an operand (%N, numbered from 0) or a declared one; else the immediate
    uint64_t imm = 0;
};

struct Operand {
    // kPredicate: a declared .pred register, which only the instructions that take one accept.
    enum Kind { kScalar, kVector, kAddress, kPredicate } kind = kScalar;
    std::vector<Value> values;  // a scalar's one, a vector's elements, an address's base
    int64_t offset = 0;         // an address's displacement
};

enum class Op {
    kMma, kLdmatrix, kCpAsync, kCommit, kWaitGroup, kWaitAll, kCvtaToShared, kCvtaToGeneric, kLoad, kStore,
    kMov, kCvt, kCvtTf32, kSetp, kFenceProxyAsync, kWgmma, kWgmmaFence, kWgmmaCommit, kWgmmaWait,
};

// The element types mma and wgmma name: inputs .f16, .bf16, .tf32, .e4m3, .e5m2, .s8, .u8; accumulators .f16,
// .f32, .s32.
enum class Type { kF16, kBf16, kTf32, kF32, kE4m3, kE5m2, kS8, kU8, kS32 };

// Where ld, st and ldmatrix find their address: a generic address is a pointer.
enum class Space { kGeneric, kGlobal, kShared };

// setp's comparisons: lo, ls, hi and hs are lt, le, gt and ge of unsigned values.
enum class Compare { kEq, kNe, kLt, kLe, kGt, kGe };

struct Instruction {
    Op op;
    std::string opcode, text;  // text: the whole instruction as written, for messages
    std::vector<Operand> operands;
    // What the opcode's qualifiers say; each operation reads its own.
    int k = 0, n = 0;                                       // mma, wgmma: K; wgmma: N
    Type a = Type::kF16, b = Type::kF16, acc = Type::kF32;  // mma, wgmma: A's, B's and the accumulators' type
    bool satfinite = false;                                 // mma: integer sums clamp rather than wrap
    int count = 1;                                          // ldmatrix: matrices; ld, st: vector elements
    int bytes = 0, from_bytes = 0;                          // ld, st, mov, cvt, setp: the element's size (cvt:
                                                            // also the source's); cp.async.cg: 16, its only size
    bool sign = false, from_sign = false, trans = false;
    Compare compare = Compare::kEq;                         // setp
    Space space = Space::kGeneric;                          // ld, st, ldmatrix
};

// Whether the operands are of these kinds, one letter each: s scalar, v vector, a address, p predicate.
bool shaped(const Instruction& in, const char* kinds);
// Whether the operand is n registers (no immediates).
bool registers(const Operand& o, size_t n);
bool mma_type(const std::string& name, Type& type);
int bytes_of(Type type);
// Element `index` of a register of `type`s, exactly, as a float (a .tf32 is read as its top 19 bits).
float real(uint32_t word, int index, Type type);
float as_float(uint32_t bits);
uint32_t float_bits(float f);

// ---- running a statement -----------------------------------------------------------------------------------------
// One run of an asm statement, as the kernel called it.
struct Call {
    const mmemu_asm_operand* operands;      // an output's is its variable's address
    const std::vector<std::string>& kinds;  // the operands' constraints
    int count;
    uint64_t serial;  // numbers the runs of statements, each once

    bool output(int operand) const {
        return operand >= 0 && operand < count && kinds[size_t(operand)].find_first_of("=+") != std::string::npos;
    }
    bool constant(int operand) const {  // "n": an immediate the compiler writes into the text
        return operand >= 0 && operand < count && kinds[size_t(operand)] == "n";
    }
};

struct Context {
    const Instruction& in;
    std::vector<uint64_t>& regs;
    int line;
    const Call& call;

    uint64_t get(const Value& v) const { return v.reg >= 0 ? regs[size_t(v.reg)] : v.imm; }
    uint64_t get(size_t operand) const { return get(in.operands[operand].values[0]); }
    uint64_t address(size_t operand) const { return get(operand) + uint64_t(in.operands[operand].offset); }
    void set(const Value& v, uint64_t bits) const { regs[size_t(v.reg)] = bits; }
    void set(size_t operand, uint64_t bits) const { set(in.operands[operand].values[0], bits); }
    const char* op() const { return in.opcode.c_str(); }

    // The `size` bytes at `address` in the instruction's state space, which must be aligned to `size`.
    unsigned char* memory(uint64_t address, size_t size) const {
        if (address % size)
            mmemu_violation("%s at line %d: address 0x%llx is not %zu-byte aligned", op(), line,
                            static_cast<unsigned long long>(address), size);
        switch (in.space) {
            case Space::kShared: return static_cast<unsigned char*>(mmemu_shared_pointer(address, size, op(), line));
            case Space::kGlobal: return static_cast<unsigned char*>(mmemu_global_pointer(address, op(), line));
            case Space::kGeneric: break;
        }
        return reinterpret_cast<unsigned char*>(address);
    }
};

// ---- wgmma (ptx_wgmma.cpp) ---------------------------------------------------------------------------------------
// wgmma.mma_async, .fence, .commit_group and .wait_group: `q` is the opcode split at its dots.
bool decode_wgmma(Instruction& in, const std::vector<std::string>& q);
void run_wgmma(const Context& c);

}  // namespace mmemu::ptx
#pragma GCC visibility pop
