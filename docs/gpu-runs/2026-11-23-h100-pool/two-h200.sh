#!/bin/bash
# The zoo's correctness tests in one process on one GPU, with -n 2 on one GPU, and with -n 2 on two.
set -u
export PYTHONUNBUFFERED=1
P="python3 -m pytest -q -p no:cacheprovider tests/test_correctness.py --mmcheck-backend gpu"
R=/tmp/two; rm -rf $R; mkdir -p $R
t() { local name=$1; shift; local s=$(date +%s.%N); "$@" > $R/$name.log 2>&1
  echo "$name $(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 $R/$name.log)" | tee -a $R/summary.txt; }
nvidia-smi -L | tee $R/gpus.txt
t warmup $P -n 2 --dist worksteal
t one-gpu-one-process env CUDA_VISIBLE_DEVICES=0 $P
t one-gpu-n2 env CUDA_VISIBLE_DEVICES=0 $P -n 2 --dist worksteal
t two-gpus-n2 $P -n 2 --dist worksteal
