// WMMA (nvcuda::wmma) on the emulator: 16x16x16 tiles of half or bfloat16 inputs with float or half
// accumulators.  Other shapes and types fail to compile with a message that names them.
//
// A fragment is spread over the 32 lanes of a warp, 8 elements each: element e of lane l is (row, col) =
// divmod(32 e + l, 16) of the fragment's 16x16 matrix (A is M x K, B is K x N, an accumulator M x N), so
// element-wise code (scaling x[i] by alpha) never needs to know.  load_matrix_sync, mma_sync and
// store_matrix_sync are warp-collective (mmemu::warp_collective).  What the hardware assumes of them is
// checked, and a violation ends the launch naming the call and its line: all 32 lanes of the warp take
// part, with the same pointer, ldm and layout; ldm is a multiple of 16 bytes; the pointer is 32-byte
// aligned.
//
// Arithmetic: each product of two 16-bit inputs is exact in float (barring bfloat16 underflow); D[i][j]
// starts from C[i][j] and adds the 16 products in k order in float, rounding each sum to nearest; a half
// accumulator is rounded to half once at the end.  Tensor cores also form exact products but add them
// with their own internal alignment, order and rounding, so results are the GPU's exactly where the sums
// are exact (small integers, say) and may differ in the last bits otherwise.
#pragma once

#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

extern "C++" {
namespace nvcuda {
namespace wmma {

// Tags only, incomplete as CUDA's are.
struct matrix_a;
struct matrix_b;
struct accumulator;
struct row_major;
struct col_major;
enum layout_t { mem_row_major, mem_col_major };

// Element types CUDA has and the emulator does not: named, so that using them fails in fragment below.
namespace precision {
struct tf32;
}  // namespace precision
namespace experimental {
namespace precision {
struct u4;
struct s4;
struct b1;
}  // namespace precision
}  // namespace experimental

template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment {
    static constexpr bool is_input = std::is_same<Use, matrix_a>::value || std::is_same<Use, matrix_b>::value;
    static_assert(m == 16 && n == 16 && k == 16, "mmemu: the emulator's WMMA has only the m16n16k16 shape");
    static_assert(is_input ? std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value
                           : std::is_same<T, float>::value || std::is_same<T, __half>::value,
                  "mmemu: the emulator's WMMA has only half or __nv_bfloat16 inputs and float or half "
                  "accumulators");

public:
    using element_type = T;
    static constexpr int num_elements = 16 * 16 / 32;
    T x[num_elements];
};

}  // namespace wmma
}  // namespace nvcuda

namespace mmemu {
namespace wmma {
template <class T>
struct identity {
    using type = T;
};
template <class T>
using nondeduced = typename identity<T>::type;  // a parameter not deduced from: the usual conversions apply

// The mapping: element e of lane l is element 32 e + l, in row-major order, of the fragment's matrix.
constexpr int row_of(int e, int l) { return (e * 32 + l) / 16; }
constexpr int col_of(int e, int l) { return (e * 32 + l) % 16; }
// And back: the lane and the slot (e) that hold element (row, col).
constexpr int lane_of(int row, int col) { return (row * 16 + col) % 32; }
constexpr int slot_of(int row, int col) { return (row * 16 + col) / 32; }

// One lane's part of a load or store: its fragment and the arguments that all lanes must agree on.
template <class Frag, class Pointer>
struct Transfer {
    Frag* frag;
    Pointer ptr;
    unsigned ldm;
    bool row_major;
};

// The preconditions one lane can check alone: CUDA's rule that ldm is a multiple of 16 bytes, and a
// 256-bit aligned pointer.
template <class T>
void check_arguments(const char* op, int line, const void* ptr, unsigned ldm) {
    constexpr unsigned multiple = 16 / sizeof(T);
    if (ldm % multiple)
        mmemu_violation("%s at line %d: ldm = %u is not a multiple of %u (%u-bit elements)", op, line, ldm, multiple,
                        unsigned(8 * sizeof(T)));
    if (auto offset = reinterpret_cast<uintptr_t>(ptr) % 32)
        mmemu_violation("%s at line %d: the pointer %p is not 256-bit aligned (it is %u bytes past a 32-byte "
                        "boundary)", op, line, ptr, unsigned(offset));
}

// The preconditions all lanes must meet together, checked by each lane against lane 0.
template <class Frag, class Pointer>
void check_agreement(const char* op, int line, const Transfer<Frag, Pointer>* const* lanes) {
    const Transfer<Frag, Pointer>& mine = *lanes[lane()], &first = *lanes[0];
    if (mine.ptr != first.ptr || mine.ldm != first.ldm || mine.row_major != first.row_major)
        mmemu_violation("%s at line %d: lane %u passed (pointer %p, ldm %u, %s) but lane 0 passed (%p, %u, %s); all "
                        "lanes of the warp must pass the same", op, line, lane(), static_cast<const void*>(mine.ptr),
                        mine.ldm, mine.row_major ? "row major" : "col major", static_cast<const void*>(first.ptr),
                        first.ldm, first.row_major ? "row major" : "col major");
}

// Moves the calling lane's elements between its fragment and memory: load (memory -> fragment) or store.
template <bool load, class Frag, class Pointer>
void transfer(const char* op, int line, const Transfer<Frag, Pointer>& mine) {
    check_arguments<typename std::remove_const<Frag>::type::element_type>(op, line, mine.ptr, mine.ldm);
    warp_collective(op, line, mine, [&](const Transfer<Frag, Pointer>* const* lanes) {
        check_agreement(op, line, lanes);
        for (int e = 0; e < Frag::num_elements; ++e) {
            int row = row_of(e, int(lane())), col = col_of(e, int(lane()));
            size_t at = mine.row_major ? size_t(row) * mine.ldm + col : size_t(col) * mine.ldm + row;
            if constexpr (load) mine.frag->x[e] = mine.ptr[at];
            else mine.ptr[at] = mine.frag->x[e];
        }
    });
}

// One lane's part of mma_sync: its four fragments.
template <class A, class B, class C, class D>
struct Product {
    const A* a;
    const B* b;
    const C* c;
    D* d;
};
}  // namespace wmma
}  // namespace mmemu

namespace nvcuda {
namespace wmma {

template <class Use, class T, class Layout>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, const mmemu::wmma::nondeduced<T>& value) {
    for (T& element : f.x) element = value;
}

template <class Use, class T, class Layout,
          class = std::enable_if_t<std::is_same<Use, matrix_a>::value || std::is_same<Use, matrix_b>::value>>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const mmemu::wmma::nondeduced<T>* ptr, unsigned ldm,
                      mmemu::Line at = {__builtin_LINE()}) {
    using Frag = fragment<Use, 16, 16, 16, T, Layout>;
    mmemu::wmma::transfer<true>("wmma::load_matrix_sync", at.n,
                                mmemu::wmma::Transfer<Frag, const T*>{&f, ptr, ldm,
                                                                      std::is_same<Layout, row_major>::value});
}

template <class T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const mmemu::wmma::nondeduced<T>* ptr, unsigned ldm,
                      layout_t layout, mmemu::Line at = {__builtin_LINE()}) {
    using Frag = fragment<accumulator, 16, 16, 16, T>;
    mmemu::wmma::transfer<true>("wmma::load_matrix_sync", at.n,
                                mmemu::wmma::Transfer<Frag, const T*>{&f, ptr, ldm, layout == mem_row_major});
}

template <class T>
void store_matrix_sync(mmemu::wmma::nondeduced<T>* ptr, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm,
                       layout_t layout, mmemu::Line at = {__builtin_LINE()}) {
    using Frag = const fragment<accumulator, 16, 16, 16, T>;
    mmemu::wmma::transfer<false>("wmma::store_matrix_sync", at.n,
                                 mmemu::wmma::Transfer<Frag, T*>{&f, ptr, ldm, layout == mem_row_major});
}

// bfloat16 inputs accumulate in float only, as on the GPU.
template <class In, class LayoutA, class LayoutB, class Out, class Acc,
          class = std::enable_if_t<std::is_same<In, __half>::value ||
                                   (std::is_same<Out, float>::value && std::is_same<Acc, float>::value)>>
void mma_sync(fragment<accumulator, 16, 16, 16, Out>& d, const fragment<matrix_a, 16, 16, 16, In, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, In, LayoutB>& b, const fragment<accumulator, 16, 16, 16, Acc>& c,
              mmemu::Line at = {__builtin_LINE()}) {
    using namespace mmemu::wmma;
    using Record = Product<fragment<matrix_a, 16, 16, 16, In, LayoutA>, fragment<matrix_b, 16, 16, 16, In, LayoutB>,
                           fragment<accumulator, 16, 16, 16, Acc>, fragment<accumulator, 16, 16, 16, Out>>;
    mmemu::warp_collective("wmma::mma_sync", at.n, Record{&a, &b, &c, &d}, [&](const Record* const* lanes) {
        for (int e = 0; e < d.num_elements; ++e) {
            int i = row_of(e, int(mmemu::lane())), j = col_of(e, int(mmemu::lane()));
            float sum = float(c.x[e]);  // C and D share the mapping: element e of this lane is (i, j) in both
            for (int k = 0; k < 16; ++k) {
                float a_ik = float(lanes[lane_of(i, k)]->a->x[slot_of(i, k)]);
                float b_kj = float(lanes[lane_of(k, j)]->b->x[slot_of(k, j)]);
                sum += a_ik * b_kj;  // the product is exact; the sum rounds
            }
            d.x[e] = Out(sum);
        }
    });
}

}  // namespace wmma
}  // namespace nvcuda
}  // extern "C++"
