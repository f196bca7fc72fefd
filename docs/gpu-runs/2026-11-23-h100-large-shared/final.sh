#!/bin/bash
set -uo pipefail
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/cache-final
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$OUT/$name.log" "$OUT/summary.txt"
  tail -${TAIL:-4} "$OUT/$name.log" | tee -a "$OUT/summary.txt"; }
ls mmcheck/backends/channel.py | tee "$OUT/summary.txt"
step check-j8-cold 60 mmcheck check --backend gpu -j 8
step check-j8-warm 60 mmcheck check --backend gpu -j 8
TAIL=14 step wmma-direct-large 440 mmcheck check blas.wmma_gemm_direct --dtype "float16->float32" --backend gpu --large -v
