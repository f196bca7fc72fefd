import collections, re, sys
rate=67.0
tot=collections.Counter(); imp=collections.Counter(); procs=collections.defaultdict(set); ctx=collections.Counter()
def kindof(p):
    if "mmcheck.backends.process" in p: return "gpuworker " + p.split("mmcheck.backends.process")[1].split()[0]
    if "nvrtc_child" in p: return "nvrtc child"
    if "spawn_main" in p or "multiprocess" in p: return "mp spawn"
    if "import sys;exec" in p or p.rstrip("\"").endswith("-c import sys"): return "xdist worker"
    if "pytest" in p: return "pytest"
    if "mmcheck" in p: return "cli"
    return "other "+p[:50]
for line in open(sys.argv[1]):
    stack,_,n=line.rstrip().rpartition(' '); n=int(n); frames=stack.split(';')
    idx=max(i for i,f in enumerate(frames) if f.startswith('process '))
    k=kindof(frames[idx]); pid=frames[idx].split(':')[0]
    procs[k].add(pid); tot[k]+=n
    fr=frames[idx+1:]
    if any('_find_and_load' in f for f in fr): imp[k]+=n
    if any('_retain_primary_context' in f or 'cuda_core.py:45' in f for f in fr): ctx[k]+=n
for k,n in tot.most_common(): print(f"{k[:40]:40s} procs {len(procs[k]):4d} total {n/rate:6.1f} imports {imp[k]/rate:6.1f} ctx {ctx[k]/rate:5.1f}")
