#!/bin/bash
# The GPU suite (-n 16, an empty compile cache each time) at this tree, at commit $OLD (default 4dcaf56, before
# the host-work changes) and at this tree again, one after another on one machine.  Logs straight to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$OUT/$name.log" "$OUT/summary.txt"
  tail -${TAIL:-2} "$OUT/$name.log" | tee -a "$OUT/summary.txt"; }
suite=(python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfE -n 16 --dist worksteal --timeout 120)
git worktree add -q /tmp/old "${OLD:-4dcaf56}" && grep -c "def across_cores\|populated" mmcheck/devices.py mmcheck/backends/channel.py /tmp/old/mmcheck/devices.py /tmp/old/mmcheck/backends/channel.py | tee "$OUT/summary.txt"
XDG_CACHE_HOME=/tmp/cache-new1 step suite-new1 130 "${suite[@]}"
(cd /tmp/old && PYTHONPATH=/tmp/old XDG_CACHE_HOME=/tmp/cache-old step suite-old 130 "${suite[@]}")
XDG_CACHE_HOME=/tmp/cache-new2 step suite-new2 130 "${suite[@]}"
