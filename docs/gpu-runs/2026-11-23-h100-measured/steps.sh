#!/bin/bash
# Timed steps (STEPS), traced (TRACE=1) or not; everything in $OUT/res.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 MMCHECK_PROFILE=ci
[ "${TRACE:-0}" = 1 ] && export PYTHONPATH=$PWD/.device/trace
R=${R:-/tmp/res}; rm -rf $R; mkdir -p $R
run() { local name=$1; shift; mkdir -p "/tmp/trace/$name"; local s=$(date +%s.%N)
  (vmstat 1 > "$R/$name.vmstat" 2>&1 &  echo $! > /tmp/vm.pid)
  (top -b -d 1 -c -w 180 > "$R/$name.top" 2>&1 & echo $! > /tmp/top.pid)
  (nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 250 > "$R/$name.gpu" 2>&1 & echo $! > /tmp/smi.pid)
  TRACE_DIR=/tmp/trace/$name timeout ${LIMIT:-300} "$@" >"$R/$name.log" 2>&1; local rc=$?
  echo "$name exit $rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a "$R/$name.log" "$R/summary.txt"; tail -${TAIL:-2} "$R/$name.log" | tee -a "$R/summary.txt"
  kill $(cat /tmp/vm.pid) $(cat /tmp/smi.pid) $(cat /tmp/top.pid) 2>/dev/null; }
export XDG_CACHE_HOME=/tmp/cache-prof; [ "${KEEP:-0}" = 1 ] || rm -rf $XDG_CACHE_HOME /tmp/trace
tl() { local name=$1 jobs=$2; PYTHONPATH=$PWD/.device/tl TIMELINE_DIR=$R/timeline-$name TAIL=3 run $name python3 -m pytest -q -p no:cacheprovider -p timeline --mmcheck-backend gpu -rfEs -n $jobs --dist ${DIST:-worksteal} --durations=0 --timeout 150; }
n=0
for step in ${STEPS:-cold warm warm seq suite16}; do n=$((n+1)); case $step in
  cold) run $n-check-j8-cold mmcheck check --backend gpu -j 8 ;;
  recold) rm -rf $XDG_CACHE_HOME; run $n-check-j8-cold mmcheck check --backend gpu -j 8 ;;
  warm) run $n-check-j8-warm mmcheck check --backend gpu -j 8 ;;
  warm16) run $n-check-j16-warm mmcheck check --backend gpu -j 16 ;;
  seq) run $n-check-j1-warm mmcheck check --backend gpu ;;
  seqcold) rm -rf $XDG_CACHE_HOME; run $n-check-j1-cold mmcheck check --backend gpu ;;
  recheck) run $n-check-j8-warm-recheck-races mmcheck check --backend gpu -j 8 --recheck-races ;;
  suiterecheck) PYTHONPATH= TAIL=3 run $n-suite-n16-recheck python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu --mmcheck-recheck-races -rfEs -n 16 --dist worksteal --durations=40 --timeout 150 ;;
  noturns) NO_TURNS=1 run $n-check-j8-warm-noturns mmcheck check --backend gpu -j 8 ;;
  toolnoturns) TOOL_NO_TURNS=1 run $n-check-j8-warm-toolnoturns mmcheck check --backend gpu -j 8 ;;
  fastexit) FAST_EXIT=1 run $n-check-j8-warm-fastexit mmcheck check --backend gpu -j 8 ;;
  cvd) CUDA_VISIBLE_DEVICES=0 run $n-check-j8-warm-cvd0 mmcheck check --backend gpu -j 8 ;;
  strace) run $n-check-j8-warm-strace strace -f -tt -o $R/strace.txt -e trace=wait4,waitid,kill,exit_group,close,openat mmcheck check --backend gpu -j 8 ;;
  blas1) OPENBLAS_NUM_THREADS=1 run $n-check-j8-warm-blas1 mmcheck check --backend gpu -j 8 ;;
  blas1norc) OPENBLAS_NUM_THREADS=1 NO_RACECHECK=1 run $n-check-j8-warm-blas1-norace mmcheck check --backend gpu -j 8 ;;
  j4b1) OPENBLAS_NUM_THREADS=1 run $n-check-j4-warm-blas1 mmcheck check --backend gpu -j 4 ;;
  j12b1) OPENBLAS_NUM_THREADS=1 run $n-check-j12-warm-blas1 mmcheck check --backend gpu -j 12 ;;
  seqb1) OPENBLAS_NUM_THREADS=1 run $n-check-j1-warm-blas1 mmcheck check --backend gpu ;;
  norc) NO_RACECHECK=1 run $n-check-j8-norace mmcheck check --backend gpu -j 8 ;;
  j4) run $n-check-j4-warm mmcheck check --backend gpu -j 4 ;;
  j12) run $n-check-j12-warm mmcheck check --backend gpu -j 12 ;;
  suite16) PYTHONPATH= TAIL=3 run $n-suite-n16 python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfEs -n 16 --dist worksteal --durations=40 --timeout 150 ;;
  tlcold*) rm -rf $XDG_CACHE_HOME .hypothesis; tl $n-$step ${step#tlcold} ;;
  ldcold*) rm -rf $XDG_CACHE_HOME .hypothesis; DIST=load tl $n-$step ${step#ldcold} ;;
  tl*) tl $n-$step ${step#tl} ;;
  b1tl*) OPENBLAS_NUM_THREADS=1 tl $n-$step ${step#b1tl} ;;
  suite*) PYTHONPATH= TAIL=3 run $n-$step python3 -m pytest -q -p no:cacheprovider --mmcheck-backend gpu -rfEs -n ${step#suite} --dist worksteal --durations=40 --timeout 150 ;;
esac; done
[ "${TRACE:-0}" = 1 ] && python3 .device/agg.py /tmp/trace/* > $R/agg.txt 2>&1
[ "${TRACE:-0}" = 1 ] && tar czf $R/traces.tgz -C /tmp trace
tar czf $OUT/${TAR:-res}.tgz -C $R .
