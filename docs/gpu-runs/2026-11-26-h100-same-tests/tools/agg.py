import collections, re, sys
rate = 67.0
inc = collections.Counter(); self_ = collections.Counter(); kind = collections.Counter(); total = 0
filt = sys.argv[2] if len(sys.argv) > 2 else None
def kindof(p):
    if "mmcheck.backends.process" in p: return "gpuworker " + p.split("mmcheck.backends.process")[1].split()[0]
    if "nvrtc_child" in p: return "nvrtc child"
    if "spawn_main" in p: return "mp spawn"
    if "execnet" in p or "sys.stdin.readline" in p or "-c import sys;exec(eval(sys.stdin" in p: return "xdist"
    if "pytest" in p: return "pytest"
    if "mmcheck" in p: return "cli"
    return p[:60]
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(' ')
    n = int(n); frames = stack.split(';')
    idx = max(i for i, f in enumerate(frames) if f.startswith('process '))
    proc = frames[idx]; frames = frames[idx:]
    k = kindof(proc)
    if filt and filt not in k: continue
    total += n; kind[k] += n
    names = []
    for f in frames[1:]:
        f = re.sub(r' \((/[^)]*?)(site-packages|python3\.12|main)/', ' (', f)
        names.append(f)
    for f in set(names): inc[f] += n
    if names: self_[names[-1]] += n
print(f"total {total/rate:.1f} s")
for k, n in kind.most_common(12): print(f"{n/rate:8.1f} {k}")
print("--- inclusive")
for f, n in inc.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 60): print(f"{n/rate:8.1f} {f[:160]}")
print("--- self")
for f, n in self_.most_common(int(sys.argv[4]) if len(sys.argv) > 4 else 30): print(f"{n/rate:8.1f} {f[:160]}")
