"""Where a watch's NVRTC recompile goes on this machine: the front end's parse, the NVRTC child's start, the compile."""
import dataclasses, sys, time, subprocess, statistics
from mmcheck.describe.spec import load_specs
from mmcheck.toolchain.compile import Build
from mmcheck.backends import device_code as dc
from mmcheck.backends.nvrtc import Nvrtc
from mmcheck.backends.compilers import get_compiler
spec = load_specs("docs/examples/mykernels/matmul.cu")[0]
def build(i):
    return Build(dataclasses.replace(spec, source=spec.source + f"\n// {i}\n"), spec.dtypes[0])
t = {}
def timed(name, f):
    s = time.perf_counter(); r = f(); t.setdefault(name, []).append(time.perf_counter() - s); return r
nv = get_compiler("nvrtc", "/tmp/split-cache")
for i in range(6):
    b = build(i)
    code = timed("parse (device_code)", lambda: dc.device_code(b))
    from mmcheck.toolchain.compile import unit_source
    src = unit_source(b, instantiate=False, source=code.source)
    opts = nv.options(b, "sm_90")
    timed("nvrtc child (sandboxed)", lambda: nv._compile(b, src, f"&{b.instance}", opts))
    timed("python -c import nvrtc_child", lambda: subprocess.run([sys.executable, "-c", "import mmcheck.backends.nvrtc_child"]))
    from mmcheck.backends import nvrtc_child
    timed("in-process NVRTC compile", lambda: nvrtc_child.compile_program(src, "k.cu", f"&{b.instance}", opts))
    timed("whole compile() (cache miss)", lambda: nv.compile(build(100 + i), "sm_90"))
for k, v in t.items():
    print(f"{k:32s} median {statistics.median(v[1:]):.3f} s  first {v[0]:.3f}")
