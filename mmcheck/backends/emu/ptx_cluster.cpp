// Thread-block clusters in inline PTX (part of libmmemu.so; ptx_parse.cpp parses the statement, ptx.cpp hands these
// instructions here), with the PTX ISA's semantics:
//   the special registers %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid (each .x, .y, .z),
//     %cluster_ctarank, %cluster_nctarank and the predicate %is_explicit_cluster, with %tid, %ntid, %ctaid, %nctaid
//     (.x, .y, .z) and %laneid, read by any instruction (mov; mov.pred and selp take the predicate);
//   barrier.cluster.arrive{.release, .relaxed}{.aligned} and barrier.cluster.wait{.acquire}{.aligned}: the
//     runtime's cluster barrier (mmemu_rv_cluster_arrive, _wait);
//   mapa{.shared::cluster}.u32/.u64 (an address in the calling block's or another's shared memory, to the same
//     place in block rank b's) and getctarank{.shared::cluster}.u32/.u64 (the rank whose shared memory holds it);
//   atom and red of .and .or .xor .cas .exch .add .inc .dec .min .max, on 32- and 64-bit types as the ISA pairs
//     them, in any state space (.shared::cluster reaching another block's shared memory, as ld and st do);
//   fence{.sc, .acq_rel}.cta/.cluster/.gpu/.sys.
// The threads run one at a time and switch only at a rendezvous, so every access is atomic and every thread sees
// every access in one order: each memory order and fence the ISA names holds with no more done.
#include "ptx.h"

#include <cstring>
#include <map>
#include <set>
#include <string>

extern "C" mmemu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

using namespace mmemu_ptx;

enum Special {
    kTid, kNtid, kCtaid, kNctaid, kClusterid, kNclusterid, kClusterCtaid, kClusterNctaid,  // .x, .y, .z
    kLaneid, kClusterCtarank, kClusterNctarank, kIsExplicitCluster,
};

unsigned component(const mmemu_dim3& d, int axis) { return axis == 0 ? d.x : axis == 1 ? d.y : d.z; }

// ---- atom, red ----
double as_double(uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

template <class T>
uint64_t bits_of(T value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof value);
    return bits;
}

// What memory holds after the operation, from what it held (old) and the operands b and c (.cas: compare b, swap c).
uint64_t combine(const Instruction& in, uint64_t old, uint64_t b, uint64_t c) {
    uint64_t m = mask(in.bytes);
    int64_t so = int64_t(extend(old, in.bytes, true)), sb = int64_t(extend(b, in.bytes, true));
    bool less = in.sign ? sb < so : (b & m) < (old & m);  // b below old
    switch (in.atom) {
        case Atom::kAnd: return old & b;
        case Atom::kOr: return old | b;
        case Atom::kXor: return old ^ b;
        case Atom::kCas: return (old & m) == (b & m) ? c : old;
        case Atom::kExch: return b;
        case Atom::kAdd:
            if (!in.floating) return old + b;
            return in.bytes == 4 ? bits_of(as_float(uint32_t(old)) + as_float(uint32_t(b)))
                                 : bits_of(as_double(old) + as_double(b));
        case Atom::kInc: return (old & m) >= (b & m) ? 0 : old + 1;
        case Atom::kDec: return (old & m) == 0 || (old & m) > (b & m) ? b : old - 1;
        case Atom::kMin: return less ? b : old;
        case Atom::kMax: return less || (old & m) == (b & m) ? old : b;
    }
    return old;
}

void atom(const Context& c) {
    const Instruction& in = c.in;
    size_t at = in.operands[0].kind == Operand::kAddress ? 0 : 1;  // red has no destination
    unsigned char* p = c.memory(c.address(at), size_t(in.bytes));
    uint64_t old = 0;
    std::memcpy(&old, p, size_t(in.bytes));
    uint64_t now = combine(in, old, c.get(at + 1), in.atom == Atom::kCas ? c.get(at + 2) : 0);
    std::memcpy(p, &now, size_t(in.bytes));
    if (at) c.set(0, old);
}

// ---- decoding ----
bool decode_barrier(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kBarrierCluster;
    in.arrive = q[2] == "arrive";
    if (!in.arrive && q[2] != "wait") return false;
    size_t i = 3;
    if (i < q.size() && (in.arrive ? q[i] == "release" || q[i] == "relaxed" : q[i] == "acquire")) ++i;
    if (i < q.size() && q[i] == "aligned") {
        in.aligned = true;
        ++i;
    }
    return i == q.size() && shaped(in, "");
}

// mapa and getctarank: {.shared::cluster}.u32/.u64 (no state space: generic addresses).
bool decode_rank(Instruction& in, const std::vector<std::string>& q) {
    in.op = q[0] == "mapa" ? Op::kMapa : Op::kGetctarank;
    if (q.size() == 3 && q[1] == "shared::cluster") in.space = Space::kCluster;
    else if (q.size() != 2) return false;
    in.bytes = q.back() == "u32" ? 4 : q.back() == "u64" ? 8 : 0;
    return in.bytes && shaped(in, in.op == Op::kMapa ? "sss" : "ss") && registers(in.operands[0], 1);
}

// atom{.sem}{.scope}{.space}.op.type d, [a], b{, c} and red{.sem}{.scope}{.space}.op.type [a], b: the qualifiers
// before the operation each at most once, in any order, as ptxas takes them.
bool decode_atom(Instruction& in, const std::vector<std::string>& q) {
    static const std::map<std::string, std::pair<Atom, std::set<std::string>>> ops = {
        {"and", {Atom::kAnd, {"b32", "b64"}}},  {"or", {Atom::kOr, {"b32", "b64"}}},
        {"xor", {Atom::kXor, {"b32", "b64"}}},  {"cas", {Atom::kCas, {"b32", "b64"}}},
        {"exch", {Atom::kExch, {"b32", "b64"}}}, {"add", {Atom::kAdd, {"u32", "s32", "u64", "f32", "f64"}}},
        {"inc", {Atom::kInc, {"u32"}}},         {"dec", {Atom::kDec, {"u32"}}},
        {"min", {Atom::kMin, {"u32", "s32", "u64", "s64"}}}, {"max", {Atom::kMax, {"u32", "s32", "u64", "s64"}}}};
    static const std::map<std::string, int> said = {
        {"relaxed", 0}, {"acquire", 0}, {"release", 0}, {"acq_rel", 0}, {"cta", 1}, {"cluster", 1}, {"gpu", 1},
        {"sys", 1}, {"global", 2}, {"shared", 2}, {"shared::cta", 2}, {"shared::cluster", 2}};
    bool red = q[0] == "red";
    in.op = Op::kAtom;
    if (q.size() < 3) return false;
    auto found = ops.find(q[q.size() - 2]);
    if (found == ops.end() || !found->second.second.count(q.back()) || (red && found->second.first == Atom::kCas))
        return false;
    in.atom = found->second.first;
    in.floating = q.back()[0] == 'f';
    scalar_type(q.back(), in.bytes, in.sign);
    std::set<int> seen;
    for (size_t i = 1; i + 2 < q.size(); ++i) {
        auto kind = said.find(q[i]);
        if (kind == said.end() || !seen.insert(kind->second).second) return false;
        if (kind->second == 2)
            in.space = q[i] == "global" ? Space::kGlobal : q[i] == "shared::cluster" ? Space::kCluster : Space::kShared;
    }
    if (red) return shaped(in, "as");
    return shaped(in, in.atom == Atom::kCas ? "sass" : "sas") && registers(in.operands[0], 1);
}

}  // namespace

namespace mmemu_ptx {

bool special_register(const std::string& name, int& number, bool& predicate) {
    static const std::map<std::string, Special> vectors = {
        {"tid", kTid},           {"ntid", kNtid},           {"ctaid", kCtaid},
        {"nctaid", kNctaid},     {"clusterid", kClusterid}, {"nclusterid", kNclusterid},
        {"cluster_ctaid", kClusterCtaid}, {"cluster_nctaid", kClusterNctaid}};
    static const std::map<std::string, Special> scalars = {
        {"laneid", kLaneid}, {"cluster_ctarank", kClusterCtarank}, {"cluster_nctarank", kClusterNctarank},
        {"is_explicit_cluster", kIsExplicitCluster}};
    size_t dot = name.find('.');
    if (dot == std::string::npos) {
        auto found = scalars.find(name);
        if (found == scalars.end()) return false;
        number = 4 * found->second;
        predicate = found->second == kIsExplicitCluster;
        return true;
    }
    auto found = vectors.find(name.substr(0, dot));
    std::string axis = name.substr(dot + 1);
    if (found == vectors.end() || axis.size() != 1 || axis[0] < 'x' || axis[0] > 'z') return false;
    number = 4 * found->second + (axis[0] - 'x');
    return true;
}

uint64_t read_special(int number) {
    const mmemu_cluster_info& cluster = *mmemu_cluster_now();
    int axis = number % 4;
    switch (Special(number / 4)) {
        case kTid: return component(threadIdx, axis);
        case kNtid: return component(blockDim, axis);
        case kCtaid: return component(blockIdx, axis);
        case kNctaid: return component(gridDim, axis);
        case kClusterid: return component(cluster.id, axis);
        case kNclusterid: return component(cluster.count, axis);
        case kClusterCtaid: return component(cluster.index, axis);
        case kClusterNctaid: return component(cluster.dims, axis);
        case kLaneid: return lane();
        case kClusterCtarank: return cluster.rank;
        case kClusterNctarank: return cluster.size;
        case kIsExplicitCluster: return cluster.explicit_dims != 0;
    }
    return 0;
}

bool decode_cluster(Instruction& in, const std::vector<std::string>& q) {
    const std::string& name = q[0];
    if (name == "barrier" && q.size() >= 3 && q[1] == "cluster") return decode_barrier(in, q);
    if (name == "mapa" || name == "getctarank") return decode_rank(in, q);
    if (name == "atom" || name == "red") return decode_atom(in, q);
    if (name == "fence") {
        static const std::set<std::string> scopes = {"cta", "cluster", "gpu", "sys"};
        in.op = Op::kFence;
        size_t scope = q.size() > 1 && (q[1] == "sc" || q[1] == "acq_rel") ? 2 : 1;
        return q.size() == scope + 1 && scopes.count(q.back()) && shaped(in, "");
    }
    return false;
}

void run_cluster(const Context& c) {
    const Instruction& in = c.in;
    switch (in.op) {
        case Op::kBarrierCluster:
            if (in.arrive) return mmemu_rv_cluster_arrive(c.op(), in.aligned ? &in : nullptr, c.line);
            return mmemu_rv_cluster_wait(c.op(), in.aligned ? &in : nullptr, c.line);
        case Op::kFence: return;  // the threads' accesses are in one order already
        case Op::kMapa: {
            unsigned rank = unsigned(c.get(2));
            if (in.space == Space::kGeneric) {
                const void* p = reinterpret_cast<const void*>(c.get(1));
                return c.set(0, reinterpret_cast<uintptr_t>(mmemu_cluster_map(p, rank, c.op(), c.line)) & mask(in.bytes));
            }
            void* mapped = mmemu_cluster_map(mmemu_cluster_pointer(c.get(1), 1, c.op(), c.line), rank, c.op(), c.line);
            return c.set(0, mmemu_cluster_address(mapped, c.op(), c.line));
        }
        case Op::kGetctarank: {
            const void* p = in.space == Space::kGeneric ? reinterpret_cast<const void*>(c.get(1))
                                                        : mmemu_cluster_pointer(c.get(1), 1, c.op(), c.line);
            return c.set(0, mmemu_cluster_rank(p, c.op(), c.line));
        }
        case Op::kAtom: return atom(c);
        default: return;
    }
}

}  // namespace mmemu_ptx
