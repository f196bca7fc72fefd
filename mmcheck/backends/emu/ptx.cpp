// Inline PTX on the emulator (part of libmmemu.so).  The compile unit rewrites each asm statement of a kernel file
// into a call of mmemu_rv_asm (unit.py, shim.h); this file parses the statement's template, once per launch, and
// runs it on a register file of its own: the statement's operands, then the registers it declares (.reg).
//
// What runs is what tensor-core tutorials write, with the PTX ISA's semantics:
//   mma.sync.aligned.m16n8k16 / m16n8k8 .row.col with .f16 inputs and f16 or f32 accumulators, .bf16 inputs and
//     f32 accumulators, and m16n8k8 with .tf32 inputs and f32 accumulators;
//   mma.sync.aligned.m16n8k16 / m16n8k32 .row.col{.satfinite}.s32 with .s8 or .u8 inputs (A's and B's each), and
//     m16n8k32 .row.col.f32 with .e4m3 or .e5m2 inputs (A's and B's each) and f32 accumulators;
//   ldmatrix.sync.aligned.m8n8 .x1/.x2/.x4 {.trans} {.shared{::cta}} .b16;
//   cp.async.ca/.cg .shared{::cta}.global of 4, 8 or 16 bytes (with src-size), cp.async.commit_group,
//     cp.async.wait_group, cp.async.wait_all;
//   cvta.to.shared / cvta.shared; ld and st (scalars, .v2, .v4) of the .global or .shared state space or of a
//     generic address, .weak, .volatile, .relaxed.scope, .acquire.scope (ld) or .release.scope (st); mov,
//     integer cvt and cvt.rna.tf32.f32;
//   setp of integers into a declared .pred register, which an instruction that takes a predicate operand reads;
//   fence.proxy.async{.shared::cta} (runtime_proxy.cpp);
//   wgmma.mma_async, .fence, .commit_group and .wait_group (ptx_wgmma.cpp, which says which forms).
// Anything else (another instruction, a guard @p, a label, a special register) makes the statement unsupported:
// a launch that reaches it ends naming that instruction.  ptx.h holds what this file shares with the files of
// instruction families of their own.
//
// mma.sync and ldmatrix are warp-collective: every lane's operands meet at a gather (mmemu_rv_gather), each lane
// computes its own destination registers from them, and a second gather keeps every lane's operands alive until
// all have.  Arithmetic of mma: D[i][j] starts from C[i][j] and adds the K products A[i][k] B[k][j] in k order in
// float, rounding each sum to nearest; every product is exact in float (f16 and bf16 have at most 11 significant
// bits, tf32 11, e4m3 4 and e5m2 3), and a f16 D is rounded once at the end.  Tensor cores also form exact
// products but add them with their own alignment, order and rounding, so results are the GPU's exactly where the
// sums are exact and may differ in the last bits otherwise (as WMMA's, include/mma.h).  A .tf32 operand is read as
// its top 19 bits, the float with the 13 low fraction bits dropped.  An integer D is C plus the products, exactly,
// wrapped to 32 bits, or with .satfinite clamped to the range of int32.
#include "mmemu.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "include/mmemu_float16.h"
#include "ptx.h"

extern "C" mmemu_dim3 threadIdx, blockDim;

namespace mmemu::ptx {

bool shaped(const Instruction& in, const char* kinds) {
    if (in.operands.size() != strlen(kinds)) return false;
    for (size_t i = 0; kinds[i]; ++i) {
        Operand::Kind kind = kinds[i] == 's'   ? Operand::kScalar
                             : kinds[i] == 'v' ? Operand::kVector
                             : kinds[i] == 'p' ? Operand::kPredicate
                                               : Operand::kAddress;
        if (in.operands[i].kind != kind) return false;
    }
    return true;
}

bool registers(const Operand& o, size_t n) {
    if (o.values.size() != n) return false;
    for (const Value& v : o.values)
        if (v.reg < 0) return false;
    return true;
}

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

float as_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

uint32_t float_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
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

float real(uint32_t word, int index, Type type) {
    switch (type) {
        case Type::kF16: return mmemu::Fp16Format::widen(uint16_t(word >> 16 * index));
        case Type::kBf16: return mmemu::Bf16Format::widen(uint16_t(word >> 16 * index));
        case Type::kTf32: return as_float(word & 0xffffe000u);
        case Type::kE4m3: case Type::kE5m2: return fp8(uint8_t(word >> 8 * index), type);
        default: return as_float(word);
    }
}

}  // namespace mmemu::ptx

namespace {

using namespace mmemu::ptx;

unsigned lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32; }

// ---- a statement, parsed -------------------------------------------------------------------------------------
struct Program {
    std::vector<Instruction> code;
    int registers = 0;        // the operands', then the declared ones
    std::string unsupported;  // the first instruction the emulator does not run, if any
};

std::string trim(const std::string& s) {
    size_t lo = s.find_first_not_of(" \t\r\n"), hi = s.find_last_not_of(" \t\r\n");
    return lo == std::string::npos ? "" : s.substr(lo, hi - lo + 1);
}

std::vector<std::string> split(const std::string& s, char separator) {
    std::vector<std::string> parts;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i < s.size() && (s[i] == '{' || s[i] == '[')) ++depth;
        if (i < s.size() && (s[i] == '}' || s[i] == ']')) --depth;
        if (i == s.size() || (s[i] == separator && depth == 0)) {
            parts.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    return parts;
}

// PTX's sizes and signedness of the types ld, st, mov and cvt name.
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

// What the opcode says: the operation, its qualifiers, and whether the operands fit it; false where the
// emulator does not run the instruction.
bool decode(Instruction& in);

class Parser {
public:
    Parser(int operands, Program& program) : operands_(operands), program_(program) {
        program.registers = operands;
    }

    // A value: %N, a declared register, or an integer or PTX float constant (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX).
    bool value(const std::string& s, Value& v) const {
        if (s.size() > 1 && s[0] == '%' && std::isdigit(static_cast<unsigned char>(s[1]))) {
            char* end;
            long n = std::strtol(s.c_str() + 1, &end, 10);
            if (*end || n >= operands_) return false;
            v.reg = int(n);
            return true;
        }
        auto found = names_.find(s);
        if (found != names_.end()) {
            v.reg = found->second;
            return !predicates_.count(s);
        }
        if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'd' || s[1] == 'F' || s[1] == 'D')) {
            char* end;
            v.imm = std::strtoull(s.c_str() + 2, &end, 16);
            return !*end && s.size() == (s[1] == 'f' || s[1] == 'F' ? 10u : 18u);
        }
        if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) return false;
        char* end;
        v.imm = uint64_t(std::strtoll(s.c_str(), &end, 0));
        return !*end || ((*end == 'U' || *end == 'u') && !end[1]);
    }

    bool operand(const std::string& s, Operand& o) const {
        if (predicates_.count(s)) {
            o.kind = Operand::kPredicate;
            o.values.push_back(Value{names_.at(s), 0});
            return true;
        }
        if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
            o.kind = Operand::kVector;
            for (const std::string& element : split(s.substr(1, s.size() - 2), ',')) {
                o.values.emplace_back();
                if (!value(element, o.values.back())) return false;
            }
            return true;
        }
        if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
            o.kind = Operand::kAddress;
            std::string inner = trim(s.substr(1, s.size() - 2));
            size_t sign = inner.find_first_of("+-", 1);
            o.values.emplace_back();
            if (sign == std::string::npos) return value(inner, o.values.back());
            Value displacement;
            if (!value(trim(inner.substr(0, sign)), o.values.back()) ||
                !value(trim(inner.substr(sign + 1)), displacement) || displacement.reg >= 0)
                return false;
            o.offset = inner[sign] == '-' ? -int64_t(displacement.imm) : int64_t(displacement.imm);
            return true;
        }
        o.values.emplace_back();
        return value(s, o.values.back());
    }

    // `.reg .type name, name<N>, ...`
    bool declare(const std::string& s) {
        std::string rest = trim(s.substr(4));
        size_t space = rest.find_first_of(" \t\r\n");
        if (rest.empty() || rest[0] != '.' || space == std::string::npos) return false;
        bool predicate = rest.substr(0, space) == ".pred";
        for (const std::string& name : split(rest.substr(space), ',')) {
            size_t angle = name.find('<');
            int n = angle == std::string::npos ? 0 : std::atoi(name.c_str() + angle + 1);
            std::string base = name.substr(0, angle);
            if (base.empty() || !(std::isalpha(static_cast<unsigned char>(base[0])) || base[0] == '_')) return false;
            for (int i = 0; i < (n ? n : 1); ++i) {
                std::string each = n ? base + std::to_string(i) : base;
                names_[each] = program_.registers++;
                if (predicate) predicates_.insert(each);
            }
        }
        return true;
    }

    // `opcode operand, ...` (the statement without its `;`)
    bool instruction(const std::string& s, Instruction& in) const {
        size_t end = 0;
        while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '.' || s[end] == ':' ||
                                  s[end] == '_'))
            ++end;
        in.opcode = s.substr(0, end);
        std::string rest = trim(s.substr(end));
        if (in.opcode.empty() || (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end])))) return false;
        if (!rest.empty())
            for (const std::string& text : split(rest, ',')) {
                in.operands.emplace_back();
                if (!operand(text, in.operands.back())) return false;
            }
        return decode(in);
    }

private:
    int operands_;
    Program& program_;
    std::map<std::string, int> names_;  // the declared registers
    std::set<std::string> predicates_;  // those of them that are predicates: operands of their own kind
};





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

bool decode_ldmatrix(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kLdmatrix;
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
    return shape && type && in.count && shaped(in, "va") && registers(in.operands[0], size_t(in.count));
}

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
// space (.global, .shared{::cta}, or none: a generic address), .v2 or .v4, each at most once and in any order, as
// ptxas takes them, then the type.
bool decode_memory(Instruction& in, const std::vector<std::string>& q) {
    static const std::map<std::string, Said> said = {
        {"weak", Said::kOrder},    {"volatile", Said::kOrder}, {"relaxed", Said::kOrder}, {"acquire", Said::kOrder},
        {"release", Said::kOrder}, {"cta", Said::kScope},      {"cluster", Said::kScope}, {"gpu", Said::kScope},
        {"sys", Said::kScope},     {"global", Said::kSpace},   {"shared", Said::kSpace},  {"shared::cta", Said::kSpace},
        {"v2", Said::kVector},     {"v4", Said::kVector}};
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
    in.space = space.empty() ? Space::kGeneric : space == "global" ? Space::kGlobal : Space::kShared;
    in.count = vector.empty() ? 1 : vector[1] - '0';
    const char* kinds = load ? (in.count > 1 ? "va" : "sa") : (in.count > 1 ? "av" : "as");
    if (q.size() < 2 || !scalar_type(q.back(), in.bytes, in.sign) || !shaped(in, kinds)) return false;
    const Operand& data = in.operands[load ? 0 : 1];
    return data.values.size() == size_t(in.count) && (!load || registers(data, size_t(in.count)));
}

// setp.cmp.type p, a, b of integers (a predicate from two values, as CUTLASS makes wgmma's scale-d): eq and ne of
// any integer type, the ordered comparisons of signed (lt, le, gt, ge) or unsigned ones (lo, ls, hi, hs).
bool decode_setp(Instruction& in, const std::vector<std::string>& q) {
    static const std::map<std::string, std::pair<Compare, char>> compares = {  // the type's kind each needs
        {"eq", {Compare::kEq, 0}},   {"ne", {Compare::kNe, 0}},   {"lt", {Compare::kLt, 's'}},
        {"le", {Compare::kLe, 's'}}, {"gt", {Compare::kGt, 's'}}, {"ge", {Compare::kGe, 's'}},
        {"lo", {Compare::kLt, 'u'}}, {"ls", {Compare::kLe, 'u'}}, {"hi", {Compare::kGt, 'u'}},
        {"hs", {Compare::kGe, 'u'}}};
    in.op = Op::kSetp;
    auto found = q.size() == 3 ? compares.find(q[1]) : compares.end();
    if (found == compares.end() || q[2][0] == 'f' || !scalar_type(q[2], in.bytes, in.sign)) return false;
    in.compare = found->second.first;
    char kind = found->second.second;
    return (!kind || kind == q[2][0]) && shaped(in, "pss");
}

bool decode(Instruction& in) {
    std::vector<std::string> q;
    for (size_t start = 0, dot; start <= in.opcode.size(); start = dot + 1) {
        dot = in.opcode.find('.', start);
        if (dot == std::string::npos) dot = in.opcode.size();
        q.push_back(in.opcode.substr(start, dot - start));
    }
    const std::string& name = q[0];
    if (name == "mma") return decode_mma(in, q);
    if (name == "ldmatrix") return decode_ldmatrix(in, q);
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
    if (name == "setp") return decode_setp(in, q);
    if (name == "fence" && q.size() >= 3 && q.size() <= 4 && q[1] == "proxy" && q[2] == "async") {
        in.op = Op::kFenceProxyAsync;  // the shared::cta window is the only shared memory a block has
        return (q.size() == 3 || q[3] == "shared::cta") && shaped(in, "");
    }
    if (name == "mov" && q.size() == 2) {
        in.op = Op::kMov;
        return scalar_type(q[1], in.bytes, in.sign) && shaped(in, "ss") && registers(in.operands[0], 1);
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
    return false;
}

std::string uncommented(std::string s) {
    for (auto [open, close] : {std::make_pair("/*", "*/"), std::make_pair("//", "\n")})
        for (size_t at = s.find(open); at != std::string::npos; at = s.find(open, at)) {
            size_t end = s.find(close, at + 2);  // a line comment's newline stays
            s.replace(at, end == std::string::npos ? std::string::npos : end + (close[0] == '*' ? 2 : 0) - at, " ");
        }
    return s;
}

// The statement's instructions: the text split at `;`, with comments, and braces that open or close a scope,
// dropped.  Declarations (.reg) name registers; the first instruction that does not decode stops the parse.
Program parse(const char* text, int operands) {
    Program program;
    Parser parser(operands, program);
    std::string s = uncommented(text);
    size_t at = 0;
    while (true) {
        at = s.find_first_not_of(" \t\r\n{}", at);
        if (at == std::string::npos) break;
        size_t end = s.find(';', at);
        std::string statement = s.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
        at = end == std::string::npos ? s.size() : end + 1;
        std::string body = trim(statement.substr(0, statement.find(';')));
        Instruction in;
        in.text = trim(statement);
        bool ok = body.compare(0, 4, ".reg") == 0 ? parser.declare(body) : parser.instruction(body, in);
        if (!ok) {
            program.unsupported = in.text;
            break;
        }
        if (!in.opcode.empty()) program.code.push_back(std::move(in));
    }
    return program;
}

// ---- running a statement --------------------------------------------------------------------------------------

uint64_t mask(int bytes) { return bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1; }

uint64_t extend(uint64_t bits, int bytes, bool sign) {
    bits &= mask(bytes);
    if (sign && bytes < 8 && (bits >> (8 * bytes - 1) & 1)) bits |= ~mask(bytes);
    return bits;
}



// cvt.rna.tf32.f32: to the nearest value with 10 fraction bits, ties away from zero; the low 13 bits are zero.
uint32_t round_tf32(uint32_t bits) {
    if ((bits & 0x7f800000u) == 0x7f800000u) return bits & 0x007fffffu ? 0x7fffffffu : bits;  // NaN, infinities
    return (bits + 0x1000u) & 0xffffe000u;  // a carry into the exponent rounds up to the next binade, or infinity
}

// ---- mma.sync ----
struct MmaLane {
    const Instruction* at;
    uint32_t a[4], b[2], c[4];
};



// Element `index` of a register of `type`s as an integer.
int64_t integer(uint32_t word, int index, Type type) {
    uint8_t byte = uint8_t(word >> 8 * index);
    return type == Type::kS8 ? int8_t(byte) : type == Type::kU8 ? int64_t(byte) : int32_t(word);
}

// A[i][k] and B[k][j] in the lanes' fragments, as the PTX ISA lays them out ("Matrix Fragments for mma.m16n8k8",
// "... m16n8k16", "... m16n8k32"): lane 4 * groupID + threadID_in_group holds, of A, rows groupID and groupID + 8,
// and of B, column groupID.  A register packs 4 / size k-neighbours, the lowest k in the low bits; registers run
// over the row halves of A first, then over k's halves.
struct Element {
    uint32_t word;  // the register that holds it
    int index;      // its place there
};

Element a_element(const MmaLane* const* lanes, Type type, int i, int k) {
    int per = 4 / bytes_of(type), half_k = 4 * per;  // elements a register holds; the k of a register's first half
    int lane = (i % 8) * 4 + (k % half_k) / per, reg = (i >= 8) + 2 * (k >= half_k);
    return {lanes[lane]->a[reg], k % per};
}

Element b_element(const MmaLane* const* lanes, Type type, int k, int j) {
    int per = 4 / bytes_of(type), half_k = 4 * per;
    int lane = j * 4 + (k % half_k) / per, reg = k >= half_k;
    return {lanes[lane]->b[reg], k % per};
}

// D[i][j], its bits, from C[i][j] and the lanes' A and B.
uint32_t product(const Instruction& in, const MmaLane* const* lanes, Element c, int i, int j) {
    if (in.acc == Type::kS32) {
        int64_t sum = integer(c.word, c.index, in.acc);
        for (int k = 0; k < in.k; ++k) {
            Element a = a_element(lanes, in.a, i, k), b = b_element(lanes, in.b, k, j);
            sum += integer(a.word, a.index, in.a) * integer(b.word, b.index, in.b);
        }
        return uint32_t(in.satfinite ? std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX) : sum);
    }
    float sum = real(c.word, c.index, in.acc);
    for (int k = 0; k < in.k; ++k) {
        Element a = a_element(lanes, in.a, i, k), b = b_element(lanes, in.b, k, j);
        sum += real(a.word, a.index, in.a) * real(b.word, b.index, in.b);  // the product is exact; the sum rounds
    }
    return in.acc == Type::kF16 ? mmemu::Fp16Format::round(sum) : float_bits(sum);
}

constexpr char kMma[] = "mma.sync", kLdmatrix[] = "ldmatrix";

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
    MmaLane mine{&in, {}, {}, {}};
    for (size_t i = 0; i < in.operands[1].values.size(); ++i) mine.a[i] = uint32_t(c.get(in.operands[1].values[i]));
    for (size_t i = 0; i < in.operands[2].values.size(); ++i) mine.b[i] = uint32_t(c.get(in.operands[2].values[i]));
    for (size_t i = 0; i < in.operands[3].values.size(); ++i) mine.c[i] = uint32_t(c.get(in.operands[3].values[i]));
    const MmaLane* lanes[32];
    gather(c, mine, kMma, lanes);
    // Element r (0..3) of C and D is (groupID + 8 (r / 2), 2 threadID_in_group + r % 2); `per` of them a register,
    // the lower column in the low bits.
    int group = int(lane()) / 4, thread = int(lane()) % 4, per = 4 / bytes_of(in.acc);
    uint32_t d[4];
    for (int r = 0; r < 4; ++r)
        d[r] = product(in, lanes, Element{mine.c[r / per], r % per}, group + 8 * (r / 2), 2 * thread + r % 2);
    mmemu_rv_gather(nullptr, nullptr, kMma, c.line);
    const std::vector<Value>& out = in.operands[0].values;
    for (size_t n = 0; n < out.size(); ++n) {
        uint32_t word = 0;
        for (int e = 0; e < per; ++e) word |= d[n * size_t(per) + size_t(e)] << (32 / per * e);
        c.set(out[n], word);
    }
}

// ---- ldmatrix ----
struct RowAddress {
    const Instruction* at;
    uint64_t address;
};

// The 16-byte row at a lane's address: a shared address, or with no state space given a generic pointer, which
// must point into shared memory.
const unsigned char* row(const Context& c, uint64_t address, int lane_of_row) {
    if (address % 16)
        mmemu_violation("%s at line %d: lane %d's row address 0x%llx is not 16-byte aligned", c.op(), c.line,
                        lane_of_row, static_cast<unsigned long long>(address));
    if (c.in.space == Space::kShared)
        return static_cast<const unsigned char*>(mmemu_shared_pointer(address, 16, c.op(), c.line));
    const void* pointer = reinterpret_cast<const void*>(address);
    mmemu_shared_address(pointer, c.op(), c.line);
    return static_cast<const unsigned char*>(pointer);
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

void run(const Context& c) {
    const Instruction& in = c.in;
    switch (in.op) {
        case Op::kMma: return mma(c);
        case Op::kLdmatrix: return ldmatrix(c);
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
        case Op::kSetp: {
            int64_t a = int64_t(extend(c.get(1), in.bytes, in.sign)), b = int64_t(extend(c.get(2), in.bytes, in.sign));
            bool below = in.sign ? a < b : uint64_t(a) < uint64_t(b);
            bool holds[] = {a == b, a != b, below, below || a == b, !below && a != b, !below};
            return c.set(0, holds[int(in.compare)]);
        }
        case Op::kFenceProxyAsync: return mmemu_async_proxy_fence();
        case Op::kWgmma: case Op::kWgmmaFence: case Op::kWgmmaCommit: case Op::kWgmmaWait: return run_wgmma(c);
    }
}

const Program& program_of(const char* text, int count) {
    static std::map<std::pair<const char*, int>, Program> programs;  // a literal's address names its statement
    auto key = std::make_pair(text, count);
    auto found = programs.find(key);
    if (found == programs.end()) found = programs.emplace(key, parse(text, count)).first;
    return found->second;
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
    std::vector<std::string> kinds = split(constraints, ',');
    if (kinds.size() != size_t(count) && count) mmemu_unsupported("inline assembly", text, line);
    // Outputs start from the variable's value, so that "+r" reads it and an output never written keeps it;
    // an input tied to an output ("0") is that output's value.
    std::vector<uint64_t> regs(size_t(program.registers));
    for (int i = 0; i < count; ++i) {
        const std::string& kind = kinds[size_t(i)];
        regs[size_t(i)] = operands[i].bits;
        if (kind.find_first_of("=+") != std::string::npos) {
            regs[size_t(i)] = 0;
            std::memcpy(&regs[size_t(i)], reinterpret_cast<const void*>(operands[i].bits), operands[i].pointee);
        } else if (!kind.empty() && kind.find_first_not_of("0123456789") == std::string::npos) {
            regs[size_t(std::atoi(kind.c_str()))] = operands[i].bits;
        }
    }
    static uint64_t serial = 0;
    const Call call{operands, kinds, count, ++serial};
    for (const Instruction& in : program.code) run(Context{in, regs, line, call});
    for (int i = 0; i < count; ++i)
        if (kinds[size_t(i)].find_first_of("=+") != std::string::npos)
            std::memcpy(reinterpret_cast<void*>(operands[i].bits), &regs[size_t(i)], operands[i].pointee);
}
