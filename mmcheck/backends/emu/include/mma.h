// WMMA (nvcuda::wmma) on the emulator: the fragments CUDA declares for half and bfloat16 inputs at m16n16k16,
// m32n8k16 and m8n32k16, with float or half accumulators (bfloat16: float only), and for precision::tf32 inputs
// at m16n16k8 with float accumulators.  Other shapes and types fail to compile with a message that names them.
//
// A fragment holds a matrix (A is m x k, B is k x n, an accumulator m x n) spread over the 32 lanes of a warp,
// num_elements each as CUDA declares them: rows * cols / 32, but 16 for every half input fragment (CUDA's count,
// in which an element of a 16 x 16 A is held twice and one of a 16 x 8 B four times).  Element e of lane l is
// element (32 e + l) mod (rows * cols), in row-major order, of the matrix, so that the copies of an element agree
// and element-wise code (scaling x[i] by alpha) never needs to know.  load_matrix_sync, mma_sync and
// store_matrix_sync are warp-collective (mmemu::warp_collective).  What the hardware assumes of them is checked,
// and a violation ends the launch naming the call and its line: all 32 lanes of the warp take part, with the same
// pointer, ldm and layout; ldm is a multiple of 16 bytes; the pointer is 32-byte aligned.
//
// Arithmetic: each product of two inputs is exact in float (barring bfloat16 underflow); D[i][j] starts from
// C[i][j] and adds the k products in k order in float, rounding each sum to nearest; a half accumulator is
// rounded to half once at the end.  Tensor cores also form exact products but add them with their own internal
// alignment, order and rounding, so results are the GPU's exactly where the sums are exact (small integers, say)
// and may differ in the last bits otherwise.  A tf32 fragment holds floats, which CUDA requires a kernel to round
// with __float_to_tf32 (to 10 fraction bits, ties away from zero, as cvt.rna.tf32.f32); mma_sync reads each as
// its top 19 bits, the float with its 13 low fraction bits dropped, as tensor cores do.
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

namespace precision {
struct tf32;
}  // namespace precision
// Element types CUDA has and the emulator does not: named, so that using them fails in fragment below.
namespace experimental {
namespace precision {
struct u4;
struct s4;
struct b1;
}  // namespace precision
}  // namespace experimental

inline float __float_to_tf32(float in) { return mmemu_round_tf32(in); }

}  // namespace wmma
}  // namespace nvcuda

namespace mmemu {
namespace wmma {
using nvcuda::wmma::accumulator;
using nvcuda::wmma::matrix_a;
using nvcuda::wmma::matrix_b;
using tf32 = nvcuda::wmma::precision::tf32;

// What a fragment of element type T keeps in x[]: a tf32 is kept as the float it is read from.
template <class T>
struct Storage {
    using type = T;
};
template <>
struct Storage<tf32> {
    using type = float;
};
template <class T>
using stored = typename Storage<T>::type;  // a parameter of this type is not deduced from: conversions apply

template <class Use>
constexpr bool is_input = std::is_same<Use, matrix_a>::value || std::is_same<Use, matrix_b>::value;

// The matrix a fragment of shape m x n x k holds, and where its elements are: element e of lane l is element
// 32 e + l, modulo its size and in row-major order; element (row, col) is first held by the lane and slot (e)
// below.
template <class Use, int m, int n, int k>
struct Matrix {
    static constexpr int rows = std::is_same<Use, matrix_b>::value ? k : m;
    static constexpr int cols = std::is_same<Use, matrix_a>::value ? k : n;
    static constexpr int row_of(int e, int l) { return (e * 32 + l) % (rows * cols) / cols; }
    static constexpr int col_of(int e, int l) { return (e * 32 + l) % cols; }
    static constexpr int lane_of(int row, int col) { return (row * cols + col) % 32; }
    static constexpr int slot_of(int row, int col) { return (row * cols + col) / 32; }
};

template <class Frag>
struct MatrixOf;
}  // namespace wmma
}  // namespace mmemu

namespace nvcuda {
namespace wmma {

template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment {
    static constexpr bool k16 = k == 16 && ((m == 16 && n == 16) || (m == 32 && n == 8) || (m == 8 && n == 32));
    static constexpr bool k8 = m == 16 && n == 16 && k == 8;
    static_assert(k16 || k8, "mmemu: the emulator's WMMA has only the shapes m16n16k16, m32n8k16, m8n32k16 and "
                             "m16n16k8");
    static_assert(mmemu::wmma::is_input<Use>
                      ? (k16 && (std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value)) ||
                            (k8 && std::is_same<T, precision::tf32>::value)
                      : std::is_same<T, float>::value || (k16 && std::is_same<T, __half>::value),
                  "mmemu: the emulator's WMMA has half or __nv_bfloat16 inputs with float or half accumulators "
                  "at k = 16, and precision::tf32 inputs with float accumulators at m16n16k8");
    using Matrix = mmemu::wmma::Matrix<Use, m, n, k>;

public:
    using element_type = T;
    using storage_element_type = mmemu::wmma::stored<T>;
    static constexpr int num_elements =
        mmemu::wmma::is_input<Use> && std::is_same<T, __half>::value ? 16 : Matrix::rows * Matrix::cols / 32;
    static constexpr int num_storage_elements = num_elements;
    storage_element_type x[num_elements];
};

}  // namespace wmma
}  // namespace nvcuda

namespace mmemu {
namespace wmma {
template <class Use, int m, int n, int k, class T, class Layout>
struct MatrixOf<nvcuda::wmma::fragment<Use, m, n, k, T, Layout>> : Matrix<Use, m, n, k> {};
template <class Frag>
struct MatrixOf<const Frag> : MatrixOf<Frag> {};

// An element of a fragment as the tensor core reads it: a tf32 as its top 19 bits.
template <class T>
float operand(const stored<T>& x) {
    if constexpr (std::is_same<T, tf32>::value)
        return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x) & 0xffffe000u);
    else return float(x);
}

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
    using Matrix = MatrixOf<Frag>;
    check_arguments<typename std::remove_const<Frag>::type::storage_element_type>(op, line, mine.ptr, mine.ldm);
    warp_collective(op, line, mine, [&](const Transfer<Frag, Pointer>* const* lanes) {
        check_agreement(op, line, lanes);
        for (int e = 0; e < Frag::num_elements; ++e) {
            int row = Matrix::row_of(e, int(lane())), col = Matrix::col_of(e, int(lane()));
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

template <class Use, int m, int n, int k, class T, class Layout>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, const mmemu::wmma::stored<T>& value) {
    for (auto& element : f.x) element = value;
}

template <class Use, int m, int n, int k, class T, class Layout, class = std::enable_if_t<mmemu::wmma::is_input<Use>>>
void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& f, const mmemu::wmma::stored<T>* ptr, unsigned ldm,
                      mmemu::Line at = {__builtin_LINE()}) {
    using Frag = fragment<Use, m, n, k, T, Layout>;
    mmemu::wmma::transfer<true>("wmma::load_matrix_sync", at.n,
                                mmemu::wmma::Transfer<Frag, const mmemu::wmma::stored<T>*>{
                                    &f, ptr, ldm, std::is_same<Layout, row_major>::value});
}

template <int m, int n, int k, class T>
void load_matrix_sync(fragment<accumulator, m, n, k, T>& f, const mmemu::wmma::stored<T>* ptr, unsigned ldm,
                      layout_t layout, mmemu::Line at = {__builtin_LINE()}) {
    using Frag = fragment<accumulator, m, n, k, T>;
    mmemu::wmma::transfer<true>("wmma::load_matrix_sync", at.n,
                                mmemu::wmma::Transfer<Frag, const T*>{&f, ptr, ldm, layout == mem_row_major});
}

template <int m, int n, int k, class T>
void store_matrix_sync(mmemu::wmma::stored<T>* ptr, const fragment<accumulator, m, n, k, T>& f, unsigned ldm,
                       layout_t layout, mmemu::Line at = {__builtin_LINE()}) {
    using Frag = const fragment<accumulator, m, n, k, T>;
    mmemu::wmma::transfer<false>("wmma::store_matrix_sync", at.n,
                                 mmemu::wmma::Transfer<Frag, T*>{&f, ptr, ldm, layout == mem_row_major});
}

// bfloat16 and tf32 inputs accumulate in float only, as on the GPU.
template <int m, int n, int k, class In, class LayoutA, class LayoutB, class Out, class Acc,
          class = std::enable_if_t<std::is_same<In, __half>::value ||
                                   (std::is_same<Out, float>::value && std::is_same<Acc, float>::value)>>
void mma_sync(fragment<accumulator, m, n, k, Out>& d, const fragment<matrix_a, m, n, k, In, LayoutA>& a,
              const fragment<matrix_b, m, n, k, In, LayoutB>& b, const fragment<accumulator, m, n, k, Acc>& c,
              mmemu::Line at = {__builtin_LINE()}) {
    using namespace mmemu::wmma;
    using Record = Product<fragment<matrix_a, m, n, k, In, LayoutA>, fragment<matrix_b, m, n, k, In, LayoutB>,
                           fragment<accumulator, m, n, k, Acc>, fragment<accumulator, m, n, k, Out>>;
    mmemu::warp_collective("wmma::mma_sync", at.n, Record{&a, &b, &c, &d}, [&](const Record* const* lanes) {
        using As = Matrix<matrix_a, m, n, k>;
        using Bs = Matrix<matrix_b, m, n, k>;
        using Cs = Matrix<accumulator, m, n, k>;
        for (int e = 0; e < d.num_elements; ++e) {
            int i = Cs::row_of(e, int(mmemu::lane())), j = Cs::col_of(e, int(mmemu::lane()));
            float sum = float(c.x[e]);  // C and D share the mapping: element e of this lane is (i, j) in both
            for (int p = 0; p < k; ++p) {
                float a_ip = operand<In>(lanes[As::lane_of(i, p)]->a->x[As::slot_of(i, p)]);
                float b_pj = operand<In>(lanes[Bs::lane_of(p, j)]->b->x[Bs::slot_of(p, j)]);
                sum += a_ip * b_pj;  // the product is exact; the sum rounds
            }
            d.x[e] = Out(sum);
        }
    });
}

}  // namespace wmma
}  // namespace nvcuda
}  // extern "C++"
