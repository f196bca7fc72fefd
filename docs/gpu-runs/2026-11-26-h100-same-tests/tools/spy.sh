#!/bin/bash
# spy.sh: the PyCUDA suite (-n 16, empty cache) under py-spy, every Python process sampled (CPU, not idle);
# raw stacks and per-process CPU under $OUT.
set -uo pipefail
w=/tmp/work; mkdir -p $w
bash .device/gpu-suite.sh true
python3 -m pip install -q --no-index --no-deps .device/extra/py_spy-*.whl > /dev/null 2>&1
which py-spy || exit 1
python3 .device/procs.py $w/procs.txt & procs=$!
s=$SECONDS
XDG_CACHE_HOME=/tmp/cache-spy timeout 400 py-spy record -r 67 -s -f raw -o $w/spy.txt --nonblocking -- \
  python3 -m pytest -q -p no:cacheprovider -n 16 -rfE --mmcheck-backend pycuda > $w/suite.log 2>&1
echo "spy: exit $? in $((SECONDS - s)) s: $(tail -1 $w/suite.log)" | tee $w/summary.txt
kill $procs; sleep 1
tail -5 $w/suite.log; head -20 $w/procs.txt; ls -la $w
gzip -c $w/spy.txt > $OUT/spy.txt.gz; cp $w/procs.txt $w/summary.txt $w/suite.log $OUT/
