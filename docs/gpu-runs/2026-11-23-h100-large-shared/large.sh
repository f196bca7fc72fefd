#!/bin/bash
# Call 1 (CALL=1, the default): the GPU suite, the large mode's own tests and wmma_gemm_direct's large shapes;
# call 3 (CALL=3): the zoo check from an empty and a full compile cache, then wmma_gemm_direct's large shapes
# again, with more time (CALL=4 WMMA_DTYPE="bfloat16->float32": call 1's suite and call 3's wmma step for
# bfloat16).  Logs straight to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/cache-large
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$OUT/$name.log" "$OUT/summary.txt"
  tail -${TAIL:-4} "$OUT/$name.log" | tee -a "$OUT/summary.txt"; }
ls mmcheck/backends/channel.py | tee "$OUT/summary.txt"
if [ "${CALL:-1}" != 3 ]; then
  step suite-n16 150 python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfEs -n 16 --dist worksteal --timeout 140
fi
if [ "${CALL:-1}" = 4 ]; then
  wmma_limit=440
elif [ "${CALL:-1}" = 1 ]; then
  TAIL=12 step test-large 300 python3 -m pytest -v -p no:cacheprovider tests/test_large.py --mmcheck-backend gpu --mmcheck-large -rfEs --durations=6 --timeout 280
  wmma_limit=130
else
  step check-j8-cold 60 mmcheck check --backend gpu -j 8
  step check-j8-warm 60 mmcheck check --backend gpu -j 8
  wmma_limit=440
fi
TAIL=14 step wmma-direct-large $wmma_limit mmcheck check blas.wmma_gemm_direct --dtype "${WMMA_DTYPE:-float16->float32}" \
  --backend gpu --large -v
