#!/bin/bash
# The GPU suite, the large mode's own tests and wmma_gemm_direct's large shapes, with the worker's arrays in
# shared memory; logs straight to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/cache-large
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$OUT/$name.log" "$OUT/summary.txt"
  tail -${TAIL:-4} "$OUT/$name.log" | tee -a "$OUT/summary.txt"; }
git log -1 --format='%h %s' | tee "$OUT/summary.txt"
free -g | head -2 | tee -a "$OUT/summary.txt"
step suite-n16 150 python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfEs -n 16 --dist worksteal --timeout 140
TAIL=12 step test-large 300 python3 -m pytest -v -p no:cacheprovider tests/test_large.py --mmcheck-backend gpu --mmcheck-large -rfEs --durations=6 --timeout 280
TAIL=12 step wmma-direct-large ${WMMA_LIMIT:-130} mmcheck check blas.wmma_gemm_direct --dtype "float16->float32" --backend gpu --large -v
