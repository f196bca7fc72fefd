// CUDA's pipeline primitives on the emulator: __pipeline_memcpy_async is cp.async (4, 8 or 16 bytes, the last
// zfill of them zeros), __pipeline_commit cp.async.commit_group, __pipeline_wait_prior cp.async.wait_group, with
// cp.async's asynchronous copies and checked preconditions (ptx.cpp's mmemu_rv_cp_async).
#pragma once

#include <cstddef>
#include <stdint.h>  // CUDA's header brings it in (<cstdint>'s names, outside std): a kernel may use uint32_t

extern "C++" {
inline void __pipeline_memcpy_async(void* dst_shared, const void* src_global, size_t size_and_align, size_t zfill = 0,
                                    mmemu::Line at = {__builtin_LINE()}) {
    if (zfill > size_and_align)
        mmemu_violation("__pipeline_memcpy_async at line %d: zfill %zu is larger than the copy's %zu bytes", at.n,
                        zfill, size_and_align);
    mmemu_rv_cp_async(dst_shared, src_global, size_and_align, size_and_align - zfill, "__pipeline_memcpy_async", at.n);
}

inline void __pipeline_commit() { mmemu_async_commit(); }

inline void __pipeline_wait_prior(size_t prior) { mmemu_async_wait(unsigned(prior)); }
}
