"""summary.py DIR: the profiles in DIR summed by kind of process (file name <kind>-<pid>.prof)."""
import collections, glob, io, os, pstats, sys
by = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/*.prof"):
    by[os.path.basename(f).split("-")[0]].append(f)
for kind, files in sorted(by.items()):
    try:
        s = pstats.Stats(files[0], stream=io.StringIO())
        for f in files[1:]:
            try:
                s.add(f)
            except Exception:
                pass
    except Exception as e:
        print(kind, "unreadable", e); continue
    print(f"\n######## {kind}: {len(files)} processes, {s.total_tt:.1f} s profiled")
    out = io.StringIO(); s.stream = out
    s.sort_stats("cumulative").print_stats(40)
    s.sort_stats("tottime").print_stats(25)
    print("\n".join(l[:200] for l in out.getvalue().splitlines() if l.strip() and not l.startswith(("   Ordered", "   List"))))
