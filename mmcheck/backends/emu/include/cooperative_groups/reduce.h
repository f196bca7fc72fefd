// cooperative_groups::reduce over a tile, as a butterfly of shfl_xor: every lane computes the same tree, so
// every lane gets the same result (the GPU's order of operations, and so its float rounding, may differ).
#pragma once

#include "../cooperative_groups.h"

#include <type_traits>

extern "C++" {
namespace cooperative_groups {

template <class T>
struct plus {
    T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct less {  // the smaller
    T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct greater {  // the larger
    T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
    T operator()(T a, T b) const { return a & b; }
};
template <class T>
struct bit_or {
    T operator()(T a, T b) const { return a | b; }
};
template <class T>
struct bit_xor {
    T operator()(T a, T b) const { return a ^ b; }
};

template <unsigned N, class Parent, class T, class Op>
std::decay_t<T> reduce(const thread_block_tile<N, Parent>& tile, T&& value, Op&& op,
                       mmemu::Line at = {__builtin_LINE()}) {
    std::decay_t<T> v = value;
    for (unsigned offset = N / 2; offset; offset /= 2) v = op(v, tile.shfl_xor(v, offset, at));
    return v;
}

}  // namespace cooperative_groups
}  // extern "C++"
