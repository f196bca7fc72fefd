#!/bin/bash
# The GPU suite timed on both backends from empty caches, with a per-test timeline and the CPUs' busy share.
set -uo pipefail
w=/tmp/work; mkdir -p $w
d=$PWD/.device
export PYTHONPATH=$PWD/.device/tl
env | grep -E "^PYTHON|^OMP|^MKL|^OPENBLAS" | sort > $w/env.txt; grep -m1 "model name" /proc/cpuinfo >> $w/env.txt; nproc >> $w/env.txt; cat $w/env.txt
suite() {  # suite NAME ARGS...: the suite with -n 16, its timeline and CPU log under $w/NAME
  local name=$1; shift
  mkdir -p $w/$name
  bash $d/cpu.sh $w/$name/cpu.txt & local sampler=$!
  python3 $d/procs.py $w/$name/procs.txt & local procs=$!
  local s=$SECONDS
  TIMELINE_DIR=$w/$name/tl XDG_CACHE_HOME=/tmp/cache-${CACHE:-$name} timeout ${LIMIT:-240} python3 -m pytest -q -p no:cacheprovider -p timeline -n 16 -rfE --durations=40 "$@" > $w/$name/suite.log 2>&1
  echo "$name: exit $? in $((SECONDS - s)) s: $(tail -1 $w/$name/suite.log)" | tee -a $w/summary.txt
  kill $sampler $procs; sleep 1
}
for step in ${STEPS}; do case $step in
  wheels)
    export TIMELINE_DIR=$w/wheels-only/tl XDG_CACHE_HOME=/tmp/cache-wheels
    bash .device/cpu.sh $w/wheels-cpu.txt & sampler=$!
    PYTEST_ADDOPTS="-p timeline --durations=40" timeout 450 bash .ci/gpu-wheels-only $w/wheels-only .device/wheels/pyelftools-*.whl .device/wheels/libclang-*.whl .device/wheels13/*.whl 2>&1 | tee $w/wheels-only.txt | tail -12
    kill $sampler; unset TIMELINE_DIR XDG_CACHE_HOME ;;
  install) bash .device/gpu-suite.sh true ;;
  pycuda) suite pycuda --mmcheck-backend pycuda ;;
  core) suite core --mmcheck-backend cuda-core ;;
  pycuda-warm) CACHE=pycuda suite pycuda-warm --mmcheck-backend pycuda ;;
  base)  # the same PyCUDA suite at the code of base.tar (git archive of the baseline commit), installed in its place
    mkdir -p /tmp/base && tar xf $d/base.tar -C /tmp/base
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e /tmp/base > /tmp/base-install.log 2>&1
    (cd /tmp/base && suite base --mmcheck-backend pycuda)
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > /tmp/head-install.log 2>&1 ;;
  again) suite again --mmcheck-backend pycuda ;;
esac; done
for t in $w/*/tl; do echo "== $t"; python3 .device/tl/timelines.py $t 12 | tail -48; done
cat $w/summary.txt 2>/dev/null
tar czf $OUT/all.tgz -C $w .
