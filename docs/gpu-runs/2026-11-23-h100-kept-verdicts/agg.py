# Summarise a folder of per-process traces: totals by step (exclusive s), per process, and the job spans.
import glob, json, sys, collections
for d in sys.argv[1:]:
    procs = [json.load(open(p)) for p in glob.glob(f"{d}/*.json")]
    if not procs: continue
    t0 = min(p["start"] for p in procs)
    tot = collections.defaultdict(lambda: [0, 0.0])
    for p in procs:
        for k, (n, s) in p["totals"].items():
            if not k.startswith("JOB"):
                tot[k][0] += n; tot[k][1] += s
    print(f"=== {d}: {len(procs)} processes")
    for k, (n, s) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        print(f"{s:8.2f} s {n:6d}x  {k}")
    print("-- processes (start, life, jobs s, argv)")
    for p in sorted(procs, key=lambda p: p["start"]):
        jobs = sum(s for k, (n, s) in p["totals"].items() if k.startswith("JOB"))
        first = min((t for _, t, _ in p["spans"]), default=None)
        print(f"{p['start']-t0:6.2f} {p['life']:6.2f} jobs {jobs:6.2f} first-job-at {first if first is None else round(first,2)} {' '.join(p['argv'])[:90]}")
    spans = sorted((s, n) for p in procs for n, _, s in p["spans"])[::-1][:15]
    print("-- slowest jobs"); [print(f"{s:6.2f} {n}") for s, n in spans]
    slow = [x for p in procs for x in p.get("slow", [])]
    if slow:
        per = collections.defaultdict(lambda: [0, 0.0])
        for name, dtype, g, b, d, t in slow:
            per[f"{name} {dtype} block {b}"][0] += 1; per[f"{name} {dtype} block {b}"][1] += d
        print(f"-- launches over 15 ms: {len(slow)}, {sum(x[4] for x in slow):.1f} s")
        for k, (n, d) in sorted(per.items(), key=lambda kv: -kv[1][1])[:30]:
            print(f"{d:7.2f} s {n:4d}x {k}")
        print("-- the 25 longest")
        for x in sorted(slow, key=lambda x: -x[4])[:25]:
            print(x)
