set -o pipefail
export PYTHONUNBUFFERED=1
timeout 400 python3 -m pytest -q -p no:cacheprovider --benchmark-only --mmcheck-backend gpu tests/test_benchmarks.py --mmcheck-bench-sizes 1024 --mmcheck-bench-max-time 1 -k "seed003 or cublas" --benchmark-json $OUT/pytest-bench.json 2>&1 | tee $OUT/pytest-bench.log | grep -v "^\s*$" | tail -25
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/pytest-bench.json"))
for b in d["benchmarks"]:
    e = b["extra_info"]
    print(e["kernel"], e["dtype"], f'{b["stats"]["median"]*1e3:.4g} ms', "verified", e["verified_launches"], "distinct", e["distinct_inputs"], "floor", e["floor_s"])
PY
