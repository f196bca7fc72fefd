// Hopper's asynchronous instructions in inline PTX, and their companions (part of libmmemu.so): ptx_parse.cpp parses
// a statement and ptx.cpp hands these over; their machinery is runtime_async.cpp's (mbarriers, bulk copies, TMA) and
// runtime_proxy.cpp's (the async proxy).
//   mbarrier.init / inval {.shared{::cta}}.b64; mbarrier.arrive {.expect_tx} / arrive_drop {.noComplete}
//     {.release|.relaxed .cta|.cluster} {.shared{::cta}|.shared::cluster}.b64 (state or `_`, count or tx-count);
//     mbarrier.expect_tx / complete_tx; mbarrier.test_wait / try_wait {.parity} {.acquire|.relaxed .scope}
//     {.shared{::cta}}.b64 (try_wait with or without a suspend-time hint);
//   cp.async.bulk.shared::cluster (or ::cta).global.mbarrier::complete_tx::bytes, cp.async.bulk.global.shared::cta
//     .bulk_group, cp.async.bulk.commit_group, cp.async.bulk.wait_group{.read}, cp.async.bulk.tensor.1d-5d of both
//     directions (.tile), with .L2::cache_hint (its policy operand read and ignored) and, into shared memory,
//     .multicast::cluster (a cta mask: the data lands at the same offset in each block of the mask, completing on
//     each one's mbarrier at the same offset); any other load mode is refused;
//   fence.proxy.async{.global|.shared::cta|.shared::cluster} (the async proxy's fence), elect.sync; and, as the
//     no-ops they are on a CPU, fence.proxy.tensormap::generic, fence.mbarrier_init, prefetch.tensormap,
//     cp.async.bulk.prefetch{.tensor}, setmaxnreg and griddepcontrol.
// A .shared::cluster address (mbarrier's arrive and tx-counts, a bulk copy's destination and its mbarrier) may name
// another block's shared memory (mapa's), as mmemu.h makes such addresses; a .shared::cta one is the block's own.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "mmemu.h"
#include "ptx.h"
#include "runtime.h"

namespace mmemu_ptx {

namespace {

enum Code {
    kInit, kInval, kArrive, kTxChange, kWait, kBulkLoad, kBulkStore, kTensorLoad, kTensorStore, kCommit, kBulkWait,
    kFence, kElect, kNothing,
};
// An mbarrier operation's qualifiers, and a copy's, in Instruction::flags (a TMA copy's dimensions are in
// Instruction::count).
enum Flag { kExpectTx = 1, kDrop = 2, kNoComplete = 4, kParity = 8, kComplete = 16, kMulticast = 32 };

Space space_of(const std::string& qualifier) {
    return qualifier.empty() ? Space::kGeneric : qualifier == "shared::cluster" ? Space::kCluster : Space::kShared;
}

// An opcode's qualifiers past its head, each taken at most once, in any order.
class Qualifiers {
public:
    Qualifiers(const std::vector<std::string>& q, size_t from, size_t to) : rest_(q.begin() + long(from),
                                                                               q.begin() + long(to)) {}
    bool take(const std::string& name) {
        auto found = std::find(rest_.begin(), rest_.end(), name);
        if (found == rest_.end()) return false;
        rest_.erase(found);
        return true;
    }
    // The one of `names` present ("" where none is).
    std::string one_of(std::initializer_list<const char*> names) {
        for (const char* name : names)
            if (take(name)) return name;
        return "";
    }
    bool done() const { return rest_.empty(); }

private:
    std::vector<std::string> rest_;
};

bool decode_mbarrier(Instruction& in, const std::vector<std::string>& q) {
    if (q.size() < 3 || q.back() != "b64") return false;
    const std::string& verb = q[1];
    Qualifiers rest(q, 2, q.size() - 1);
    bool waits = verb == "test_wait" || verb == "try_wait", arrives = verb == "arrive" || verb == "arrive_drop";
    bool tx = verb == "expect_tx" || verb == "complete_tx";
    std::string space = rest.one_of({"shared", "shared::cta", "shared::cluster"});
    bool remote = space == "shared::cluster";  // only arrive and the tx-counts take it
    in.space = space_of(space);
    if (arrives && rest.take("expect_tx")) in.flags |= kExpectTx;
    if (arrives && rest.take("noComplete")) in.flags |= kNoComplete;
    if (verb == "arrive_drop") in.flags |= kDrop;
    if (waits && rest.take("parity")) in.flags |= kParity;
    if (verb == "complete_tx") in.flags |= kComplete;
    bool ordered = !rest.one_of(waits ? std::initializer_list<const char*>{"acquire", "relaxed"}
                                      : std::initializer_list<const char*>{"release", "relaxed"}).empty();
    bool scoped = !rest.one_of({"cta", "cluster"}).empty();
    if (!rest.done() || ordered != scoped || (remote && !(arrives || tx)) || ((ordered || remote) && verb == "init"))
        return false;
    in.op = Op::kAsync;
    if (verb == "init") return in.code = kInit, shaped(in, "as");
    if (verb == "inval") return in.code = kInval, shaped(in, "a");
    if (tx) return in.code = kTxChange, shaped(in, "as");
    if (arrives) {
        in.code = kArrive;
        in.sink = true;
        bool counted = in.flags & (kExpectTx | kNoComplete);  // a tx-count, or a count, is then required
        return (shaped(in, "sas") || (!counted && shaped(in, "sa"))) &&
               registers(in.operands[0], 1) != (in.operands[0].values[0].reg == kSink);
    }
    if (!waits) return false;
    in.code = kWait;
    in.predicates = 1;
    return (shaped(in, "sas") || (verb == "try_wait" && shaped(in, "sass"))) && registers(in.operands[0], 1);
}

// cp.async.bulk and cp.async.bulk.tensor (q[2] is "bulk").
bool decode_bulk(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kAsync;
    if (q.size() == 4 && q[3] == "commit_group") return in.code = kCommit, shaped(in, "");
    if (q.size() >= 4 && q[3] == "wait_group")
        return in.code = kBulkWait, (q.size() == 4 || (q.size() == 5 && q[4] == "read")) && shaped(in, "s");
    bool tensor = q.size() > 4 && q[3] == "tensor", prefetch = q.size() > 3 && q[3] == "prefetch";
    bool prefetch_tensor = prefetch && q.size() > 5 && q[4] == "tensor";
    size_t head = prefetch_tensor ? 6 : tensor ? 5 : prefetch ? 4 : 3;
    const std::string& dims = q.size() > head - 1 ? q[head - 1] : q[0];
    if (tensor || prefetch_tensor) {
        if (dims.size() != 2 || dims[1] != 'd' || dims[0] < '1' || dims[0] > '5') return false;
        in.count = dims[0] - '0';
    }
    Qualifiers rest(q, head, q.size());
    bool hint = rest.take("L2::cache_hint");
    size_t extra = hint;  // the cache policy's operand, last
    if (prefetch) {
        in.code = kNothing;
        if (!rest.take("L2") || !rest.take("global")) return false;
        if (prefetch_tensor) rest.take("tile");
        return rest.done() && shaped(in, prefetch_tensor ? (hint ? "ts" : "t") : (hint ? "ass" : "as"));
    }
    if (q.size() > head && q[head] == "global" && rest.take("global")) {  // a store: global <- shared::cta
        in.code = tensor ? kTensorStore : kBulkStore;
        in.space = Space::kShared;
        if (tensor) rest.take("tile");
        if (!rest.take("shared::cta") || !rest.take("bulk_group") || !rest.done()) return false;
        const char* kinds = tensor ? (hint ? "tas" : "ta") : (hint ? "aass" : "aas");
        return shaped(in, kinds) && (!tensor || in.operands[0].values.size() == size_t(in.count) + 1);
    }
    std::string destination = rest.one_of({"shared::cluster", "shared::cta"});
    bool multicast = rest.take("multicast::cluster");
    if (tensor) rest.take("tile");
    if (destination.empty() || !rest.take("global") || !rest.take("mbarrier::complete_tx::bytes") || !rest.done())
        return false;
    extra += multicast;  // the multicast's mask of blocks, before the cache policy
    in.code = tensor ? kTensorLoad : kBulkLoad;
    in.flags |= multicast ? kMulticast : 0;
    in.space = space_of(destination);
    std::string kinds = tensor ? "ata" : "aasa";
    kinds.append(extra, 's');
    return shaped(in, kinds.c_str()) && (!tensor || in.operands[1].values.size() == size_t(in.count) + 1);
}

// fence.proxy.async{.space}; fence.proxy.tensormap::generic.{release|acquire}.scope; fence.mbarrier_init.
bool decode_fence(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kAsync;
    in.code = kNothing;
    if (q.size() == 4 && q[1] == "mbarrier_init") return q[2] == "release" && q[3] == "cluster" && shaped(in, "");
    if (q.size() >= 3 && q[2] == "async") {
        in.code = q.size() == 4 && q[3] == "global" ? kNothing : kFence;
        return (q.size() == 3 || (q.size() == 4 && (q[3] == "global" || q[3] == "shared::cta" ||
                                                    q[3] == "shared::cluster"))) && shaped(in, "");
    }
    static const std::vector<std::string> scopes = {"cta", "cluster", "gpu", "sys"};
    if (q.size() != 5 || q[2] != "tensormap::generic" || std::find(scopes.begin(), scopes.end(), q[4]) == scopes.end())
        return false;
    return q[3] == "release" ? shaped(in, "") : q[3] == "acquire" && shaped(in, "as");
}

// elect.sync d|p, membermask; setmaxnreg.{inc,dec}.sync.aligned.u32 n; griddepcontrol.{wait,launch_dependents};
// prefetch.tensormap [map].
bool decode_other(Instruction& in, const std::vector<std::string>& q) {
    in.op = Op::kAsync;
    in.code = kNothing;
    const std::string& name = q[0];
    if (name == "elect") {
        in.code = kElect;
        in.predicates = 1;
        in.sink = true;
        if (q.size() != 2 || q[1] != "sync" || !shaped(in, "ps")) return false;
        const std::vector<Value>& out = in.operands[0].values;
        return out.size() == 2 && out[1].reg >= 0 && (out[0].reg >= 0 || out[0].reg == kSink);
    }
    if (name == "setmaxnreg")
        return q.size() == 5 && (q[1] == "inc" || q[1] == "dec") && q[2] == "sync" && q[3] == "aligned" &&
               q[4] == "u32" && shaped(in, "s") && in.operands[0].values[0].reg == kImmediate;
    if (name == "griddepcontrol")
        return q.size() == 2 && (q[1] == "wait" || q[1] == "launch_dependents") && shaped(in, "");
    return name == "prefetch" && q.size() == 2 && q[1] == "tensormap" && shaped(in, "a");
}

// The .shared::cluster address (mmemu.h's) of the instruction's operand: a .shared::cta address is the block's own,
// a .shared::cluster one may be another block's, and a generic address must point into a block's shared memory.
uint32_t shared_address(const Context& c, size_t operand) {
    uint64_t address = c.address(operand);
    const void* p = c.in.space == Space::kShared    ? mmemu_shared_pointer(address, 1, c.op(), c.line)
                    : c.in.space == Space::kCluster ? mmemu_cluster_pointer(address, 1, c.op(), c.line)
                                                    : reinterpret_cast<const void*>(address);
    return mmemu_cluster_address(p, c.op(), c.line);
}

// A multicast's cta mask (the operand after the mbarrier's), or 0.
uint16_t cta_mask(const Context& c, size_t mbarrier) {
    if (!(c.in.flags & kMulticast)) return 0;
    uint16_t mask = uint16_t(c.get(mbarrier + 1));
    if (!mask) mmemu_violation("%s at line %d: a cta mask of 0 names no block to copy to", c.op(), c.line);
    return mask;
}

void elect(const Context& c) {
    unsigned mask = unsigned(c.get(1)), l = lane();
    if (!(mask >> l & 1))
        mmemu_violation("%s at line %d: the calling lane %u is not in membermask 0x%08x", c.op(), c.line, l, mask);
    // The lanes of the mask that take part (those that have not exited) meet; the lowest of them is elected.
    unsigned taking_part = unsigned(mmemu_rv_warp(MMEMU_BALLOT, mask, 1, 0, 32, c.line));
    unsigned leader = unsigned(__builtin_ctz(taking_part));
    c.set(c.in.operands[0].values[0], leader);
    c.set(c.in.operands[0].values[1], leader == l);
}

void tensor(const Context& c, bool load) {
    const Operand& box = c.in.operands[load ? 1 : 0];
    int32_t coords[5];
    for (int d = 0; d < c.in.count; ++d) coords[d] = int32_t(c.get(box.values[size_t(d) + 1]));
    const void* map = reinterpret_cast<const void*>(c.get(box.values[0]));
    if (load)
        mmemu_rt::tensor_load(shared_address(c, 0), map, coords, c.in.count, shared_address(c, 2), cta_mask(c, 2),
                              c.op(), c.line);
    else
        mmemu_rt::tensor_store(map, coords, c.in.count, shared_address(c, 1), c.op(), c.line);
}

}  // namespace

bool async_family(const std::vector<std::string>& q) {
    const std::string& name = q[0];
    return name == "mbarrier" || (name == "cp" && q.size() > 2 && q[1] == "async" && q[2] == "bulk") ||
           (name == "fence" && q.size() > 1 && (q[1] == "proxy" || q[1] == "mbarrier_init")) || name == "elect" ||
           name == "setmaxnreg" || name == "griddepcontrol" || (name == "prefetch" && q.size() > 1 &&
                                                                 q[1] == "tensormap");
}

bool decode_async(Instruction& in, const std::vector<std::string>& q) {
    if (q[0] == "mbarrier") return decode_mbarrier(in, q);
    if (q[0] == "cp") return decode_bulk(in, q);
    if (q[0] == "fence") return decode_fence(in, q);
    return decode_other(in, q);
}

void run_async(const Context& c) {
    const Instruction& in = c.in;
    switch (Code(in.code)) {
        case kInit: return mmemu_rt::mbarrier_init(shared_address(c, 0), uint32_t(c.get(1)), c.op(), c.line);
        case kInval: return mmemu_rt::mbarrier_inval(shared_address(c, 0), c.op(), c.line);
        case kArrive: {
            bool expect = in.flags & kExpectTx;
            uint32_t count = !expect && in.operands.size() == 3 ? uint32_t(c.get(2)) : 1;
            uint32_t tx = expect ? uint32_t(c.get(2)) : 0;
            return c.set(0, mmemu_rt::mbarrier_arrive(shared_address(c, 1), count, tx, in.flags & kDrop,
                                                      in.flags & kNoComplete, c.op(), c.line));
        }
        case kTxChange: {
            int64_t bytes = int64_t(uint32_t(c.get(1)));
            return mmemu_rt::mbarrier_tx_change(shared_address(c, 0), in.flags & kComplete ? -bytes : bytes, c.op(),
                                                c.line);
        }
        case kWait:
            return c.set(0, mmemu_rt::mbarrier_wait(shared_address(c, 1), c.get(2), in.flags & kParity, c.op(),
                                                    c.line));
        case kBulkLoad:
            return mmemu_rt::bulk_load(shared_address(c, 0), reinterpret_cast<const void*>(c.address(1)),
                                       uint32_t(c.get(2)), shared_address(c, 3), cta_mask(c, 3), c.op(), c.line);
        case kBulkStore:
            return mmemu_rt::bulk_store(reinterpret_cast<void*>(c.address(0)), shared_address(c, 1),
                                        uint32_t(c.get(2)), c.op(), c.line);
        case kTensorLoad: return tensor(c, true);
        case kTensorStore: return tensor(c, false);
        case kCommit: return mmemu_rt::bulk_commit();
        case kBulkWait: return mmemu_rt::bulk_wait(unsigned(c.get(0)));
        case kFence: return mmemu_rt::proxy_fence();
        case kElect: return elect(c);
        case kNothing: return;
    }
}

}  // namespace mmemu_ptx
