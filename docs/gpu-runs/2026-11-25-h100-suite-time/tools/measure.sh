#!/bin/bash
# The GPU suite timed on both backends from empty caches, with a per-test timeline and the CPUs' busy share.
set -uo pipefail
w=/tmp/work; mkdir -p $w
export PYTHONPATH=$PWD/.device/tl
suite() {  # suite NAME ARGS...: the suite with -n 16, its timeline and CPU log under $w/NAME
  local name=$1; shift
  mkdir -p $w/$name
  bash .device/cpu.sh $w/$name/cpu.txt & local sampler=$!
  python3 .device/procs.py $w/$name/procs.txt & local procs=$!
  local s=$SECONDS
  TIMELINE_DIR=$w/$name/tl XDG_CACHE_HOME=/tmp/cache-${CACHE:-$name} timeout ${LIMIT:-240} python3 -m pytest -q -p no:cacheprovider -p timeline -n 16 -rfE --durations=40 "$@" > $w/$name/suite.log 2>&1
  echo "$name: exit $? in $((SECONDS - s)) s: $(tail -1 $w/$name/suite.log)" | tee -a $w/summary.txt
  kill $sampler $procs; sleep 1
}
for step in ${STEPS}; do case $step in
  wheels)
    export TIMELINE_DIR=$w/wheels-only/tl XDG_CACHE_HOME=/tmp/cache-wheels
    bash .device/cpu.sh $w/wheels-cpu.txt & sampler=$!
    PYTEST_ADDOPTS="-p timeline --durations=40" timeout 330 bash .ci/gpu-wheels-only $w/wheels-only .device/wheels/pyelftools-*.whl .device/wheels/libclang-*.whl .device/wheels13/*.whl 2>&1 | tee $w/wheels-only.txt | tail -12
    kill $sampler; unset TIMELINE_DIR XDG_CACHE_HOME ;;
  install) bash .device/gpu-suite.sh true ;;
  pycuda) suite pycuda --mmcheck-backend pycuda ;;
  core) suite core --mmcheck-backend cuda-core ;;
  pycuda-warm) CACHE=pycuda suite pycuda-warm --mmcheck-backend pycuda ;;
esac; done
cat $w/summary.txt 2>/dev/null
tar czf $OUT/all.tgz -C $w .
