set -o pipefail
export PYTHONUNBUFFERED=1
python3 -m pytest -q -p no:cacheprovider tests/bench/test_fresh.py tests/bench/test_floor.py --mmcheck-backend gpu -rs 2>&1 | tee $OUT/fresh-floor.log | tail -6
timeout 200 mmcheck bench tests/cheats/first_launch_only.cu --backend gpu --bench-sizes 4096 --json $OUT/cheat.json 2>&1 | tee $OUT/cheat.log | tail -12; echo "cheat exit ${PIPESTATUS[0]}"
timeout 240 python3 -m pytest -q -p no:cacheprovider --benchmark-only --mmcheck-backend gpu tests/test_benchmarks.py --benchmark-json $OUT/zoo-bench.json 2>&1 | tee $OUT/zoo-bench.log | tail -8; echo "zoo exit ${PIPESTATUS[0]}"
