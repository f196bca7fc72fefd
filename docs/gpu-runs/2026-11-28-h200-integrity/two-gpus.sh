set -o pipefail
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -m pytest -q -p no:cacheprovider tests/bench/test_fresh.py --mmcheck-backend gpu -rs 2>&1 | tail -3
bash .ci/gpu-bench-sweep $OUT/sweep 2>&1 | tee $OUT/sweep.log | grep -v "^\s*$" | tail -60
