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
  startup)  # what one process costs on the idle machine: Python, mmcheck's CLI, a plain pytest run, a GPU worker
    mkdir -p /tmp/plain && echo "def test_plain(): assert True" > /tmp/plain/test_plain.py
    timed() { local label=$1; shift; TIMEFORMAT="$label: %R s, %U+%S s CPU"; time "$@" > /dev/null 2>&1; }
    for i in 1 2 3; do
      timed "python -c pass" python3 -c pass
      timed "import mmcheck.cli" python3 -c "import mmcheck.cli"
      timed "pytest, one plain test" python3 -m pytest -q -p no:cacheprovider /tmp/plain/test_plain.py
      for b in pycuda cuda-core; do
        timed "$b backend opened (its worker) and closed" python3 -c "
from mmcheck.backends import get_backend
b = get_backend('$b'); b.device(); b.close()"
      done
    done 2>&1 | tee -a $w/startup.txt ;;
  pycuda) suite pycuda --mmcheck-backend pycuda ;;
  core) suite core --mmcheck-backend cuda-core ;;
  pycuda-warm) CACHE=pycuda suite pycuda-warm --mmcheck-backend pycuda ;;
  base|old|old2)  # the PyCUDA suite at the code of $d/<name>.tar (base.tar: the baseline commit, old.tar: the code before
    # this change; old2 runs old.tar again), installed in this tree's place, then this tree reinstalled
    tar=$d/${step%2}.tar; rm -rf /tmp/$step && mkdir -p /tmp/$step && tar xf $tar -C /tmp/$step
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e /tmp/$step > $w/$step-install.log 2>&1
    args="--mmcheck-backend pycuda"; [ $step = base ] && args=${BASE_ARGS:---mmcheck-backend gpu}
    (cd /tmp/$step && suite $step $args)
    # its distribution goes (the baseline's is named mmcheck, this tree's mmcheck-cuda: both would map mmcheck)
    python3 -m pip uninstall -q -y "$(cd /tmp/$step && python3 -c "import configparser as c; p = c.ConfigParser(); p.read('setup.cfg'); print(p['metadata']['name'])")" >> $w/$step-install.log 2>&1
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > $w/head-install-after-$step.log 2>&1 || tail -5 $w/head-install-after-$step.log ;;
  again) suite again --mmcheck-backend pycuda ;;
  profiled)  # every Python process of the suite under cProfile, summed by kind (not a timing)
    PYTHONPATH=$d/tl:$d/wprof WPROF_ALL=1 WPROF_DIR=$w/wprof LIMIT=300 suite profiled --mmcheck-backend pycuda
    python3 $d/wprof/summary.py $w/wprof > $w/profile-summary.txt 2>&1; grep "########" $w/profile-summary.txt ;;
esac; done
for t in $w/*/tl; do python3 .device/tl/timelines.py $t 60 > $(dirname $t)/timeline.txt 2>&1; echo "== $t"; head -17 $(dirname $t)/timeline.txt | cut -c1-60; done
cat $w/summary.txt 2>/dev/null
tar czf $OUT/all.tgz --exclude=wprof --exclude=tl -C $w .
