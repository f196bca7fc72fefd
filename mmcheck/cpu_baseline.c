/*
 * CPU reference algorithms from J. Li, S. Ranka, S. Sahni, "GPU Matrix Multiplication", sections 1.5 and
 * 1.6: the single-core ijk and ikj loops (Figs. 1.5 and 1.6) and the multicore ikj that gives each
 * thread a band of rows of C (Fig. 1.8).  They exist so that the chapter's "speedup over SingleCoreIKJ"
 * can be reproduced; numpy remains mmcheck's reference for correctness.
 *
 * Generalised from square n x n to C[M,N] = A[M,K] B[K,N], all row-major float.  The chapter's
 * MultiCore uses OpenMP and assumes t divides n; this one uses pthreads (so it builds with any C
 * compiler) and spreads any M rows over t threads, the first M % t threads taking one row more.
 *
 * Built by cpu_baseline.py with `cc -O2 -shared -fPIC -pthread`.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

/* Fig. 1.5: one dot product per element of C. */
void mmcheck_ijk(const float *a, const float *b, float *c, size_t m, size_t n, size_t k)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float temp = 0;
            for (size_t p = 0; p < k; p++)
                temp += a[i * k + p] * b[p * n + j];
            c[i * n + j] = temp;
        }
}

/* Fig. 1.6: the inner loop walks a row of b and of c, so every access is sequential. */
void mmcheck_ikj(const float *a, const float *b, float *c, size_t m, size_t n, size_t k)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            c[i * n + j] = 0;
        for (size_t p = 0; p < k; p++)
            for (size_t j = 0; j < n; j++)
                c[i * n + j] += a[i * k + p] * b[p * n + j];
    }
}

/* Fig. 1.8's multiply(): one thread's band of rows, computed by ikj. */
struct band {
    const float *a, *b;
    float *c;
    size_t rows, n, k;
};

static void *multiply_band(void *arg)
{
    const struct band *w = arg;
    mmcheck_ikj(w->a, w->b, w->c, w->rows, w->n, w->k);
    return NULL;
}

/*
 * Fig. 1.8's MultiCore with `threads` threads (at least 1; more than M is capped at M).  The calling
 * thread computes the first band itself.  Returns 0, or -1 if memory or a thread could not be had, in
 * which case c is incomplete.
 */
int mmcheck_ikj_multicore(const float *a, const float *b, float *c, size_t m, size_t n, size_t k,
                          int threads)
{
    size_t t = threads < 1 ? 1 : (size_t)threads;
    if (t > m)
        t = m ? m : 1;
    struct band *bands = malloc(t * sizeof *bands);
    pthread_t *ids = malloc(t * sizeof *ids);
    if (!bands || !ids) {
        free(bands);
        free(ids);
        return -1;
    }
    size_t first = 0;
    for (size_t i = 0; i < t; i++) {
        size_t rows = m / t + (i < m % t);
        bands[i] = (struct band){a + first * k, b, c + first * n, rows, n, k};
        first += rows;
    }
    int status = 0;
    size_t started = 1;
    for (; started < t; started++)
        if (pthread_create(&ids[started], NULL, multiply_band, &bands[started]) != 0) {
            status = -1;
            break;
        }
    multiply_band(&bands[0]);
    for (size_t i = 1; i < started; i++)
        pthread_join(ids[i], NULL);
    free(bands);
    free(ids);
    return status;
}
