// Inline PTX as ptx.cpp parses and runs it, for the files beside it that run families of instructions of their
// own (ptx_cluster.cpp).  Internal to libmmemu.so.
#pragma once

#include "mmemu.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mmemu_ptx {

// ---- a statement, parsed -------------------------------------------------------------------------------------
struct Value {
    int reg = -1;             // a register: an operand (%N, numbered from 0) or a declared one
    int special = -1;         // else a special register (ptx_cluster.cpp's numbering); else the immediate
    uint64_t imm = 0;
    bool predicate = false;   // a .pred register, or a special register of that type
};

struct Operand {
    enum Kind { kScalar, kVector, kAddress } kind = kScalar;
    std::vector<Value> values;  // a scalar's one, a vector's elements, an address's base
    int64_t offset = 0;         // an address's displacement
};

enum class Op {
    kMma, kLdmatrix, kCpAsync, kCommit, kWaitGroup, kWaitAll, kCvtaToShared, kCvtaToGeneric, kLoad, kStore,
    kMov, kCvt, kCvtTf32, kLop3,
    // ptx_cluster.cpp's
    kBarrierCluster, kFence, kMapa, kGetctarank, kAtom, kSelp,
};

// The element types mma names: inputs .f16, .bf16, .tf32, .e4m3, .e5m2, .s8, .u8; accumulators .f16, .f32, .s32.
enum class Type { kF16, kBf16, kTf32, kF32, kE4m3, kE5m2, kS8, kU8, kS32 };

// Where ld, st, atom and ldmatrix find their address: a generic address is a pointer.
enum class Space { kGeneric, kGlobal, kShared, kCluster };

// What atom and red do to memory.
enum class Atom { kAnd, kOr, kXor, kCas, kExch, kAdd, kInc, kDec, kMin, kMax };

struct Instruction {
    Op op;
    std::string opcode, text;  // text: the whole instruction as written, for messages
    std::vector<Operand> operands;
    unsigned predicates = 0;   // the operands (bit i: operand i) that may be predicates
    // What the opcode's qualifiers say; each operation reads its own.
    int k = 0;                                          // mma: K
    Type a = Type::kF16, b = Type::kF16, acc = Type::kF32;  // mma: A's, B's and the accumulators' element type
    bool satfinite = false;                             // mma: integer sums clamp rather than wrap
    int count = 1;                                      // ldmatrix: matrices; ld, st: vector elements
    int bytes = 0, from_bytes = 0;                      // ld, st, mov, cvt, atom, selp: the element's size (cvt:
                                                        // also the source's); cp.async.cg: 16, its only size
    bool sign = false, from_sign = false, trans = false;
    bool floating = false;                              // atom: of a floating-point type
    bool arrive = false, aligned = false;               // barrier.cluster: arrive (else wait), .aligned
    Atom atom = Atom::kAdd;                             // atom, red
    Space space = Space::kGeneric;                      // ld, st, atom, ldmatrix, mapa, getctarank
};

// PTX's sizes and signedness of the types ld, st, mov and cvt name.
bool scalar_type(const std::string& t, int& bytes, bool& sign);
// Whether the operands are of these kinds, one letter each: s scalar, v vector, a address.
bool shaped(const Instruction& in, const char* kinds);
// Whether the operand is n registers.
bool registers(const Operand& o, size_t n);
// The low `bytes` bytes, and those sign-extended (sign) or zero-extended to 64 bits.
uint64_t mask(int bytes);
uint64_t extend(uint64_t bits, int bytes, bool sign);
// The calling thread's lane in its warp.
unsigned lane();

// ---- ptx_cluster.cpp ----
// The special register `name` names (%cluster_ctarank, %tid.x, ...): its number, and whether it is a predicate;
// false where there is none of that name.
bool special_register(const std::string& name, int& number, bool& predicate);
uint64_t read_special(int number);
// What opcode `q` (split at its dots) of ptx_cluster.cpp's families says; false where the emulator does not run it.
bool decode_cluster(Instruction& in, const std::vector<std::string>& q);

// ---- running a statement --------------------------------------------------------------------------------------
struct Context {
    const Instruction& in;
    std::vector<uint64_t>& regs;
    int line;

    uint64_t get(const Value& v) const {
        return v.reg >= 0 ? regs[size_t(v.reg)] : v.special >= 0 ? read_special(v.special) : v.imm;
    }
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
            case Space::kCluster: return static_cast<unsigned char*>(mmemu_cluster_pointer(address, size, op(), line));
            case Space::kGlobal: return static_cast<unsigned char*>(mmemu_global_pointer(address, op(), line));
            case Space::kGeneric: break;
        }
        return reinterpret_cast<unsigned char*>(address);
    }
};

// Runs an instruction of ptx_cluster.cpp's families.
void run_cluster(const Context& c);

}  // namespace mmemu_ptx
