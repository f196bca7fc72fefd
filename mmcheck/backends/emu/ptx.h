// An inline-PTX statement as ptx_parse.cpp parses it, and what an instruction runs with: shared by the parser, ptx.cpp
// (the statement's run and the scalar instructions), ptx_mma.cpp (the tensor-core instructions of tutorials) and the
// files of other instruction families (ptx_cluster.cpp, ptx_async.cpp, ptx_wgmma.cpp), which each decode and run
// their own.  Part of libmmemu.so; kernels never see it.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "include/mmemu_float16.h"
#include "mmemu.h"

namespace mmemu_ptx {

// ---- a statement, parsed -------------------------------------------------------------------------------------------
constexpr int kImmediate = -1, kSink = -2;  // Value::reg of an immediate (or a special register) and of the sink `_`

struct Value {
    int reg = kImmediate;     // a register: an operand (%N, numbered from 0) or a declared one; else as above
    uint64_t imm = 0;
    int special = -1;         // a special register (ptx_cluster.cpp's numbering), read when the instruction runs
    bool predicate = false;   // a .pred register, or a special register of that type
};

struct Operand {
    // kTensor: `[map, {coordinates}]`, the map's address then the coordinates; kPair: `d|p`
    enum Kind { kScalar, kVector, kAddress, kTensor, kPair } kind = kScalar;
    std::vector<Value> values;  // a scalar's one, a vector's elements, an address's base
    int64_t offset = 0;         // an address's displacement
};

enum class Op {
    kMma, kLdmatrix, kStmatrix, kCpAsync, kCommit, kWaitGroup, kWaitAll, kCvtaToShared, kCvtaToGeneric, kLoad,
    kStore, kMov, kCvt, kCvtTf32, kLop3, kSetp, kSelp, kBranch,
    kFloat,  // add, sub, mul, fma of f32 or f64; Instruction::code says which
    kBarrierCluster, kFence, kMapa, kGetctarank, kAtom,  // ptx_cluster.cpp's
    kAsync,  // an instruction of ptx_async.cpp's families; Instruction::code says which
    kWgmma, kWgmmaFence, kWgmmaCommit, kWgmmaWait,  // ptx_wgmma.cpp's
};

// The element types mma and wgmma name: inputs .f16, .bf16, .tf32, .e4m3, .e5m2, .s8, .u8; accumulators .f16, .f32,
// .s32.
enum class Type { kF16, kBf16, kTf32, kF32, kE4m3, kE5m2, kS8, kU8, kS32 };

// Where ld, st, atom, ldmatrix and the asynchronous instructions find an address: a generic address is a pointer; a
// .shared::cluster one is mmemu.h's (a block's offset and rank, or the calling block's offset).
enum class Space { kGeneric, kGlobal, kShared, kCluster };

// What atom and red do to memory.
enum class Atom { kAnd, kOr, kXor, kCas, kExch, kAdd, kInc, kDec, kMin, kMax };

struct Instruction {
    Op op;
    std::string opcode, text;  // text: the whole instruction as written, for messages
    std::vector<Operand> operands;
    int guard = -1;             // `@p` / `@!p`: the predicate register that decides whether it runs
    bool negated = false;
    std::string label;          // bra: its target's label, then (target) the index of the instruction there
    int target = -1;
    unsigned predicates = 0;    // the operands (bit i: operand i) whose registers are predicates, as the decoder says
    bool sink = false;          // whether operand 0 (its first value) may be the sink `_`
    // What the opcode's qualifiers say; each operation reads its own.
    int code = 0;                                       // setp: its comparison; Op::kAsync: which instruction
    unsigned flags = 0;                                 // Op::kAsync: its qualifiers (ptx_async.cpp)
    int k = 0, n = 0;                                   // mma, wgmma: K; wgmma: N
    Type a = Type::kF16, b = Type::kF16, acc = Type::kF32;  // mma, wgmma: A's, B's and the accumulators' type
    bool satfinite = false;                             // mma: integer sums clamp rather than wrap
    int count = 1;                                      // ldmatrix, stmatrix: matrices; ld, st: vector
                                                        // elements; cp.async.bulk.tensor: dimensions
    int bytes = 0, from_bytes = 0;                      // ld, st, mov, cvt, setp, selp, atom: the element's size
                                                        // (cvt: also the source's); cp.async.cg: 16
    bool sign = false, from_sign = false, trans = false;
    bool floating = false;                              // atom: of a floating-point type
    bool arrive = false, aligned = false;               // barrier.cluster: arrive (else wait), .aligned
    Atom atom = Atom::kAdd;                             // atom, red
    Space space = Space::kGeneric;
};

struct Program {
    std::vector<Instruction> code;
    int registers = 0;        // the operands', then the declared ones
    std::string unsupported;  // the first instruction the emulator does not run, if any
    std::map<std::string, int> labels;  // a label's instruction: the one written after it
};

// ---- ptx_parse.cpp ----
// The statement `text` of `operands` operands, parsed the first time it runs (a literal's address names it).
const Program& program_of(const char* text, int operands);
// A statement's constraints, each an operand's: an output ("=r", "+f"), an immediate ("n"), an input tied to an
// output ("0"), or another input.
struct Constraints {
    enum Kind : unsigned char { kOutput, kConstant, kTied, kInput };
    std::vector<Kind> kinds;
    std::vector<int> tied;  // a tied input's output
};
// The constraints of a statement (one literal, comma separated), read the first time it runs.
const Constraints& constraints_of(const char* constraints);
// `s` split at `separator`s outside braces and brackets, each part trimmed.
std::vector<std::string> split(const std::string& s, char separator);
// Whether the operands are of these kinds, one letter each: s scalar, v vector, a address, t tensor, p pair.
bool shaped(const Instruction& in, const char* kinds);
// Whether the operand is `n` registers (no immediates, no sink).
bool registers(const Operand& o, size_t n);

// ---- ptx.cpp ----
// PTX's sizes and signedness of the types ld, st, mov, cvt, setp, selp and atom name.
bool scalar_type(const std::string& t, int& bytes, bool& sign);
// The low `bytes` bytes, and those sign-extended (sign) or zero-extended to 64 bits.
uint64_t mask(int bytes);
uint64_t extend(uint64_t bits, int bytes, bool sign);
// The calling thread's lane in its warp.
unsigned lane();
// Whether `q` (the opcode split at its dots) decodes as one of the instructions ptx.cpp, ptx_mma.cpp or
// ptx_cluster.cpp run, into `in`.
bool decode_core(Instruction& in, const std::vector<std::string>& q);

// ---- ptx_cluster.cpp ----
// The special register `name` names without its % (cluster_ctarank, tid.x, laneid, ...): its number, and whether it
// is a predicate; false where there is none of that name.
bool special_register(const std::string& name, int& number, bool& predicate);
uint64_t read_special(int number);
// What opcode `q` of ptx_cluster.cpp's families says; false where the emulator does not run it.
bool decode_cluster(Instruction& in, const std::vector<std::string>& q);

// ---- running a statement ---------------------------------------------------------------------------------------
// One run of an asm statement, as the kernel called it.
struct Call {
    const mmemu_asm_operand* operands;  // an output's is its variable's address
    const Constraints& constraints;
    int count;
    uint64_t serial;  // numbers the runs of statements, each once

    bool output(int operand) const { return is(operand, Constraints::kOutput); }
    bool constant(int operand) const { return is(operand, Constraints::kConstant); }  // written into the text
    bool is(int operand, Constraints::Kind kind) const {
        return operand >= 0 && operand < count && constraints.kinds[size_t(operand)] == kind;
    }
};

// One instruction of a statement as it runs, on the statement's registers.
struct Context {
    const Instruction& in;
    uint64_t* regs;
    int line;
    const Call& call;

    uint64_t get(const Value& v) const {
        return v.reg >= 0 ? regs[size_t(v.reg)] : v.special >= 0 ? read_special(v.special) : v.imm;
    }
    uint64_t get(size_t operand) const { return get(in.operands[operand].values[0]); }
    uint64_t address(size_t operand) const { return get(operand) + uint64_t(in.operands[operand].offset); }
    void set(const Value& v, uint64_t bits) const {
        if (v.reg >= 0) regs[size_t(v.reg)] = bits;  // the sink drops it
    }
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

// ---- ptx_mma.cpp: mma.sync, ldmatrix, stmatrix; the element types (wgmma's too) ----
// A float's bits, and the float of bits.
inline float as_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint32_t float_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

bool mma_type(const std::string& name, Type& type);
int bytes_of(Type type);
// The 256 values of an 8-bit float type (.e4m3 or .e5m2), each exactly, by its bits.
const float* fp8_values(Type type);

// Element `index` of a register of `type`s, exactly, as a float (a .tf32 is read as its top 19 bits); inline, as
// the tensor-core instructions read their operands' every element through it.
inline float real(uint32_t word, int index, Type type) {
    switch (type) {
        case Type::kF16: return mmemu::Fp16Format::widen(uint16_t(word >> 16 * index));
        case Type::kBf16: return mmemu::Bf16Format::widen(uint16_t(word >> 16 * index));
        case Type::kTf32: return as_float(word & 0xffffe000u);
        case Type::kE4m3: case Type::kE5m2: return fp8_values(type)[uint8_t(word >> 8 * index)];
        default: return as_float(word);
    }
}

bool decode_mma(Instruction& in, const std::vector<std::string>& q);
bool decode_matrix(Instruction& in, const std::vector<std::string>& q);  // ldmatrix, stmatrix
void run_mma(const Context& c);
void run_matrix(const Context& c);

// ---- ptx_cluster.cpp ----
void run_cluster(const Context& c);

// ---- ptx_async.cpp ---- whether `q` (the opcode split at its dots) is an instruction of its families, which it then
// decodes into `in` (false where the emulator does not run it as written); and the run of one.
bool async_family(const std::vector<std::string>& q);
bool decode_async(Instruction& in, const std::vector<std::string>& q);
void run_async(const Context& c);

// ---- ptx_wgmma.cpp: wgmma.mma_async, .fence, .commit_group and .wait_group (`q`: the opcode split at its dots) ----
bool decode_wgmma(Instruction& in, const std::vector<std::string>& q);
void run_wgmma(const Context& c);

}  // namespace mmemu_ptx
