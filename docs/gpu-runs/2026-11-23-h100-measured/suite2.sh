#!/bin/bash
# The whole GPU suite: -n 16 to fill the caches, then one process, then -n 2 (on every visible GPU).
# Logs go straight to $OUT, so a run cut short still brings back what finished.
set -u
export PYTHONUNBUFFERED=1 MMCHECK_PROFILE=ci XDG_CACHE_HOME=/tmp/cache-suite2
P="python3 -m pytest -q -p no:cacheprovider -p timeline --mmcheck-backend gpu -rfEs --durations=30 --timeout 150"
t() { local name=$1 limit=$2; shift 2; local s=$(date +%s.%N)
  env PYTHONPATH=$PWD/.device/tl TIMELINE_DIR=$OUT/timeline-$name timeout $limit "$@" > $OUT/$name.log 2>&1; local rc=$?
  echo "$name rc $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 $OUT/$name.log)" | tee -a $OUT/summary.txt; }
nvidia-smi -L | tee $OUT/gpus.txt; nproc | tee -a $OUT/gpus.txt
for step in ${STEPS:-warm16 one n2}; do case $step in
  warm16) t warmup-n16 120 $P -n 16 --dist worksteal ;;
  one) t one-process ${ONE_LIMIT:-330} $P ;;
  one0) t one-gpu-one-process ${ONE_LIMIT:-330} env CUDA_VISIBLE_DEVICES=0 $P ;;
  n2) t n2 200 $P -n 2 --dist worksteal ;;
  n2one) t one-gpu-n2 200 env CUDA_VISIBLE_DEVICES=0 $P -n 2 --dist worksteal ;;
esac; done
