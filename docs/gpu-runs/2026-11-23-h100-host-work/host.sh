#!/bin/bash
# A large case's host work: the two profiled (../2026-11-23-h100-large-shared/prof_large.py, copied beside
# this script) large cases of blas.sgemm_naive, the large mode's own tests, then the GPU suite.  Logs straight to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/cache-host
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$OUT/$name.log" "$OUT/summary.txt"
  tail -${TAIL:-4} "$OUT/$name.log" | tee -a "$OUT/summary.txt"; }
git log -1 --format=%h | tee "$OUT/summary.txt"; grep -c "def across_cores\|def shared_empty\|self.empty" mmcheck/data.py mmcheck/freivalds.py mmcheck/backends/channel.py mmcheck/backends/pycuda.py | tee -a "$OUT/summary.txt"; nproc; free -g | head -2
for role in B:1 C:2; do
  TAIL=0 step prof-${role%:*} 120 python3 "$here/prof_large.py" blas.sgemm_naive ${role#*:}
  head -1 "$OUT/prof-${role%:*}.log" | tee -a "$OUT/summary.txt"
done
TAIL=12 step test-large 200 python3 -m pytest -v -p no:cacheprovider tests/test_large.py --mmcheck-backend gpu \
  --mmcheck-large -rfEs --durations=6 --timeout 190
step suite-n16 130 python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfEs -n 16 --dist worksteal --timeout 120
