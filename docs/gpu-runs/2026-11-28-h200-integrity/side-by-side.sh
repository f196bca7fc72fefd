set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
for round in old new; do
  echo "== zoo $round"
  if [ $round = old ]; then export PYTHONPATH=$PWD/.device/old; else unset PYTHONPATH; fi
  python3 -c "import mmcheck; print(mmcheck.__file__)"
  start=$(date +%s.%N)
  XDG_CACHE_HOME=/tmp/cache-$round timeout 200 python3 -m mmcheck bench cuda_src --backend gpu --bench-sizes 2048 --bench-max-time 3 --json $OUT/zoo-$round.json > $OUT/zoo-$round.log 2>&1
  code=$?
  end=$(date +%s.%N)
  echo "exit $code wall $(python3 -c "print(round($end-$start,1))")" | tee $OUT/zoo-$round.wall
  grep -i "not timed\|not credible\|wrong\|error\|Traceback" $OUT/zoo-$round.log | head -5
done
unset PYTHONPATH
python3 - <<'PY' | tee $OUT/side-by-side.txt
import json, os
out=os.environ["OUT"]
def load(n):
    d=json.load(open(f"{out}/zoo-{n}.json"))
    return {(b["extra_info"]["kernel"], b["extra_info"]["dtype"]): b for b in d["benchmarks"]}
new, old = load("new"), load("old")
both = sorted(new.keys() & old.keys())
r = sorted((new[k]["stats"]["median"]/old[k]["stats"]["median"]-1, k) for k in both)
for c, k in r: print(f"{100*c:+6.2f}%  {k[0]} {k[1]}  old {old[k]['stats']['median']*1e3:.4g} ms  new {new[k]['stats']['median']*1e3:.4g} ms  verified {new[k]['extra_info']['verified_launches']}  distinct {new[k]['extra_info']['distinct_inputs']}")
print(len(both), "in both; only new:", sorted(new.keys()-old.keys()), "only old:", sorted(old.keys()-new.keys()))
print("largest |change|: %.2f%%" % (100*max(abs(c) for c, _ in r)))
PY
echo "== GPU tests"
python3 -m pytest -q -s -p no:cacheprovider tests/bench/test_cheats.py tests/bench/test_fresh.py tests/bench/test_integrity.py --mmcheck-backend gpu -rs 2>&1 | tee $OUT/tests.log | grep -v "xxxx" | tail -24
