// What the sources of the runtime share (runtime.cpp, runtime_proxy.cpp; part of libmmemu.so, never seen by
// kernels).
#pragma once

#pragma GCC visibility push(hidden)
namespace mmemu::runtime {

constexpr unsigned char kSharedPoison = 0xff;  // every byte of shared memory at a block's start: NaN for floats

// The running block's shared memory: [lo, gap) and [gap_end, hi), the gap being the dynamic shared memory the launch
// did not ask for (nothing may touch it); all null where the kernel has none.
struct SharedWindow {
    unsigned char *lo, *gap, *gap_end, *hi;
};
SharedWindow shared_window();

}  // namespace mmemu::runtime
#pragma GCC visibility pop
