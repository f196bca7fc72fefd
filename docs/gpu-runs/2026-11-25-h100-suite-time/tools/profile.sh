#!/bin/bash
# Where the GPU suite's time goes: wheels-only run (cuda-core, NVRTC), then PyCUDA: a one-process profile of a
# slice of test_correctness, and the whole suite with -n 16 and durations.  Everything lands in $OUT/all.tgz.
set -uo pipefail
w=/tmp/work; mkdir -p $w
export PYTEST_ADDOPTS="--durations=80"
( timeout 280 bash .ci/gpu-wheels-only $w/wheels-only .device/wheels/pyelftools-*.whl .device/wheels/libclang-*.whl .device/wheels13/*.whl ) 2>&1 | tee $w/wheels-only.txt | tail -40
unset PYTEST_ADDOPTS
bash .device/gpu-suite.sh true
( timeout 100 python3 .ci/suite-profile --mmcheck-backend pycuda -q -p no:cacheprovider tests/test_correctness.py -k "test_kernel and not property and float32 and (colmajor or seed003)" ) > $w/profile-slice.txt 2>&1
tail -30 $w/profile-slice.txt
start=$SECONDS
( timeout 200 python3 -m pytest -q -p no:cacheprovider --mmcheck-backend pycuda -n 16 -rfE --durations=120 ) > $w/suite-pycuda.log 2>&1
echo "pycuda suite: $((SECONDS-start)) s"
grep -E "passed|failed" $w/suite-pycuda.log | tail -3
tar czf $OUT/all.tgz -C $w .
