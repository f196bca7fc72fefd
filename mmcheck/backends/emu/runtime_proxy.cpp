// The async proxy's view of shared memory (part of libmmemu.so): wgmma, and the bulk copies, read shared memory
// through the async proxy, which sees what ordinary stores (the generic proxy) wrote only once a fence.proxy.async
// has ordered them.  The runtime keeps, for each block, an image of its shared memory as a fence left it (the
// poison at the block's start); a read by the async proxy of bytes that differ from the image reads what ordinary
// stores wrote since the last fence, and ends the launch.  Any thread's fence updates the image, so a fence missing
// in one of several writers goes unseen; a missing fence, or a write after the last one, is caught.
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "mmemu.h"
#include "runtime.h"

extern "C" mmemu_dim3 blockIdx, gridDim;

namespace {

using mmemu::runtime::SharedWindow;

constexpr size_t kKeptBlocks = 32;  // images kept: more than a cluster's blocks, which run together

std::vector<unsigned char>& image(const SharedWindow& w) {
    static std::map<uint64_t, std::vector<unsigned char>> images;
    static std::deque<uint64_t> order;  // of arrival: a block long past is forgotten
    uint64_t id = blockIdx.x + uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
    auto found = images.find(id);
    if (found != images.end()) return found->second;
    if (order.size() == kKeptBlocks) {
        images.erase(order.front());
        order.pop_front();
    }
    order.push_back(id);
    return images[id] = std::vector<unsigned char>(size_t(w.hi - w.lo), mmemu::runtime::kSharedPoison);
}

// Copies between shared memory and its image, the gap left out: to the image (a fence, or the async proxy's own
// writes) or the bytes compared.
void to_image(const SharedWindow& w, const unsigned char* p, size_t size) {
    std::vector<unsigned char>& kept = image(w);
    for (const unsigned char* end = p + size; p < end; ++p)
        if (p < w.gap || p >= w.gap_end) kept[size_t(p - w.lo)] = *p;
}

}  // namespace

MMEMU_EXPORT void mmemu_async_proxy_fence(void) {
    SharedWindow w = mmemu::runtime::shared_window();
    if (!w.lo) return;
    std::vector<unsigned char>& kept = image(w);
    std::memcpy(kept.data(), w.lo, size_t(w.gap - w.lo));
    std::memcpy(kept.data() + (w.gap_end - w.lo), w.gap_end, size_t(w.hi - w.gap_end));
}

MMEMU_EXPORT void mmemu_async_proxy_write(const void* pointer, size_t size) {
    to_image(mmemu::runtime::shared_window(), static_cast<const unsigned char*>(pointer), size);
}

MMEMU_EXPORT void mmemu_async_proxy_read(const void* pointer, size_t size, const char* op, int line) {
    SharedWindow w = mmemu::runtime::shared_window();
    const unsigned char* p = static_cast<const unsigned char*>(pointer);
    const std::vector<unsigned char>& kept = image(w);
    for (size_t i = 0; i < size; ++i)
        if (p[i] != kept[size_t(p + i - w.lo)])
            mmemu_violation("%s at line %d reads shared memory at 0x%llx, which ordinary stores wrote after the "
                            "block's last fence.proxy.async: the async proxy (wgmma, bulk copies) sees them only "
                            "after one", op, line, static_cast<unsigned long long>(p + i - w.lo));
}
