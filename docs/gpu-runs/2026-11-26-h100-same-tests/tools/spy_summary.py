"""spy_summary.py RAW [FUNCTION...]: py-spy's raw stacks (record -f raw -s) summed: seconds sampled by kind of
process (and how much of it in imports, and in making a CUDA context), the functions by own time, and for each
FUNCTION given the seconds under it by kind of process."""
import collections
import re
import sys

RATE = 67.0  # samples a second (record -r 67)


def kind(process):
    if "mmcheck.backends.process" in process:
        return "gpuworker " + process.split("mmcheck.backends.process")[1].split()[0]
    if "nvrtc_child" in process:
        return "nvrtc child"
    if "spawn_main" in process or "multiprocess" in process:
        return "mp spawn"
    if process.rstrip('"').endswith("-c import sys"):  # execnet's bootstrap, cut at its ';'
        return "xdist worker"
    if "pytest" in process:
        return "pytest"
    return "cli" if "mmcheck" in process else "other"


def records(path):
    """(kind, pid, frames, samples) of each stack; a record may span lines (a command line with newlines)."""
    for record in re.split(r"\n(?=process \d+:)", open(path).read()):
        stack, _, count = record.replace("\n", " ").strip().rpartition(" ")
        frames = stack.split(";")
        last = max(i for i, f in enumerate(frames) if f.startswith("process "))
        short = [re.sub(r" \((/[^)]*?)(site-packages|python3\.\d+|main)/", " (", f) for f in frames[last + 1:]]
        yield kind(frames[last]), frames[last].split(":")[0], short, int(count)


def main(path, targets):
    total, imports, context, own = (collections.Counter() for _ in range(4))
    processes = collections.defaultdict(set)
    under = {t: collections.Counter() for t in targets}
    under_processes = {t: collections.defaultdict(set) for t in targets}
    for k, pid, frames, n in records(path):
        total[k] += n
        processes[k].add(pid)
        imports[k] += n * any("_find_and_load" in f for f in frames)
        context[k] += n * any("_retain_primary_context" in f or "cuda_core.py:45" in f for f in frames)
        if frames:
            own[frames[-1]] += n
        for t in targets:
            if any(t in f for f in frames):
                under[t][k] += n
                under_processes[t][k].add(pid)
    print("## By kind of process: processes, seconds sampled, of which in imports, in making a CUDA context")
    for k, n in total.most_common():
        print(f"{k[:40]:40s} {len(processes[k]):4d} {n / RATE:7.1f} {imports[k] / RATE:7.1f} {context[k] / RATE:6.1f}")
    print("\n## Functions by own time")
    for f, n in own.most_common(30):
        print(f"{n / RATE:7.1f} {f[:160]}")
    print("\n## Under some functions, by kind of process: seconds/processes")
    for t in targets:
        print(t, " | ".join(f"{k}: {n / RATE:.1f}s/{len(under_processes[t][k])}p" for k, n in under[t].most_common()))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
