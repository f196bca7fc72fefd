"""procs.py OUT: every 0.3 s, each process's CPU seconds so far; at SIGTERM, the CPU seconds by kind of process."""
import collections, os, signal, sys, time

out = sys.argv[1]
seen = {}  # (pid, starttime) -> [label, ticks]
tick = os.sysconf("SC_CLK_TCK")


def label(pid, comm):
    try:
        c = [x.decode(errors="replace") for x in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0") if x]
    except OSError:
        return comm
    s = " ".join(c)
    if "compute-sanitizer" in s and "mmcheck.backends.process" in s and not comm.startswith("python"):
        return "compute-sanitizer"
    if "mmcheck.backends.process" in s:
        i = c.index("mmcheck.backends.process")
        return "worker " + (c[i + 1] if i + 1 < len(c) else "?") + (" (under sanitizer)" if "compute-sanitizer" in s else "")
    if "nvrtc_child" in s:
        return "nvrtc child"
    if "spawn_main" in s:
        return "mp spawn"
    if "sys.stdin.readline" in s or "execnet" in s:
        return "xdist worker"
    if not comm.startswith("python"):
        return comm
    if "pytest" in s:
        return "pytest"
    if "mmcheck" in s and comm.startswith("python"):
        return "mmcheck cli"
    if comm.startswith("python"):
        return "python " + " ".join(c[1:3])[:40]
    return comm


def sample(first=False):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        f = raw[raw.rindex(")") + 2:].split()
        key = (d, f[19])
        cpu = int(f[11]) + int(f[12])
        if key not in seen:
            seen[key] = [label(d, comm), cpu if first else 0, cpu]
        else:
            seen[key][2] = cpu


def done(*_):
    by = collections.defaultdict(lambda: [0, 0])
    for lab, base, cpu in seen.values():
        by[lab][0] += 1
        by[lab][1] += (cpu - base) / tick
    with open(out, "w") as fh:
        for lab, (n, s) in sorted(by.items(), key=lambda kv: -kv[1][1]):
            fh.write(f"{s:9.1f} s {n:6d}  {lab}\n")
    sys.exit(0)


signal.signal(signal.SIGTERM, done)
sample(first=True)
while True:
    sample()
    time.sleep(0.3)
