"""What marlin_cuda_kernel.cu's kernels compute from Marlin's packed weights.

b_q_weight holds the 4-bit weights eight to a 32-bit word, [K / 16][2 N] words: a row is one 16-row block of K,
its words in 64-column tiles of 128, word 4 lane + j of a tile holding lane 4 g + t's fragments of the tile's
16-column block j (k = 2t, 2t + 1, 2t + 8, 2t + 9 of column g, then of column g + 8) at the nibbles Marlin
interleaves them to (element e at nibble NIBBLE.index(e)).  A nibble q (0..15) is the weight q - 8.  Scales per
group of 128 are permuted within each 64 columns (column g + 8 p at position 8 g + p) and multiply the weights in
fp16, as the kernel does; a column's scale multiplies its result, rounded to fp16, in fp16."""

import numpy as np

NIBBLE = [0, 2, 4, 6, 1, 3, 5, 7]  # the element of a lane's eight that nibble i holds


def _offsets():
    """For each (lane, j, nibble) of a 16 x 64 tile's 128 words, the (k, n) within the tile."""
    lane, j, nibble = np.meshgrid(np.arange(32), np.arange(4), np.arange(8), indexing="ij")
    e = np.array(NIBBLE)[nibble]
    return 2 * (lane % 4) + e % 2 + 8 * (e // 2 % 2), 16 * j + lane // 4 + 8 * (e // 4)


def unpack(words, K, N):
    """The weights q - 8 (K x N) of Marlin's words."""
    nibbles = (words.astype(np.int64)[..., None] >> (4 * np.arange(8)) & 0xF).reshape(K // 16, N // 64, 32, 4, 8)
    k, n = _offsets()
    tiles = np.empty((K // 16, N // 64, 16, 64))
    tiles[:, :, k, n] = nibbles
    return tiles.transpose(0, 2, 1, 3).reshape(K, N) - 8


def marlin_gemm(A, b_q_weight, s, K, N, GROUPSIZE):
    """C = A @ W in fp16, as the kernel rounds it: W's weights times their group's scale rounded to fp16, or
    A @ W rounded to fp16 and times each column's scale."""
    w = unpack(b_q_weight, K, N)
    if GROUPSIZE == -1:
        return _fp16(_fp16(A @ w) * s[0])
    natural = s.reshape(-1, N // 64, 8, 8).transpose(0, 1, 3, 2).reshape(-1, N)
    return _fp16(A @ _fp16(w * natural[np.arange(K) // GROUPSIZE]))


def _fp16(x):
    """x rounded to fp16 once, to nearest, as the kernel's fp16 products and stores round it."""
    return x.astype(np.float16).astype(np.float64)
