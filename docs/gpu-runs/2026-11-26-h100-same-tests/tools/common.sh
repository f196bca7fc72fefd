#!/bin/bash
# common.sh: the base code (base.tar) and this tree on one machine: the PyCUDA suite (-n 16, empty compile caches)
# on the tests both have (same node ids), then each whole suite; STEPS adds "core" (this tree on cuda-core).
set -uo pipefail
w=/tmp/work; mkdir -p $w; d=$PWD/.device; head=$PWD
export PYTHONPATH=$d/tl
[[ " ${STEPS:-common} " == *" wheels "* ]] || { bash $d/gpu-suite.sh true > $w/install.txt 2>&1; tail -3 $w/install.txt; }
mkdir -p /tmp/base && tar xf $d/base.tar -C /tmp/base
base_name=$(cd /tmp/base && python3 -c "import configparser as c; p = c.ConfigParser(); p.read('setup.cfg'); print(p['metadata']['name'])")
use() {  # use base|head: that code installed (editable), the other not
  if [ $1 = base ]; then python3 -m pip uninstall -q -y mmcheck-cuda >/dev/null 2>&1; python3 -m pip install -q --no-index --no-deps --no-build-isolation -e /tmp/base > $w/use.log 2>&1
  else python3 -m pip uninstall -q -y $base_name >/dev/null 2>&1; python3 -m pip install -q --no-index --no-deps --no-build-isolation -e $head > $w/use.log 2>&1; fi || tail -5 $w/use.log
}
dir_of() { [ $1 = base ] && echo /tmp/base || echo $head; }
args_of() { [ $1 = base ] && echo "--mmcheck-backend gpu" || echo "--mmcheck-backend ${BACKEND:-pycuda}"; }
suite() {  # suite CODE NAME [ids]: CODE's suite from an empty cache, its timeline and per-process CPU under $w/NAME
  local code=$1 name=$2 ids=${3:-}
  mkdir -p $w/$name
  python3 $d/procs.py $w/$name/procs.txt & local procs=$!
  local s=$SECONDS
  (cd $(dir_of $code) && SELECT_IDS=$ids TIMELINE_DIR=$w/$name/tl XDG_CACHE_HOME=/tmp/cache-$name timeout 300 \
     python3 -m pytest -q -p no:cacheprovider -p timeline -p select_ids -n 16 -rfE $(args_of $code) > $w/$name/suite.log 2>&1)
  echo "$name: exit $? in $((SECONDS - s)) s: $(tail -1 $w/$name/suite.log)" | tee -a $w/summary.txt
  kill $procs; sleep 1
  python3 $d/tl/timelines.py $w/$name/tl 60 > $w/$name/timeline.txt 2>&1
}
ids() {  # ids CODE: its collected node ids (this also writes its bytecode and rewritten tests, as a first run would)
  (cd $(dir_of $1) && XDG_CACHE_HOME=/tmp/cache-collect-$1 python3 -m pytest -q -p no:cacheprovider -n 0 --collect-only $(args_of $1) 2>/dev/null) \
    | grep "::" | sort > $w/ids-$1.txt
  echo "$1: $(wc -l < $w/ids-$1.txt) tests collected"
}
for step in ${STEPS:-common}; do case $step in
  common)
    ids head; use base; ids base
    comm -12 $w/ids-base.txt $w/ids-head.txt > $w/ids-common.txt; echo "common: $(wc -l < $w/ids-common.txt) node ids"
    suite base base-common $w/ids-common.txt
    use head; suite head head-common $w/ids-common.txt
    use base; suite base base-full
    use head; suite head head-full ;;
  head) suite head head-full ;;
  core) BACKEND=cuda-core suite head core-full ;;
  wheels)
    export TIMELINE_DIR=$w/wheels-only/tl XDG_CACHE_HOME=/tmp/cache-wheels
    PYTEST_ADDOPTS="-p timeline" timeout 450 bash .ci/gpu-wheels-only $w/wheels-only $d/wheels/pyelftools-*.whl $d/wheels/libclang-*.whl $d/wheels13/*.whl > $w/wheels-only.txt 2>&1
    echo "wheels: exit $?: $(grep -E 'passed|failed' $w/wheels-only.txt | tail -2 | tr '\n' ' ')" | tee -a $w/summary.txt
    python3 $d/tl/timelines.py $w/wheels-only/tl 60 > $w/wheels-only/timeline.txt 2>&1; unset TIMELINE_DIR XDG_CACHE_HOME ;;
esac; done
cat $w/summary.txt
for f in $w/*/timeline.txt; do echo "== $f"; head -17 $f | cut -c1-50; done
tar czf $OUT/all.tgz --exclude=tl -C $w .
