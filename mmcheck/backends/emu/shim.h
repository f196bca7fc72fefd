// The CUDA language surface a kernel file sees on the emulator; g++ force-includes it (-include) ahead of
// the file.  Only headers that nvcc itself brings in are included, so every name nvcc leaves free stays
// free here: a kernel called `signal`, `read` or `kill` compiles on both.
//
// Per-block shared memory is thread_local: every thread is a fiber on one OS thread, and the runtime gives each
// block of a cluster a thread-local instance of its own (runtime_shared.cpp), so thread-local storage is exactly
// "one instance per block", and `thread_local` composes with both `static __shared__` and `extern __shared__`.
#pragma once

#include "mmemu.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#define __CUDACC__ 1
#define __CUDA_ARCH__ 900

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
// Every __shared__ object, static or dynamic, starts on a 128-byte boundary.  CUDA promises no more than the
// type's alignment: on an H100 (CUDA 13) static shared variables lie in declaration order, each at its natural
// alignment, from a 1 KiB boundary, and dynamic shared memory follows them on a 16-byte boundary.  A plain
// `__shared__ half As[256]` is thus 32-byte aligned there, as WMMA needs, whenever what is declared before it
// adds up to a multiple of 32 bytes, as in the usual kernels.  g++ and the linker lay thread_locals out in
// their own order, so no layout can follow the GPU's; each object gets more than any alignment the emulator
// checks (WMMA's 32 bytes) instead.  The cost: a tile that the GPU's packing misaligns (a `__shared__ char`
// declared before it) is not caught here.
#define MMEMU_SHARED_ALIGN 128
#define __shared__ thread_local __attribute__((aligned(MMEMU_SHARED_ALIGN)))
#define __forceinline__ inline __attribute__((always_inline))
// No __noinline__: system headers spell GNU's attribute with it (libstdc++'s <memory>), which a macro would break,
// so the unit writes the file's own as that attribute (unit.py).
#define __launch_bounds__(...)
// The launch's cluster dims are the spec's (backend.py compares them with these where they are integers).
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))

// ---- vector types: CUDA's sizes and alignments; may_alias because kernels reinterpret float* as float4*
#define MMEMU_VECTOR_ALIGN(T, n) ((n) * sizeof(T) < 16 ? (n) * sizeof(T) : 16)
#define MMEMU_VECTORS(T, N)                                                                          \
    struct __attribute__((aligned(sizeof(T)), may_alias)) N##1 { T x; };                             \
    struct __attribute__((aligned(MMEMU_VECTOR_ALIGN(T, 2)), may_alias)) N##2 { T x, y; };           \
    struct __attribute__((aligned(sizeof(T)), may_alias)) N##3 { T x, y, z; };                       \
    struct __attribute__((aligned(MMEMU_VECTOR_ALIGN(T, 4)), may_alias)) N##4 { T x, y, z, w; };     \
    inline N##1 make_##N##1(T x) { return {x}; }                                                     \
    inline N##2 make_##N##2(T x, T y) { return {x, y}; }                                             \
    inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }                                     \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
MMEMU_VECTORS(signed char, char)
MMEMU_VECTORS(unsigned char, uchar)
MMEMU_VECTORS(short, short)
MMEMU_VECTORS(unsigned short, ushort)
MMEMU_VECTORS(int, int)
MMEMU_VECTORS(unsigned, uint)
MMEMU_VECTORS(long, long)
MMEMU_VECTORS(unsigned long, ulong)
MMEMU_VECTORS(long long, longlong)
MMEMU_VECTORS(unsigned long long, ulonglong)
MMEMU_VECTORS(float, float)
MMEMU_VECTORS(double, double)
#undef MMEMU_VECTORS

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return {x, y, z}; }
};

// The runtime defines these as mmemu_dim3 and sets them before it resumes each thread.
static_assert(sizeof(uint3) == sizeof(mmemu_dim3) && sizeof(dim3) == sizeof(mmemu_dim3), "layout");
extern "C" const uint3 threadIdx, blockIdx;
extern "C" const dim3 blockDim, gridDim;
constexpr int warpSize = 32;

extern "C" int printf(const char* format, ...);

// ---- math: CUDA declares float and double overloads in the global namespace, as <cmath> does in std
using std::abs;
using std::acos;
using std::asin;
using std::atan;
using std::atan2;
using std::ceil;
using std::cos;
using std::cosh;
using std::exp;
using std::exp2;
using std::fabs;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::log;
using std::log10;
using std::log2;
using std::pow;
using std::round;
using std::signbit;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::trunc;

// CUDA's min/max accept mixed arithmetic types with the usual conversions; floating ones are fmin/fmax.
template <class A, class B>
using mmemu_common_t = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value,
                                        std::common_type_t<A, B>>;
template <class A, class B>
inline mmemu_common_t<A, B> min(A a, B b) {
    using C = mmemu_common_t<A, B>;
    if constexpr (std::is_floating_point<C>::value) return std::fmin(C(a), C(b));
    else return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B>
inline mmemu_common_t<A, B> max(A a, B b) {
    using C = mmemu_common_t<A, B>;
    if constexpr (std::is_floating_point<C>::value) return std::fmax(C(a), C(b));
    else return C(a) < C(b) ? C(b) : C(a);
}

// Intrinsics with an explicit rounding mode: the host's default mode is round-to-nearest, and the
// kernel is compiled with -ffp-contract=off, so the plain operators round exactly as _rn asks.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
// The fast approximations: the accurate host function is within their documented error.
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float a) { return std::exp(a); }
inline float __exp10f(float a) { return std::pow(10.0f, a); }
inline float __logf(float a) { return std::log(a); }
inline float __log2f(float a) { return std::log2(a); }
inline float __log10f(float a) { return std::log10(a); }
inline float __sinf(float a) { return std::sin(a); }
inline float __cosf(float a) { return std::cos(a); }
inline float __tanf(float a) { return std::tan(a); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline double rsqrt(double a) { return 1.0 / std::sqrt(a); }
inline float __saturatef(float a) { return a > 0.0f ? (a < 1.0f ? a : 1.0f) : 0.0f; }  // NaN -> 0

inline int __float2int_rn(float a) { return (int)std::nearbyint(a); }
inline int __float2int_rz(float a) { return (int)a; }
inline unsigned __float2uint_rn(float a) { return (unsigned)std::nearbyint(a); }
inline int __double2int_rn(double a) { return (int)std::nearbyint(a); }
inline float __int2float_rn(int a) { return (float)a; }
inline float __uint2float_rn(unsigned a) { return (float)a; }
inline double __int2double_rn(int a) { return (double)a; }

namespace mmemu {
template <class To, class From>
inline To bits(From v) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To out;
    std::memcpy(&out, &v, sizeof out);
    return out;
}
}  // namespace mmemu
inline int __float_as_int(float a) { return mmemu::bits<int>(a); }
inline unsigned __float_as_uint(float a) { return mmemu::bits<unsigned>(a); }
inline float __int_as_float(int a) { return mmemu::bits<float>(a); }
inline float __uint_as_float(unsigned a) { return mmemu::bits<float>(a); }
inline long long __double_as_longlong(double a) { return mmemu::bits<long long>(a); }
inline double __longlong_as_double(long long a) { return mmemu::bits<double>(a); }

inline int __popc(unsigned a) { return __builtin_popcount(a); }
inline int __popcll(unsigned long long a) { return __builtin_popcountll(a); }
inline int __clz(int a) { return a ? __builtin_clz((unsigned)a) : 32; }
inline int __clzll(long long a) { return a ? __builtin_clzll((unsigned long long)a) : 64; }
inline int __ffs(int a) { return __builtin_ffs(a); }
inline int __ffsll(long long a) { return __builtin_ffsll(a); }
inline unsigned __brev(unsigned a) {
    a = ((a >> 1) & 0x55555555u) | ((a & 0x55555555u) << 1);
    a = ((a >> 2) & 0x33333333u) | ((a & 0x33333333u) << 2);
    a = ((a >> 4) & 0x0f0f0f0fu) | ((a & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(a);
}
inline int __mul24(int a, int b) {  // the low 24 bits of each, sign-extended
    return (int)((long long)((int)((unsigned)a << 8) >> 8) * ((int)((unsigned)b << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
// Averages without overflow (the cuda_fp16.h __hadd overloads are the half-precision sums).
inline int __hadd(int a, int b) { return int(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return int(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b + 1) >> 1); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }

// Dot products of packed integers, accumulated into c modulo 2^32: four bytes of a times four of b (__dp4a), or
// the two 16-bit halves of a times the low (__dp2a_lo) or high (__dp2a_hi) two bytes of b.
namespace mmemu {
template <class Lane, int count, int shift_b>
inline unsigned packed_dot(unsigned a, unsigned b, unsigned c) {
    using Byte = std::conditional_t<std::is_signed<Lane>::value, signed char, unsigned char>;
    long long sum = c;
    for (int i = 0; i < count; ++i)
        sum += (long long)Lane(a >> (32 / count * i)) * Byte(b >> (8 * i + shift_b));
    return (unsigned)sum;
}
}  // namespace mmemu
inline int __dp4a(int a, int b, int c) { return (int)mmemu::packed_dot<signed char, 4, 0>(a, b, c); }
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) { return mmemu::packed_dot<unsigned char, 4, 0>(a, b, c); }
inline int __dp4a(char4 a, char4 b, int c) { return __dp4a(mmemu::bits<int>(a), mmemu::bits<int>(b), c); }
inline unsigned __dp4a(uchar4 a, uchar4 b, unsigned c) {
    return __dp4a(mmemu::bits<unsigned>(a), mmemu::bits<unsigned>(b), c);
}
inline int __dp2a_lo(int a, int b, int c) { return (int)mmemu::packed_dot<short, 2, 0>(a, b, c); }
inline unsigned __dp2a_lo(unsigned a, unsigned b, unsigned c) {
    return mmemu::packed_dot<unsigned short, 2, 0>(a, b, c);
}
inline int __dp2a_hi(int a, int b, int c) { return (int)mmemu::packed_dot<short, 2, 16>(a, b, c); }
inline unsigned __dp2a_hi(unsigned a, unsigned b, unsigned c) {
    return mmemu::packed_dot<unsigned short, 2, 16>(a, b, c);
}

// Cache-hint loads and stores are plain memory accesses here.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// Threads never run at the same time (those of a cluster's blocks take turns, other blocks run one after another),
// so fences order nothing and a plain read-modify-write is atomic.
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) {}

#define MMEMU_ATOMIC(name, T, expr) \
    inline T name(T* p, T v) { T o = *p; *p = (expr); return o; }
#define MMEMU_ATOMIC_INTS(name, expr)                \
    MMEMU_ATOMIC(name, int, expr)                    \
    MMEMU_ATOMIC(name, unsigned, expr)               \
    MMEMU_ATOMIC(name, unsigned long long, expr)
MMEMU_ATOMIC_INTS(atomicAdd, o + v)
MMEMU_ATOMIC(atomicAdd, float, o + v)
MMEMU_ATOMIC(atomicAdd, double, o + v)
MMEMU_ATOMIC(atomicSub, int, o - v)
MMEMU_ATOMIC(atomicSub, unsigned, o - v)
MMEMU_ATOMIC_INTS(atomicExch, v)
MMEMU_ATOMIC(atomicExch, float, v)
MMEMU_ATOMIC_INTS(atomicMin, v < o ? v : o)
MMEMU_ATOMIC(atomicMin, long long, v < o ? v : o)
MMEMU_ATOMIC_INTS(atomicMax, v > o ? v : o)
MMEMU_ATOMIC(atomicMax, long long, v > o ? v : o)
MMEMU_ATOMIC_INTS(atomicAnd, o & v)
MMEMU_ATOMIC_INTS(atomicOr, o | v)
MMEMU_ATOMIC_INTS(atomicXor, o ^ v)
MMEMU_ATOMIC(atomicInc, unsigned, o >= v ? 0u : o + 1)
MMEMU_ATOMIC(atomicDec, unsigned, (o == 0 || o > v) ? v : o - 1)
#undef MMEMU_ATOMIC_INTS
#undef MMEMU_ATOMIC
#define MMEMU_ATOMIC_CAS(T) \
    inline T atomicCAS(T* p, T compare, T v) { T o = *p; if (o == compare) *p = v; return o; }
MMEMU_ATOMIC_CAS(int)
MMEMU_ATOMIC_CAS(unsigned)
MMEMU_ATOMIC_CAS(unsigned long long)
MMEMU_ATOMIC_CAS(unsigned short)
#undef MMEMU_ATOMIC_CAS

// ---- rendezvous: each parks the calling fiber until the scheduler completes it --------------------
// __COUNTER__ names the call site, so that two different __syncthreads() meeting is noticed even on one
// line; __LINE__ is for messages (the compile unit carries #line directives back to the .cu file).
#define __syncthreads() ((void)mmemu_rv_barrier(MMEMU_BAR_SYNC, 1, __COUNTER__, __LINE__))
#define __syncthreads_count(pred) mmemu_rv_barrier(MMEMU_BAR_COUNT, (pred) != 0, __COUNTER__, __LINE__)
#define __syncthreads_and(pred) mmemu_rv_barrier(MMEMU_BAR_AND, (pred) != 0, __COUNTER__, __LINE__)
#define __syncthreads_or(pred) mmemu_rv_barrier(MMEMU_BAR_OR, (pred) != 0, __COUNTER__, __LINE__)
#define __activemask() mmemu_rv_activemask(__COUNTER__, __LINE__)
#define __trap() mmemu_trap(__LINE__)

namespace mmemu {
template <class T, class = void>
struct size_if_complete : std::integral_constant<size_t, 0> {};
template <class T>
struct size_if_complete<T, std::void_t<decltype(sizeof(T))>> : std::integral_constant<size_t, sizeof(T)> {};

template <class T>
mmemu_asm_operand asm_operand(T value) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "an asm operand is a register");
    mmemu_asm_operand operand{0, 0};
    std::memcpy(&operand.bits, &value, sizeof(T));
    if constexpr (std::is_pointer<T>::value) operand.pointee = size_if_complete<std::remove_pointer_t<T>>::value;
    return operand;
}

// An inline-assembly statement of the kernel file, which the compile unit rewrites into a call of this
// (unit.py): its line, its template, its operands' constraints (one string: outputs' first, comma separated),
// the outputs' addresses and the inputs' values.  The runtime runs the PTX (ptx.cpp); a thread that reaches an
// instruction it does not run ends the launch as unsupported, naming it, while one that no thread reaches stops
// nothing.
template <class... Operands>
inline void inline_asm(int line, const char* text, const char* constraints, Operands... operands) {
    const mmemu_asm_operand list[] = {asm_operand(operands)..., {0, 0}};
    mmemu_rv_asm(line, text, constraints, list, int(sizeof...(Operands)));
}
}  // namespace mmemu

namespace mmemu {
// A warp operation bound to its kind and line; the call operator takes CUDA's own argument list, so
// that CUDA's default arguments (width, mask) work through a macro.
struct WarpOp {
    int kind, line;
    template <class T>
    T operator()(unsigned mask, T var, int arg, int width = warpSize) const {
        static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffles move up to 8 bytes");
        uint64_t in = 0;
        std::memcpy(&in, &var, sizeof(T));
        uint64_t out = mmemu_rv_warp(kind, mask, in, arg, width, line);
        std::memcpy(&var, &out, sizeof(T));
        return var;
    }
    unsigned operator()(unsigned mask, int pred) const {
        return (unsigned)mmemu_rv_warp(kind, mask, pred != 0, 0, warpSize, line);
    }
    void operator()(unsigned mask = 0xffffffffu) const { mmemu_rv_warp(kind, mask, 0, 0, warpSize, line); }
};
}  // namespace mmemu
#define __shfl_sync(...) mmemu::WarpOp{MMEMU_SHFL_IDX, __LINE__}(__VA_ARGS__)
#define __shfl_up_sync(...) mmemu::WarpOp{MMEMU_SHFL_UP, __LINE__}(__VA_ARGS__)
#define __shfl_down_sync(...) mmemu::WarpOp{MMEMU_SHFL_DOWN, __LINE__}(__VA_ARGS__)
#define __shfl_xor_sync(...) mmemu::WarpOp{MMEMU_SHFL_XOR, __LINE__}(__VA_ARGS__)
#define __ballot_sync(...) mmemu::WarpOp{MMEMU_BALLOT, __LINE__}(__VA_ARGS__)
#define __any_sync(...) ((int)mmemu::WarpOp{MMEMU_ANY, __LINE__}(__VA_ARGS__))
#define __all_sync(...) ((int)mmemu::WarpOp{MMEMU_ALL, __LINE__}(__VA_ARGS__))
#define __syncwarp(...) mmemu::WarpOp{MMEMU_SYNCWARP, __LINE__}(__VA_ARGS__)

namespace mmemu {
// The caller's line, for API functions that CUDA declares as functions (so no macro can add __LINE__):
// a last parameter `Line at = {__builtin_LINE()}` is filled in at the call site.
struct Line {
    int n;
};
}  // namespace mmemu

// The shared window: a shared address is an offset into the block's shared memory (runtime.cpp).
inline size_t __cvta_generic_to_shared(const void* pointer, mmemu::Line at = {__builtin_LINE()}) {
    return mmemu_shared_address(pointer, "__cvta_generic_to_shared", at.n);
}
inline void* __cvta_shared_to_generic(size_t address, mmemu::Line at = {__builtin_LINE()}) {
    return mmemu_shared_pointer(address, 1, "__cvta_shared_to_generic", at.n);
}

// ---- thread-block clusters: sm_90_rt.h's intrinsics, on the runtime's clusters (cooperative_groups::cluster_group
// is on them) ------------------------------------------------------------------------------------------------
namespace mmemu {
inline dim3 dim3_of(const mmemu_dim3& d) { return dim3(d.x, d.y, d.z); }
}  // namespace mmemu
inline unsigned __clusterDimIsSpecified() { return unsigned(mmemu_cluster_now()->explicit_dims); }
inline dim3 __clusterDim() { return mmemu::dim3_of(mmemu_cluster_now()->dims); }
inline dim3 __clusterRelativeBlockIdx() { return mmemu::dim3_of(mmemu_cluster_now()->index); }
inline dim3 __clusterGridDimInClusters() { return mmemu::dim3_of(mmemu_cluster_now()->count); }
inline dim3 __clusterIdx() { return mmemu::dim3_of(mmemu_cluster_now()->id); }
inline unsigned __clusterRelativeBlockRank() { return mmemu_cluster_now()->rank; }
inline unsigned __clusterSizeInBlocks() { return mmemu_cluster_now()->size; }
inline void __cluster_barrier_arrive(mmemu::Line at = {__builtin_LINE()}) {
    mmemu_rv_cluster_arrive("__cluster_barrier_arrive", nullptr, at.n);
}
inline void __cluster_barrier_arrive_relaxed(mmemu::Line at = {__builtin_LINE()}) {
    mmemu_rv_cluster_arrive("__cluster_barrier_arrive_relaxed", nullptr, at.n);
}
inline void __cluster_barrier_wait(mmemu::Line at = {__builtin_LINE()}) {
    mmemu_rv_cluster_wait("__cluster_barrier_wait", nullptr, at.n);
}
inline void __threadfence_cluster() {}
inline void* __cluster_map_shared_rank(const void* pointer, unsigned rank, mmemu::Line at = {__builtin_LINE()}) {
    return mmemu_cluster_map(pointer, rank, "__cluster_map_shared_rank", at.n);
}
inline unsigned __cluster_query_shared_rank(const void* pointer, mmemu::Line at = {__builtin_LINE()}) {
    return mmemu_cluster_rank(pointer, "__cluster_query_shared_rank", at.n);
}

namespace mmemu {
// A warp-collective operation (WMMA): `body` runs in every lane once all 32 lanes of the warp have arrived,
// and receives every lane's record; no lane leaves before every lane's body has run, so a body may read
// what another lane's record points to (its fragment) but writes only its own lane's state.
template <class Record, class Body>
void warp_collective(const char* op, int line, const Record& mine, Body body) {
    const void* all[32];
    mmemu_rv_gather(&mine, all, op, line);
    const Record* lanes[32];
    for (int l = 0; l < 32; ++l) lanes[l] = static_cast<const Record*>(all[l]);
    body(lanes);
    mmemu_rv_gather(nullptr, nullptr, op, line);
}

// The calling thread's rank in its block (x fastest, as the runtime numbers threads and so forms warps) and
// its lane in its warp.
inline unsigned thread_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned lane() { return thread_rank() % warpSize; }
}  // namespace mmemu

// ---- what the compile unit's trailer instantiates -------------------------------------------------
// Storage behind every `extern __shared__` array of the file; each such name is made an alias of it.  It starts on
// a 1024-byte boundary, as Hopper kernels expect of it: they put their 128B-swizzled tiles there, which must be
// 1024-byte aligned, declaring the array only 128-byte aligned.
alignas(1024) thread_local unsigned char mmemu_dyn_smem[MMEMU_MAX_DYNAMIC_SMEM];

namespace mmemu {
template <class T>
constexpr char kind_of() {
    if constexpr (std::is_void<T>::value) return 'v';
    else if constexpr (std::is_pointer<T>::value) return 'p';
    else if constexpr (std::is_floating_point<T>::value) return 'f';
    else if constexpr (std::is_integral<T>::value || std::is_enum<T>::value)
        return std::is_signed<T>::value ? 'i' : 'u';
    else return 's';
}
template <class P>
constexpr mmemu_param param_of() {
    if constexpr (std::is_pointer<P>::value) {
        using E = std::remove_cv_t<std::remove_pointer_t<P>>;
        if constexpr (std::is_void<E>::value) return {'p', 'v', alignof(P), sizeof(P), 0};
        else return {'p', kind_of<E>(), alignof(P), sizeof(P), sizeof(E)};
    } else {
        return {kind_of<P>(), 0, alignof(P), sizeof(P), 0};
    }
}
inline unsigned char* dynamic_smem() { return mmemu_dyn_smem; }

// The launcher for one kernel: parameter descriptions from the function's own type, and a call that
// unpacks an argument vector into exactly those types.  It is keyed by the signature alone, not by the
// kernel, so that no symbol but the kernel's own has the kernel's mangled name in it (find_symbol
// looks for that name in the module's bytes).
template <class... P>
struct Export {
    static inline void (*entry)(P...);
    static constexpr mmemu_param params[sizeof...(P) + 1] = {param_of<P>()..., {}};
    template <std::size_t... I>
    static void call(void* const* args, std::index_sequence<I...>) { entry(*static_cast<P*>(args[I])...); }
    static void invoke(void* const* args) { call(args, std::index_sequence_for<P...>{}); }
};
template <class... P>
const mmemu_kernel* describe(void (*kernel)(P...)) {
    Export<P...>::entry = kernel;
    static constexpr mmemu_kernel info = {MMEMU_ABI, sizeof...(P), Export<P...>::params, Export<P...>::invoke,
                                          dynamic_smem};
    return &info;
}
}  // namespace mmemu

#define MMEMU_EXPORT_KERNEL(...) \
    MMEMU_EXPORT const mmemu_kernel* mmemu_kernel_info() { return mmemu::describe(&__VA_ARGS__); }
#define MMEMU_DYNAMIC_SHARED(name) \
    extern thread_local unsigned char mmemu_shared_##name[] __asm__(#name) __attribute__((alias("mmemu_dyn_smem")));

// nvcc brings the runtime's host API into every .cu file; here it is stubs, for host code left in a file.
#include <cuda_runtime.h>
