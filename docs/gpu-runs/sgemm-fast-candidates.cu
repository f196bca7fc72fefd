/* mmcheck
# Tuning candidates for blas.sgemm_warptiled (cuda_src/blas_sgemm_fast.cu): the same kernel, included
# below, with fixed template arguments, to be timed against cuBLAS at 4096^3 on an H100 and the best put
# in the zoo spec's let.  All use float4 global accesses (VEC = 4), hence the requires.
#
# The kernel is #included by its path from this file's folder (mmcheck compiles with that folder on the
# include path):
#     mmcheck list docs/gpu-runs/sgemm-fast-candidates.cu
#     mmcheck check docs/gpu-runs/sgemm-fast-candidates.cu --backend emu
#     mmcheck bench --src cuda_src --src docs/gpu-runs/sgemm-fast-candidates.cu \
#         'tune.*' 'blas.sgemm_warptiled' --bench-sizes 4096 --json sgemm-fast-4096.json
# (both files go in --src: a file named as a target is the only one read, and the globs pick among its kernels.)
# Numbers per candidate: registers per thread, spills and static shared memory per block from nvcc 13.0
# -arch=sm_90 -Xptxas -v; "FFMA share" is FFMAs / instructions in the main loop's SASS (the rest: LDS.128
# fragment reads, the next slab's LDG.128 and STS, the barrier, pointer steps).  On a Hopper SM, four
# schedulers each issue one instruction a cycle and each has 32 FP32 lanes, so every non-FFMA instruction
# in the loop costs an FFMA slot: the FFMA share bounds the fraction of peak.  Per SM: 64K registers,
# 228 KB shared memory (at most 48 KB static per block), 64 warps.  At 4096^3 a 128 x 128 tile gives 1024
# blocks, 3.9 waves at 2 blocks per SM on 132 SMs (7.8 at 1 block per SM).
#
# Expected ranking (best first): cfg07, cfg08, cfg11, cfg09 (8 x 16 per thread at two blocks per SM: the
# densest FFMA stream, and 6 LDS.128 per 128 FFMA against 4 per 64 for 8 x 8); then cfg01, cfg02, cfg03
# (8 x 8 at two blocks per SM, 16 warps); then cfg05, cfg06 (denser, but one block per SM: its barriers
# are not covered by another block); cfg10 (twice the L2 reads per FFMA); cfg04 (one block per SM and the
# 8 x 8 density); cfg12 last (the small-shape tile, for reference).  These are guesses from the figures
# here, not measurements: no candidate has run on a GPU yet.

# cfg01: 128 x 128 x 8, 8 warps (2 x 4) of 64 x 32, 8 x 8 per thread, __launch_bounds__(256, 2).
# 127 registers, no spills, 16.6 KB: 2 blocks per SM (registers bound: 2 x 256 x 128 = 64K), 16 warps.
# FFMA share 89.7 %; per k 4 LDS.128 for 64 FFMA.  ptxas issues the next slab's LDGs with about 340
# instructions of the slab left before their STS: about 1400 cycles at 4 warps per scheduler.
[[kernel]]
name = "tune.cfg01"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 64, WN = 32, TM = 8, TN = 8, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 64x32, 8x8 per thread, 256 threads, 2 blocks/SM"

# cfg02: cfg01 with warps of 32 x 64 (4 x 2): a warp's threads are 4 x 8 instead of 8 x 4, so a warp reads
# 4 distinct float4 of A and 8 of B per k instead of 8 and 4.  127 registers, no spills, 16.6 KB, 2 blocks
# per SM.  FFMA share 89.7 %.
[[kernel]]
name = "tune.cfg02"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 32, WN = 64, TM = 8, TN = 8, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 32x64, 8x8 per thread, 256 threads, 2 blocks/SM"

# cfg03: cfg01 with BK = 16: half the barriers per FFMA, twice the shared memory.  128 registers, no
# spills, 33.3 KB: 2 blocks per SM (66.6 KB of 228).  FFMA share 89.9 %.
[[kernel]]
name = "tune.cfg03"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 16, WM = 64, WN = 32, TM = 8, TN = 8, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x16, warps 64x32, 8x8 per thread, 256 threads, 2 blocks/SM"

# cfg04: cfg01 without the register cap (__launch_bounds__(256, 1)).  145 registers, no spills: 1 block
# per SM (2 x 256 x 145 > 64K), 8 warps.  FFMA share 90.1 %.  Shows what the cap of cfg01 costs or saves.
[[kernel]]
name = "tune.cfg04"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 64, WN = 32, TM = 8, TN = 8, MINB = 1}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 64x32, 8x8 per thread, 256 threads, no register cap (1 block/SM)"

# cfg05: 128 x 256 x 8, 8 warps (2 x 4) of 64 x 64, 8 x 16 per thread.  217 registers, no spills, 24.8 KB:
# 1 block per SM, 8 warps; 512 blocks, 3.9 waves.  FFMA share 92.5 %; per k 6 LDS.128 for 128 FFMA.
[[kernel]]
name = "tune.cfg05"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 256, BK = 8, WM = 64, WN = 64, TM = 8, TN = 16, MINB = 1}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x256x8, warps 64x64, 8x16 per thread, 256 threads, 1 block/SM"

# cfg06: 256 x 128 x 8, 8 warps (4 x 2) of 64 x 64, 16 x 8 per thread.  255 registers (the most there
# are), no spills, 24.8 KB: 1 block per SM, 8 warps.  FFMA share 92.6 %.
[[kernel]]
name = "tune.cfg06"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 256, BN = 128, BK = 8, WM = 64, WN = 64, TM = 16, TN = 8, MINB = 1}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "256x128x8, warps 64x64, 16x8 per thread, 256 threads, 1 block/SM"

# cfg07: the zoo's large-shape configuration for now.  128 x 128 x 8, 4 warps (2 x 2) of 64 x 64, 8 x 16
# per thread, __launch_bounds__(128, 2).  222 registers, no spills, 16.6 KB: 2 blocks per SM (2 x 128 x
# 224 = 56K registers), 8 warps, one warp of each block per scheduler, so one block's barrier wait is
# filled by the other.  FFMA share 91.7 %; per k 6 LDS.128 for 128 FFMA.  The risk: ptxas issues the next
# slab's LDGs with about 360 instructions left before their STS, about 700 cycles at 2 warps per
# scheduler, near a DRAM latency; if this loses to cfg01, that is the first suspect.
[[kernel]]
name = "tune.cfg07"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 64, WN = 64, TM = 8, TN = 16, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 64x64, 8x16 per thread, 128 threads, 2 blocks/SM"

# cfg08: cfg07 with BK = 16.  248 registers, no spills, 33.3 KB: 2 blocks per SM (63.5K registers, 66.6 KB),
# 8 warps.  FFMA share 91.9 %.
[[kernel]]
name = "tune.cfg08"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 16, WM = 64, WN = 64, TM = 8, TN = 16, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x16, warps 64x64, 8x16 per thread, 128 threads, 2 blocks/SM"

# cfg09: cfg07 with 16 x 8 per thread (a warp's threads 4 x 8: 4 distinct float4 of A, 8 of B per read).
# 255 registers, no spills, 16.6 KB: 2 blocks per SM, 8 warps.  FFMA share 91.7 %.
[[kernel]]
name = "tune.cfg09"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 64, WN = 64, TM = 16, TN = 8, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 64x64, 16x8 per thread, 128 threads, 2 blocks/SM"

# cfg10: 128 x 64 x 8, 4 warps (2 x 2) of 64 x 32, 8 x 8 per thread, __launch_bounds__(128, 4).
# 128 registers, no spills, 12.5 KB: 4 blocks per SM, 16 warps; 2048 blocks, 3.9 waves.  Twice the
# global (L2) reads per FFMA of a 128 x 128 tile.  FFMA share 87.7 %.
[[kernel]]
name = "tune.cfg10"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 64, BK = 8, WM = 64, WN = 32, TM = 8, TN = 8, MINB = 4}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x64x8, warps 64x32, 8x8 per thread, 128 threads, 4 blocks/SM"

# cfg11: cfg07 with warps of 32 x 128 (4 x 1): a warp's threads are 4 x 8, so a warp reads 4 distinct
# float4 of A and 8 of B per read, instead of 8 and 4.  220 registers, no spills, 16.6 KB: 2 blocks per SM,
# 8 warps.  FFMA share 91.7 %.
[[kernel]]
name = "tune.cfg11"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 128, BN = 128, BK = 8, WM = 32, WN = 128, TM = 8, TN = 16, MINB = 2}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "128x128x8, warps 32x128, 8x16 per thread, 128 threads, 2 blocks/SM"

# cfg12: the zoo's small-shape configuration, for reference.  64 x 64 x 8, 4 warps (2 x 2) of 32 x 32,
# 8 x 4 per thread, no register cap.  96 registers, no spills, 8.4 KB: 5 blocks per SM (registers), 20
# warps; 4096 blocks.  FFMA share 84.2 %; per k 3 LDS.128 for 32 FFMA.
[[kernel]]
name = "tune.cfg12"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
let = {BM = 64, BN = 64, BK = 8, WM = 32, WN = 32, TM = 8, TN = 4, MINB = 1}
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", 4, "MINB"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["K % 4 == 0", "N % 4 == 0"]
strict_beta = true
about = "64x64x8, warps 32x32, 8x4 per thread, 128 threads (the zoo's small-shape tile)"
*/
#include "../../cuda_src/blas_sgemm_fast.cu"
