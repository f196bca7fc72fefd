# Per-process timing of mmcheck's steps, written at exit to $TRACE_DIR/<pid>.json (exclusive seconds).
import atexit, functools, json, os, sys, time

_T0 = time.time()
_dir = os.environ.get("TRACE_DIR")
if _dir:
    totals = {}
    perjob = {}
    marks = []
    current = []
    job_label = lambda self, r, spec, d: f"JOB {spec.name} {d}"
    spans = []
    slow = []
    stack = []
    _last = time.time()

    def timed(label):
        def wrap(f):
            @functools.wraps(f)
            def inner(*a, **k):
                stack.append(0.0)
                if label is job_label:
                    current.append(job_label(*a, **k))
                s = time.perf_counter()
                t = time.time()
                try:
                    return f(*a, **k)
                finally:
                    spent = time.perf_counter() - s
                    inside = stack.pop()
                    name = label(*a, **k)
                    e = totals.setdefault(name, [0, 0.0])
                    e[0] += 1
                    e[1] += spent - inside
                    if current and not name.startswith("JOB"):
                        j = perjob.setdefault(current[-1], {}).setdefault(name, [0, 0.0])
                        j[0] += 1
                        j[1] += spent - inside
                    if stack:
                        stack[-1] += spent
                    if name.startswith("JOB"):
                        spans.append((name, t - _T0, spent))
                        current.pop()
                    global _last
                    if not stack and time.time() - _last > 2:
                        _last = time.time(); dump()
            return inner
        return wrap

    def install():
        from mmcheck import options, artifacts
        from mmcheck.backends import process
        options.Settings.check = timed(job_label)(options.Settings.check)
        process._Worker.__init__ = timed(lambda self, inner, o, tool: f"worker start {tool}")(process._Worker.__init__)
        process.ProcessBackend.compile = timed(lambda self, b: "compile round trip")(process.ProcessBackend.compile)
        process.ProcessBackend.launch = timed(lambda self, k, a, g, b, s, sch: f"launch round trip {sch}")(process.ProcessBackend.launch)
        artifacts.save_failure = timed(lambda *a, **k: "save_failure")(artifacts.save_failure)
        from mmcheck import cli, pool as _pool
        cli._each = timed(lambda *a, **k: "main: _each")(cli._each)
        cli._remember_costs = timed(lambda *a, **k: "main: costs")(cli._remember_costs)
        _pool.Pool._stop = timed(lambda self, now: f"main: pool stop now={now}")(_pool.Pool._stop)
        def marked(cls, name, label):
            f = getattr(cls, name)
            def inner(*a, **k):
                marks.append((label + " begin", time.time() - _T0))
                try:
                    return f(*a, **k)
                finally:
                    marks.append((label + " end", time.time() - _T0))
            setattr(cls, name, inner)
        marked(_pool._Worker, "close", "worker close")
        marked(_pool._Worker, "__init__", "worker init")
        marked(_pool._Worker, "_open", "worker open runner")
        import mmcheck.backends as _bk
        marked(_pool, "share_cores", "share_cores")
        marked(_pool, "pin_gpu", "pin_gpu")
        marked(_bk, "_load", "backend _load")
        marked(process._Worker, "__init__", "kernel process popen")
        marked(process.ProcessBackend, "__init__", "process backend init")
        marks.append(("installed", time.time() - _T0))
        marked(process.ProcessBackend, "close", "process backend close")
        marked(_pool.Pool, "_stop", "pool stop")
        _pool.Pool.start = timed(lambda self, st: "main: pool start")(_pool.Pool.start)
        _pool.Pool.backend = timed(lambda self, st: "main: pool backend")(_pool.Pool.backend)
        _main = cli.main
        def main_marked(*a, **k):
            try:
                return _main(*a, **k)
            finally:
                marks.append(("main returned", time.time() - _T0))
        cli.main = main_marked
        from mmcheck import runner, judge, data, shapes
        judge.judge = timed(lambda *a, **k: "judge")(judge.judge)
        runner.judge = judge.judge
        judge._expected = timed(lambda *a, **k: "judge: expected")(judge._expected)
        data.make_operands = timed(lambda *a, **k: "make_operands")(data.make_operands)
        runner.Runner.prepare = timed(lambda *a, **k: "prepare")(runner.Runner.prepare)
        runner.check_buffers = timed(lambda *a, **k: "check_buffers")(runner.check_buffers)
        options_shapes = options.Settings.shapes
        options.Settings.shapes = timed(lambda *a, **k: "shapes")(options_shapes)
        process._Launch.finish = timed(lambda self: f"finish wait {self.tool}")(process._Launch.finish)
        process.ProcessBackend.submit = timed(lambda self, *a: "submit")(process.ProcessBackend.submit)
        try:
            from mmcheck.backends import pycuda as pc, compilers
            pc.PyCudaBackend.__init__ = timed(lambda self, o=None: "child: backend init")(pc.PyCudaBackend.__init__)
            pc.PyCudaBackend.compile = timed(lambda self, b: "child: compile+load")(pc.PyCudaBackend.compile)
            compilers.Nvcc.compile = timed(lambda self, b, a: "child: nvcc or cache")(compilers.Nvcc.compile)
            pc.PyCudaBackend._introspect = timed(lambda self, c, s: "child: introspect")(pc.PyCudaBackend._introspect)
            _launch = timed(lambda self, k, a, g, b, s, sch: f"child: launch {sch}")(pc.PyCudaBackend.launch)
            def launch(self, k, a, g, b, s, sch):
                t = time.perf_counter()
                try:
                    return _launch(self, k, a, g, b, s, sch)
                finally:
                    d = time.perf_counter() - t
                    if d > 0.015:
                        slow.append((k.spec.name, k.dtype, list(g), list(b), round(d, 4), time.time() - _T0))
            pc.PyCudaBackend.launch = launch
            pc.PyCudaBackend.upload = timed(lambda self, h, o: "child: upload")(pc.PyCudaBackend.upload)
            pc.PyCudaBackend.download = timed(lambda self, b: "child: download")(pc.PyCudaBackend.download)
        except Exception as e:
            totals["no pycuda: " + str(e)[:60]] = [1, 0.0]

    def dump():
        with open(os.path.join(_dir, f"{os.getpid()}.json"), "w") as f:
            json.dump({"argv": sys.argv[:4], "life": time.time() - _T0, "start": _T0, "totals": totals,
                       "spans": spans, "slow": slow, "perjob": perjob, "marks": marks + [("dump", time.time() - _T0)]}, f)

    if os.environ.get("NO_RACECHECK"):
        try:
            from mmcheck.backends import pycuda as _pc
            _pc.PyCudaBackend._schedules = lambda self, shared: (("device",), ())
        except Exception as e:
            print("trace: no pycuda:", e, file=sys.stderr)
    if os.environ.get("NO_TURNS") or os.environ.get("TOOL_NO_TURNS"):
        from mmcheck.backends import turns as _turns
        _init = _turns.Turns.__init__
        def _no_turns(self, bus, lane, patience):
            _init(self, bus, lane, patience)
            if os.environ.get("NO_TURNS") or lane != "plain":
                self._fd = None
        _turns.Turns.__init__ = _no_turns
    if "--multiprocessing-fork" in sys.argv:
        # the last thing Python runs before its own teardown: when it was reached, written beside the trace
        def _last_atexit():
            with open(os.path.join(_dir, f"{os.getpid()}.last"), "w") as f:
                f.write(repr(time.time()))
        atexit.register(_last_atexit)
    if os.environ.get("FAST_EXIT") and "--multiprocessing-fork" in sys.argv:
        def _fast_exit():
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(0)
        atexit.register(_fast_exit)  # first registered: runs last, after the dump
    try:
        install()
        atexit.register(dump)
    except Exception as e:
        print("trace: not installed:", e, file=sys.stderr)
