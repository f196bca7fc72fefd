import collections, sys
sys.path.insert(0, '/tmp')
rate=67.0
def kindof(p):
    if "mmcheck.backends.process" in p: return "gpuworker " + p.split("mmcheck.backends.process")[1].split()[0]
    if "nvrtc_child" in p: return "nvrtc child"
    if "spawn_main" in p or "multiprocess" in p: return "mp spawn"
    if "import sys;exec" in p or p.rstrip("\"").endswith("-c import sys"): return "xdist worker"
    if "pytest" in p: return "pytest"
    if "mmcheck" in p: return "cli"
    return "other"
for target in sys.argv[2:]:
    c=collections.Counter(); procs=collections.defaultdict(set)
    for line in open(sys.argv[1]):
        stack,_,n=line.rstrip().rpartition(' ')
        frames=stack.split(';'); idx=max(i for i,f in enumerate(frames) if f.startswith('process '))
        if any(target in f for f in frames[idx+1:]):
            k=kindof(frames[idx]); c[k]+=int(n); procs[k].add(frames[idx].split(':')[0])
    print(target, ' | '.join(f"{k}: {n/rate:.1f}s/{len(procs[k])}p" for k,n in c.most_common()))
