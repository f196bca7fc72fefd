#!/bin/bash
set -uo pipefail
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/cache-large
ls mmcheck/backends/channel.py; git log -1 --format=%h
for case in "blas.sgemm_naive 1" "blas.sgemm_naive 2"; do
  timeout 200 python3 .device/prof_large.py $case > "$OUT/prof-${case// /-}.txt" 2>&1; echo "exit $?"; head -1 "$OUT/prof-${case// /-}.txt"
done
