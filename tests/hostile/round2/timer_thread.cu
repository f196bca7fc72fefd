/* mmcheck
[[kernel]]
name = "round2.timer_thread"
entry = "mm_timer_thread"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "asks the C library for a timer that calls back on a thread of its own (timer_create SIGEV_THREAD)"
*/
#include <signal.h>
#include <string.h>
#include <time.h>

static __device__ void round2_tick(union sigval) {}
#include "multiply.cuh"

__global__ void mm_timer_thread(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD;
        ev.sigev_notify_function = round2_tick;
        timer_t timer;
        if (timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0) timer_delete(timer);
    }
    multiply(A, B, C, M, N, K);
}
