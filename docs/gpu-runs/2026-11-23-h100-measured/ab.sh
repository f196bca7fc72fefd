#!/bin/bash
# A/B on one machine: the suite from an empty cache with the old and the new test files, alternately.
set -u; mkdir -p /tmp/ab
export PYTHONUNBUFFERED=1 MMCHECK_PROFILE=ci XDG_CACHE_HOME=/tmp/cache-ab
for v in ${ORDER:-old new old new}; do
  cp .device/ab/$v/test_plugin.py .device/ab/$v/test_isolation.py tests/
  rm -rf $XDG_CACHE_HOME .hypothesis; n=$((${n:-0}+1)); s=$(date +%s.%N)
  PYTHONPATH=$PWD/.device/tl TIMELINE_DIR=/tmp/ab/timeline-$n-$v timeout 150 python3 -m pytest -q -p no:cacheprovider -p timeline \
    --mmcheck-backend gpu -rfEs -n 16 --dist worksteal --durations=30 --timeout 150 > /tmp/ab/$n-$v.log 2>&1
  echo "$n-$v $(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 /tmp/ab/$n-$v.log)" | tee -a /tmp/ab/summary.txt
done
tar czf $OUT/ab.tgz -C /tmp/ab .
