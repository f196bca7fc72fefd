#!/bin/bash
# tests/test_correctness.py on the GPU: one process on one GPU, -n 2 on one GPU, -n 2 on two (timelines kept).
set -u
export PYTHONUNBUFFERED=1 MMCHECK_PROFILE=ci
R=/tmp/two; rm -rf $R; mkdir -p $R
P="python3 -m pytest -q -p no:cacheprovider -p timeline tests/test_correctness.py --mmcheck-backend gpu --durations=30"
t() { local name=$1; shift; local s=$(date +%s.%N); env PYTHONPATH=$PWD/.device/tl TIMELINE_DIR=$R/timeline-$name "$@" > $R/$name.log 2>&1
  echo "$name $(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 $R/$name.log)" | tee -a $R/summary.txt; }
nvidia-smi -L | tee $R/gpus.txt; nproc | tee -a $R/gpus.txt
t warmup $P -n 2 --dist worksteal
t one-gpu-one-process-a env CUDA_VISIBLE_DEVICES=0 $P
t two-gpus-n2-a $P -n 2 --dist worksteal
t one-gpu-n2 env CUDA_VISIBLE_DEVICES=0 $P -n 2 --dist worksteal
t one-gpu-one-process-b env CUDA_VISIBLE_DEVICES=0 $P
t two-gpus-n2-b $P -n 2 --dist worksteal
t two-gpus-n2-load $P -n 2 --dist load
tar czf $OUT/two.tgz -C $R .
