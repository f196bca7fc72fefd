"""One large case of a zoo kernel on the GPU under cProfile: python3 prof_large.py NAME ROLE (1: B past 2**31, 2: C)."""
import cProfile, io, os, pstats, sys, time
from pathlib import Path
from mmcheck.backends import get_backend
from mmcheck.runner import Runner
from mmcheck.shapes import LARGE, large_shapes
from mmcheck.spec import collect
name, role = sys.argv[1], int(sys.argv[2])
spec = next(s for s in collect([Path("cuda_src")]).specs if s.name == name)
dtype = spec.dtypes[0]
shape = next(s for s in large_shapes(spec, dtype) if spec.operation.elements(role, s) >= LARGE)
runner = Runner(get_backend("gpu"))
pr = cProfile.Profile(); t = time.perf_counter(); pr.enable()
result = runner.run(runner.case(spec, dtype, shape))
pr.disable()
print(name, dtype, shape, result.outcome, result.check, f"{time.perf_counter() - t:.1f} s", result.message[:300])
for key in ("tottime", "cumtime"):
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats(key).print_stats(22); print(s.getvalue()[-4200:])
