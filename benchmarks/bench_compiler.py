"""Compiled-tier benchmark: jf.function compiled vs interpreter vs TF, JAX, numba and numpy.

Four cases (issue 8's acceptance benchmark), each run side by side in one process by
  jf compiled      `jf.function(jit_compile=True)`: numba segments (the compiled tier)
  jf interpreter   `jf.function(jit_compile=False)`: the per-op plan
  tf.function      TensorFlow's graph function          } when importable;
  jax.jit          JAX's XLA-compiled function          } otherwise skipped with a note
  numba floor      numba `njit` of the hand-written expression (what compiling can reach)
  numpy            the hand-written expression in numpy
on
  (a) small  reduce_sum(tanh(a*b+c)) on 10 float32
  (b) chain  x = tanh(x*0.5 + 0.1) repeated to 150 ops, on 10 float32
  (c) mlp    one training step of a 784-256-10 relu MLP on a batch of 64: softmax
             cross-entropy, GradientTape inside the function, SGD (jf.optimizers.SGD,
             keras SGD for TF, a hand-written update for JAX, numba and numpy)
  (d) big    tanh(a*b+c) on 2**24 float32, reported in GB/s (3 arrays read, 1 written)
             against np.copyto's bandwidth on the same machine.

Columns: first call (trace + first run of a fresh function object; for jf compiled that
includes numba compiling every segment, because the benchmark points JITFLOW_CACHE_DIR
at an empty folder unless --keep-cache), what numba compiled during it, the steady
per-call time (median, GC off) and ratios against the numba floor, tf.function and
jax.jit. `check` compares each result with numpy's (allclose); the two jf rows must
also agree bit for bit (outputs and, for the MLP, the updated weights).

A last section runs a small script in two fresh processes that share one
JITFLOW_CACHE_DIR: the second must load every segment from the disk cache (no numba
compile), which its compile_seconds and numba's compile count show.

    python benchmarks/bench_compiler.py [--quick] [--repeat N] [--json PATH] [--no-tf] [--no-jax]

Importing this module runs nothing; `main(["--quick"])` runs a smoke benchmark and
returns 0, `run(options)` returns the results as a dict.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

FLOOR = "numba floor"
JF_COMPILED, JF_INTERP, JF_AUTO = "jf compiled", "jf interpreter", "jf default tier"
ORDER = (JF_COMPILED, JF_INTERP, JF_AUTO, "tf.function", "jax.jit", FLOOR, "numba parallel", "numpy", "np.copyto")
FIRST_CALL_ONLY = (JF_AUTO,)  # starts on the interpreter and compiles in the background


# -- the implementations of each case -----------------------------------------------------------
@dataclass
class Runner:
    """One implementation of a case: `make(tag)` builds a fresh function object (and state)
    and returns a zero-argument callable; `result(out)` turns its output into a list of
    numpy arrays; `state()` (optional) returns the variables after the call."""

    make: Callable[[str], Callable[[], Any]]
    result: Callable[[Any], List[np.ndarray]]
    state: Callable[[], List[np.ndarray]] = lambda: []
    tier: Callable[[], Optional[str]] = lambda: None
    compile_seconds: Callable[[], Optional[float]] = lambda: None


@dataclass
class Case:
    key: str
    title: str
    runners: Dict[str, Runner]
    reference: List[np.ndarray]
    rtol: float = 1e-4
    atol: float = 1e-5
    bytes_per_call: Optional[int] = None       # set for the bandwidth case
    notes: List[str] = field(default_factory=list)


def _np_list(*arrays: Any) -> List[np.ndarray]:
    return [np.asarray(a) for a in arrays]


def _jf_runner(jf: Any, build: Callable[[str], Callable], inputs: Sequence[np.ndarray], jit: Optional[bool],
               state: Optional[Callable[[], List[np.ndarray]]] = None) -> Runner:
    """A jf.function runner; `build(tag)` returns the Python function (fresh state if any)."""
    args = [jf.constant(a) for a in inputs]
    holder: Dict[str, Any] = {}

    def make(tag: str) -> Callable[[], Any]:
        fn = holder["fn"] = jf.function(C.fresh_function(build(tag), tag), jit_compile=jit)
        return lambda: fn(*args)

    def tier() -> Optional[str]:
        cfs = holder["fn"].list_concrete_functions()
        return cfs[-1].tier if cfs else None

    def compile_seconds() -> Optional[float]:
        cfs = holder["fn"].list_concrete_functions()
        return cfs[-1].compile_seconds if cfs else None

    def result(out: Any) -> List[np.ndarray]:
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o.numpy()) for o in outs]
    return Runner(make, result, state or (lambda: []), tier, compile_seconds)


def _tf_runner(tf: Any, build: Callable[[str], Callable], inputs: Sequence[np.ndarray],
               state: Optional[Callable[[], List[np.ndarray]]] = None) -> Runner:
    args = [tf.constant(a) for a in inputs]

    def make(tag: str) -> Callable[[], Any]:
        fn = tf.function(C.fresh_function(build(tag), tag))
        return lambda: fn(*args)

    def result(out: Any) -> List[np.ndarray]:
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o.numpy()) for o in outs]
    return Runner(make, result, state or (lambda: []))


def _jax_runner(jax: Any, build: Callable[[str], Callable], inputs: Sequence[np.ndarray]) -> Runner:
    args = [jax.device_put(a) for a in inputs]

    def make(tag: str) -> Callable[[], Any]:
        fn = jax.jit(C.fresh_function(build(tag), tag))
        return lambda: jax.block_until_ready(fn(*args))

    def result(out: Any) -> List[np.ndarray]:
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o) for o in outs]
    return Runner(make, result)


def _plain_runner(fn: Callable, inputs: Sequence[np.ndarray], njit_options: Optional[dict] = None) -> Runner:
    """numpy (njit_options None) or a numba njit of the same hand-written function."""
    def make(tag: str) -> Callable[[], Any]:
        f = fn
        if njit_options is not None:
            import numba
            f = numba.njit(**njit_options)(C.fresh_function(fn, tag))
        return lambda: f(*inputs)
    return Runner(make, lambda out: _np_list(*(out if isinstance(out, tuple) else (out,))))


# -- (a) small and (b) chain: one source per framework namespace ----------------------------------
small_fn, chain_fn = C.make_small, C.make_chain


def small_floor(a, b, c):
    return np.sum(np.tanh(a * b + c))


def make_chain_floor(n_ops: int) -> Callable:
    """The chain as one loop over the elements (what a fusing compiler emits)."""
    rounds, rest = divmod(n_ops, 3)
    half, tenth = np.float32(0.5), np.float32(0.1)

    def chain_floor(x):
        out = np.empty_like(x)
        for i in range(x.size):
            v = x[i]
            for _ in range(rounds):
                v = math.tanh(v * half + tenth)
            if rest >= 1:
                v = v * half
            if rest >= 2:
                v = v + tenth
            out[i] = v
        return out
    return chain_floor


def _namespaces(jf: Any, tf: Any, jax: Any) -> Dict[str, Any]:
    import types
    ns = {"jf": jf, "numpy": types.SimpleNamespace(tanh=np.tanh, reduce_sum=np.sum)}
    if tf is not None:
        ns["tf"] = tf
    if jax is not None:
        import jax.numpy as jnp
        ns["jax"] = types.SimpleNamespace(tanh=jnp.tanh, reduce_sum=jnp.sum)
    return ns


def elementwise_case(key: str, title: str, make_fn: Callable[[Any], Callable], floor: Callable,
                     inputs: List[np.ndarray], jf: Any, tf: Any, jax: Any,
                     floor_options: Optional[dict] = None) -> Case:
    ns = _namespaces(jf, tf, jax)
    runners = {
        JF_COMPILED: _jf_runner(jf, lambda tag: make_fn(jf), inputs, True),
        JF_INTERP: _jf_runner(jf, lambda tag: make_fn(jf), inputs, False),
        JF_AUTO: _jf_runner(jf, lambda tag: make_fn(jf), inputs, None),
    }
    if tf is not None:
        runners["tf.function"] = _tf_runner(tf, lambda tag: make_fn(tf), inputs)
    if jax is not None:
        runners["jax.jit"] = _jax_runner(jax, lambda tag: make_fn(ns["jax"]), inputs)
    runners[FLOOR] = _plain_runner(floor, inputs, floor_options or {})
    runners["numpy"] = _plain_runner(make_fn(ns["numpy"]), inputs)
    reference = _np_list(make_fn(ns["numpy"])(*[a.astype(np.float64) for a in inputs]))
    return Case(key, title, runners, reference)


# -- (c) the MLP train step -------------------------------------------------------------------------
@dataclass
class MLPData:
    x: np.ndarray
    y: np.ndarray
    params: List[np.ndarray]      # w1, b1, w2, b2
    lr: float = 0.1


def mlp_data(batch: int = 64, sizes: Sequence[int] = (784, 256, 10), seed: int = 0) -> MLPData:
    rng = np.random.default_rng(seed)
    d, h, c = sizes
    x = rng.normal(size=(batch, d)).astype(np.float32)
    y = rng.integers(0, c, batch).astype(np.int32)
    params = [(rng.normal(size=(d, h)) * np.sqrt(2.0 / d)).astype(np.float32), np.zeros(h, np.float32),
              (rng.normal(size=(h, c)) * np.sqrt(1.0 / h)).astype(np.float32), np.zeros(c, np.float32)]
    return MLPData(x, y, params)


def mlp_numpy_step(x, y, w1, b1, w2, b2, lr):
    """Forward, backward and an SGD update, by hand (numpy; also compiled by numba as the floor)."""
    pre = x @ w1 + b1
    h = np.maximum(pre, np.float32(0))
    logits = h @ w2 + b2
    n, k = logits.shape
    p = np.empty_like(logits)
    loss = 0.0
    for i in range(n):
        m = logits[i].max()
        e = np.exp(logits[i] - m)
        s = e.sum()
        p[i] = e / s
        loss += np.log(s) + m - logits[i, y[i]]
        p[i, y[i]] -= 1
    g_logits = p / np.float32(n)
    g_h = (g_logits @ w2.T) * (pre > 0)
    w2 -= lr * (h.T @ g_logits)
    b2 -= lr * g_logits.sum(axis=0)
    w1 -= lr * (x.T @ g_h)
    b1 -= lr * g_h.sum(axis=0)
    return np.float32(loss / n)


def _mlp_plain_runner(data: MLPData, njit_options: Optional[dict]) -> Runner:
    params: List[np.ndarray] = []
    lr = np.float32(data.lr)

    def make(tag: str) -> Callable[[], Any]:
        params[:] = [p.copy() for p in data.params]
        f = mlp_numpy_step
        if njit_options is not None:
            import numba
            f = numba.njit(**njit_options)(C.fresh_function(mlp_numpy_step, tag))
        return lambda: f(data.x, data.y, *params, lr)
    return Runner(make, lambda out: _np_list(out), lambda: [p.copy() for p in params])


def _mlp_train_step(m: Any, data: MLPData, optimizer: Optional[Any], model: Dict[str, Any]) -> Callable:
    """The train step in namespace `m` (jf or tf: the same API), with fresh variables in
    `model["vars"]`; without an optimizer, plain `assign_sub` updates."""
    variables = model["vars"] = [m.Variable(p.copy()) for p in data.params]

    def train_step(x, y):
        w1, b1, w2, b2 = variables
        with m.GradientTape() as tape:
            h = m.nn.relu(m.matmul(x, w1) + b1)
            logits = m.matmul(h, w2) + b2
            loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, variables)
        if optimizer is not None:
            optimizer.apply_gradients(zip(grads, variables))
        else:
            for v, g in zip(variables, grads):
                v.assign_sub(data.lr * g)
        return loss
    return train_step


def _mlp_jf_runner(jf: Any, data: MLPData, jit: Optional[bool]) -> Runner:
    model: Dict[str, Any] = {}

    def build(tag: str) -> Callable:
        return _mlp_train_step(jf, data, jf.optimizers.SGD(data.lr), model)
    return _jf_runner(jf, build, [data.x, data.y], jit, lambda: [v.numpy() for v in model["vars"]])


def _mlp_tf_runner(tf: Any, data: MLPData) -> Runner:
    model: Dict[str, Any] = {}

    def build(tag: str) -> Callable:
        try:
            optimizer = tf.keras.optimizers.SGD(data.lr)
        except Exception:  # keras missing: plain updates
            optimizer = None
        return _mlp_train_step(tf, data, optimizer, model)
    return _tf_runner(tf, build, [data.x, data.y], lambda: [v.numpy() for v in model["vars"]])


def _mlp_jax_runner(jax: Any, data: MLPData) -> Runner:
    import jax.numpy as jnp
    box: Dict[str, Any] = {}
    x, y = jax.device_put(data.x), jax.device_put(data.y)

    def loss_fn(params, x, y):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def make(tag: str) -> Callable[[], Any]:
        box["params"] = [jax.device_put(p.copy()) for p in data.params]

        def train_step(params, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            return loss, [p - data.lr * g for p, g in zip(params, grads)]
        step = jax.jit(C.fresh_function(train_step, tag))

        def call():
            loss, box["params"] = step(box["params"], x, y)
            return jax.block_until_ready(loss)
        return call
    return Runner(make, lambda out: _np_list(out), lambda: [np.asarray(p) for p in box["params"]])


def mlp_case(jf: Any, tf: Any, jax: Any) -> Case:
    data = mlp_data()
    runners = {JF_COMPILED: _mlp_jf_runner(jf, data, True), JF_INTERP: _mlp_jf_runner(jf, data, False),
               JF_AUTO: _mlp_jf_runner(jf, data, None)}
    if tf is not None:
        runners["tf.function"] = _mlp_tf_runner(tf, data)
    if jax is not None:
        runners["jax.jit"] = _mlp_jax_runner(jax, data)
    runners[FLOOR] = _mlp_plain_runner(data, {})
    runners["numpy"] = _mlp_plain_runner(data, None)
    ref_params = [p.astype(np.float64) for p in data.params]
    loss = mlp_numpy_step(data.x.astype(np.float64), data.y, *ref_params, data.lr)
    opt = "jf.optimizers.SGD" if hasattr(jf, "optimizers") else "v.assign_sub(lr * g)"
    return Case("mlp", "(c) MLP train step 784-256-10, batch 64, relu, softmax x-entropy, SGD",
                runners, [np.asarray(loss, np.float64)], rtol=1e-4, atol=1e-5,
                notes=[f"jf updates with {opt}; TF with keras SGD; JAX, numba, numpy by hand"])


# -- (d) bandwidth ----------------------------------------------------------------------------------
def big_fn(m: Any) -> Callable:
    def big(a, b, c):
        return m.tanh(a * b + c)
    return big


def big_floor(a, b, c):
    return np.tanh(a * b + c)


def big_case(jf: Any, tf: Any, jax: Any, log2n: int) -> Case:
    rng = np.random.default_rng(1)
    n = 1 << log2n
    inputs = [rng.uniform(-2, 2, n).astype(np.float32) for _ in range(3)]
    case = elementwise_case("big", f"(d) tanh(a*b+c) on 2**{log2n} float32 (GB/s: 3 arrays read, 1 written)",
                            big_fn, big_floor, inputs, jf, tf, jax)
    case.runners["numba parallel"] = _plain_runner(big_floor, inputs, {"parallel": True})
    dst = np.empty_like(inputs[0])
    case.runners["np.copyto"] = Runner(lambda tag: (lambda: np.copyto(dst, inputs[0])), lambda out: [])
    case.bytes_per_call = 4 * inputs[0].nbytes
    case.rtol, case.atol = 1e-5, 1e-6
    return case


# -- measurement ------------------------------------------------------------------------------------
@dataclass
class Options:
    repeat: int = 200
    warmup: int = 20
    min_sample_ns: int = 200_000
    big_repeat: int = 15
    big_log2: int = 24
    chain_ops: int = 150
    size: int = 10
    tensorflow: bool = True
    jax: bool = True
    keep_cache: bool = False
    second_process: bool = True
    cases: Sequence[str] = ("small", "chain", "mlp", "big")
    json_path: Optional[str] = None
    quick: bool = False


def _check(case: Case, name: str, values: List[np.ndarray]) -> Dict[str, Any]:
    if name == "np.copyto":
        return {"ok": True, "max_abs_err": None}
    if len(values) != len(case.reference) or any(v.shape != r.shape for v, r in zip(values, case.reference)):
        return {"ok": False, "max_abs_err": None}
    err = max(float(np.max(np.abs(v.astype(np.float64) - r))) if r.size else 0.0
              for v, r in zip(values, case.reference))
    ok = all(np.allclose(v, r, rtol=case.rtol, atol=case.atol) for v, r in zip(values, case.reference))
    return {"ok": bool(ok), "max_abs_err": err}


def measure_runner(case: Case, name: str, runner: Runner, opts: Options) -> Dict[str, Any]:
    call = runner.make("first")
    with C.NumbaWatch() as watch:
        try:
            first_ns, out = C.time_once(call)
        except Exception as e:  # report it in the table, keep measuring the others
            return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}", "first_call_ns": None,
                    "numba_compiled": len(watch.compiled), "numba_lock_ns": watch.lock_ns, "tier": None,
                    "first_outputs": [], "first_state": [], "ok": False, "max_abs_err": None, "steady": None}
    values = runner.result(out)
    row: Dict[str, Any] = {"first_call_ns": first_ns, "numba_compiled": len(watch.compiled),
                           "numba_lock_ns": watch.lock_ns, "tier": runner.tier(),
                           "first_outputs": values, "first_state": runner.state()}
    row.update(_check(case, name, values))
    if name in FIRST_CALL_ONLY:
        row["steady"] = None
        return row
    big = case.bytes_per_call is not None
    stats = C.time_steady(call, repeat=opts.big_repeat if big else opts.repeat,
                          warmup=2 if big else opts.warmup,
                          min_sample_ns=0 if big else opts.min_sample_ns)
    row["steady"] = stats.as_dict()
    if big:
        moved = case.bytes_per_call // 2 if name == "np.copyto" else case.bytes_per_call  # copyto: 1 read, 1 write
        row["gb_per_s"] = moved / stats.median_ns
    return row


def _identical(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    pairs = list(zip(a["first_outputs"], b["first_outputs"])) + list(zip(a["first_state"], b["first_state"]))
    return len(a["first_outputs"]) == len(b["first_outputs"]) and all(
        x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True) for x, y in pairs)


def measure_case(case: Case, opts: Options, log: Callable[[str], None]) -> Dict[str, Any]:
    rows: Dict[str, Dict[str, Any]] = {}
    for name in ORDER:
        if name not in case.runners:
            continue
        rows[name] = measure_runner(case, name, case.runners[name], opts)
        steady = rows[name]["steady"]
        log(f"  {case.key:5s} {name:15s} first {C.format_ns(rows[name]['first_call_ns']):>9s}  "
            f"steady {C.format_ns(steady['median_ns'] if steady else None):>9s}")
    identical = "error" not in rows[JF_COMPILED] and _identical(rows[JF_COMPILED], rows[JF_INTERP])
    for row in rows.values():
        row.pop("first_outputs")
        row.pop("first_state")
    return {"title": case.title, "notes": case.notes, "results": rows, "ratios": ratios(rows),
            "jf_tiers_identical": identical}


def ratios(rows: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Optional[float]]]:
    """Steady time of each row divided by the floor's, tf.function's and jax.jit's."""
    def div(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return None if a is None or b is None or not b else a / b

    def steady(name: str) -> Optional[float]:
        return rows[name]["steady"]["median_ns"] if name in rows and rows[name]["steady"] else None

    def first(name: str) -> Optional[float]:
        return rows[name]["first_call_ns"] if name in rows else None
    return {name: {"vs_floor": div(steady(name), steady(FLOOR)),
                   "vs_tf": div(steady(name), steady("tf.function")),
                   "vs_jax": div(steady(name), steady("jax.jit")),
                   "vs_interpreter": div(steady(name), steady(JF_INTERP)),
                   "first_vs_tf": div(first(name), first("tf.function"))} for name in rows}


# -- a cached second process ------------------------------------------------------------------------
SECOND_PROCESS = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {bench_dir!r})
    t0 = time.perf_counter()
    import _common as C, numpy as np, jitflow as jf
    out = {{"import_jitflow_s": time.perf_counter() - t0}}
    from bench_compiler import small_fn, chain_fn, mlp_data, _mlp_jf_runner
    w = jf.function(lambda v: jf.reduce_sum(jf.matmul(v, v) * 3.0), jit_compile=True)
    with C.NumbaWatch() as watch:
        ns, _ = C.time_once(lambda: w(np.ones((3, 3))))
    out["startup"] = {{"first_call_ns": ns, "numba_compiled": len(watch.compiled), "numba_lock_ns": watch.lock_ns,
                      "compile_seconds": w.list_concrete_functions()[0].compile_seconds, "tier": "compiled"}}
    a = np.linspace(-1, 1, 10).astype(np.float32)
    cases = {{"small": (lambda: jf.function(small_fn(jf), jit_compile=True), [a, a, a]),
              "chain": (lambda: jf.function(chain_fn(jf, 150), jit_compile=True), [a])}}
    for key, (build, args) in cases.items():
        f = build()
        with C.NumbaWatch() as watch:
            ns, _ = C.time_once(lambda: f(*args))
        cf = f.list_concrete_functions()[-1]
        out[key] = {{"first_call_ns": ns, "numba_compiled": len(watch.compiled), "numba_lock_ns": watch.lock_ns,
                    "compile_seconds": cf.compile_seconds, "tier": cf.tier}}
    runner = _mlp_jf_runner(jf, mlp_data(), True)
    call = runner.make("p")
    with C.NumbaWatch() as watch:
        ns, _ = C.time_once(call)
    out["mlp"] = {{"first_call_ns": ns, "numba_compiled": len(watch.compiled), "numba_lock_ns": watch.lock_ns,
                  "compile_seconds": runner.compile_seconds(), "tier": runner.tier()}}
    print("JSON" + json.dumps(out))
""")


def second_process(log: Callable[[str], None]) -> Dict[str, Any]:
    """Run SECOND_PROCESS twice with one fresh JITFLOW_CACHE_DIR; return both reports."""
    script = SECOND_PROCESS.format(bench_dir=os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, JITFLOW_CACHE_DIR=tempfile.mkdtemp(prefix="jitflow-bench-cache-"))
    runs = []
    for i in range(2):
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              timeout=600)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("JSON")]
        if proc.returncode or not lines:
            runs.append({"error": (proc.stderr or proc.stdout).strip().splitlines()[-3:]})
        else:
            runs.append(json.loads(lines[-1][4:]))
        log(f"  process {i + 1}: {'error' if 'error' in runs[-1] else 'ok'}")
    shutil.rmtree(env["JITFLOW_CACHE_DIR"], ignore_errors=True)
    return {"runs": runs}


# -- report -----------------------------------------------------------------------------------------
def _r(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}x" if x < 1000 else f"{x:.0f}x"


def _numba_cell(row: Dict[str, Any]) -> str:
    if not row["numba_compiled"] and not row["numba_lock_ns"]:
        return "-"
    return f"{row['numba_compiled']}, {C.format_ns(row['numba_lock_ns'])}"


def print_case(case: Dict[str, Any], out: Any) -> None:
    print(f"\n{case['title']}", file=out)
    for note in case["notes"]:
        print(f"  note: {note}", file=out)
    big = any("gb_per_s" in r for r in case["results"].values())
    rows = []
    errors = []
    for name, row in case["results"].items():
        if "error" in row:
            errors.append(f"  {name} failed: {row['error']}")
            continue
        st, rt = row["steady"] or {}, case["ratios"][name]
        check = "ok" if row["ok"] else "MISMATCH" + (f" {row['max_abs_err']:.2g}" if row["max_abs_err"] else "")
        cells = [name + (f" [{row['tier']}]" if row["tier"] else ""), C.format_ns(row["first_call_ns"]),
                 _numba_cell(row), C.format_ns(st.get("median_ns")),
                 f"{C.format_ns(st['p10_ns'])} – {C.format_ns(st['p90_ns'])}" if st else "-"]
        if big:
            cells.append(f"{row['gb_per_s']:.2f}" if "gb_per_s" in row else "-")
        cells += [_r(rt["vs_floor"]), _r(rt["vs_tf"]), _r(rt["vs_jax"]), _r(rt["first_vs_tf"]), check]
        rows.append(cells)
    headers = ["impl", "first call", "numba 1st (n, lock)", "steady/call", "p10 – p90"]
    headers += ["GB/s"] if big else []
    headers += ["÷floor", "÷tf.function", "÷jax.jit", "1st ÷ tf 1st", "check"]
    C.print_table(headers, rows, out=out)
    for line in errors:
        print(line, file=out)
    same = "bit-identical" if case["jf_tiers_identical"] else "DIFFERENT"
    print(f"  jf compiled vs jf interpreter results: {same}", file=out)


def print_second_process(sp: Dict[str, Any], out: Any) -> None:
    print("\ncached second process (two fresh processes, one JITFLOW_CACHE_DIR, jit_compile=True; `startup` is "
          "the process's first jf.function, a float64 one no case uses):", file=out)
    rows = []
    for i, run in enumerate(sp["runs"], 1):
        if "error" in run:
            rows.append([f"process {i}", "error: " + " | ".join(run["error"]), "", "", ""])
            continue
        for key in ("startup", "small", "chain", "mlp"):
            r = run[key]
            cs = "-" if r["compile_seconds"] is None else f"{r['compile_seconds'] * 1e3:.1f} ms"
            rows.append([f"process {i} {key}", C.format_ns(r["first_call_ns"]), cs,
                         f"{r['numba_compiled']}, {C.format_ns(r['numba_lock_ns'])}", r["tier"]])
    C.print_table(["run", "first call", "compile_seconds", "numba compiled (n, lock)", "tier"], rows, out=out)


def print_report(payload: Dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    env = payload["environment"]
    print(f"\njitflow compiled-tier benchmark (python {env['python']}, numpy {env.get('numpy')}, numba "
          f"{env.get('numba')}, tensorflow {env.get('tensorflow', '-')}, jax {env.get('jax', '-')}, "
          f"{env['cpu_count']} CPUs)", file=out)
    for note in payload["notes"]:
        print(f"note: {note}", file=out)
    print("one-time start-up, paid by the first function of each framework in a process and left out of "
          "the first-call columns: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in payload["startup_s"].items()),
          file=out)
    o = payload["options"]
    print(f"steady = median of {o['repeat']} samples ({o['big_repeat']} for the bandwidth case) after warm-up, "
          "GC off; ratios divide steady times (<1 means faster)", file=out)
    for case in payload["cases"].values():
        print_case(case, out)
    print("\nratios of jf compiled (steady):", file=out)
    for key, case in payload["cases"].items():
        rt = case["ratios"].get(JF_COMPILED, {})
        print(f"  {key:5s} {_r(rt.get('vs_floor'))} numba floor, {_r(rt.get('vs_tf'))} tf.function, "
              f"{_r(rt.get('vs_jax'))} jax.jit, {_r(rt.get('vs_interpreter'))} interpreter; "
              f"first call {_r(rt.get('first_vs_tf'))} tf.function's", file=out)
    if payload.get("second_process"):
        print_second_process(payload["second_process"], out)


# -- driver -----------------------------------------------------------------------------------------
def parse_args(argv: Optional[Sequence[str]]) -> Options:
    p = argparse.ArgumentParser(prog="bench_compiler", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: few samples, 2**20 floats in case (d)")
    p.add_argument("--repeat", type=int, default=None, help="steady samples per row (default 200; 15 quick)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls (default 20; 3 quick)")
    p.add_argument("--big-log2", type=int, default=None, help="case (d) size as a power of 2 (default 24)")
    p.add_argument("--cases", default="small,chain,mlp,big", help="comma-separated subset of small,chain,mlp,big")
    p.add_argument("--no-tf", action="store_true", help="do not import TensorFlow")
    p.add_argument("--no-jax", action="store_true", help="do not import JAX")
    p.add_argument("--keep-cache", action="store_true",
                   help="use the current JITFLOW_CACHE_DIR (compiled segments may load from disk)")
    p.add_argument("--no-second-process", action="store_true", help="skip the cached-second-process check")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="also write the results as JSON")
    a = p.parse_args(argv)
    cases = tuple(c.strip() for c in a.cases.split(",") if c.strip())
    bad = set(cases) - {"small", "chain", "mlp", "big"}
    if bad:
        p.error(f"unknown case(s): {', '.join(sorted(bad))}")
    q = a.quick
    return Options(repeat=a.repeat or (15 if q else 200), warmup=a.warmup or (3 if q else 20),
                   min_sample_ns=20_000 if q else 200_000, big_repeat=3 if q else 15,
                   big_log2=a.big_log2 or (20 if q else 24), tensorflow=not a.no_tf, jax=not a.no_jax,
                   keep_cache=a.keep_cache, second_process=not a.no_second_process, cases=cases,
                   json_path=a.json_path, quick=q)


def _frameworks(opts: Options, notes: List[str]):
    tf = jax = None
    if opts.tensorflow:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        tf, reason, _ = C.import_optional("tensorflow")
        if tf is None:
            notes.append(f"TensorFlow skipped: {reason}")
    else:
        notes.append("TensorFlow skipped (--no-tf)")
    if opts.jax:
        jax, reason, _ = C.import_optional("jax")
        if jax is None:
            notes.append(f"JAX skipped: {reason}")
    else:
        notes.append("JAX skipped (--no-jax)")
    return tf, jax


def warm_up(jf: Any, tf: Any, jax: Any) -> Dict[str, float]:
    """First use of each framework in this process (numba's target set-up, scipy's BLAS,
    TF's and XLA's runtimes), on float64 functions that no case uses: one-time costs that
    would otherwise land on whichever row runs first. Seconds per framework."""
    x = np.linspace(-1, 1, 3)
    out: Dict[str, float] = {}
    f = jf.function(lambda v: jf.reduce_sum(jf.tanh(v * 2.0 + 1.0)), jit_compile=False)
    g = jf.function(lambda v: jf.reduce_sum(jf.matmul(v, v) * 3.0), jit_compile=True)
    out["jitflow"] = (C.time_once(lambda: f(x))[0] + C.time_once(lambda: g(x.reshape(3, 1) * x))[0]) / 1e9
    if tf is not None:
        h = tf.function(lambda v: tf.reduce_sum(tf.tanh(v * 2.0 + 1.0)))
        out["tensorflow"] = C.time_once(lambda: h(tf.constant(x)))[0] / 1e9
    if jax is not None:
        import jax.numpy as jnp
        k = jax.jit(lambda v: jnp.sum(jnp.tanh(v * 2.0 + 1.0)))
        out["jax"] = C.time_once(lambda: jax.block_until_ready(k(jax.device_put(x))))[0] / 1e9
    return out


def run(opts: Options, log: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    notes: List[str] = []
    fresh_cache = None
    if not opts.keep_cache:
        fresh_cache = os.environ["JITFLOW_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitflow-bench-cache-")
        notes.append("JITFLOW_CACHE_DIR is a fresh folder: jf compiled's first call compiles every segment")
    try:
        return _run(opts, notes, log)
    finally:
        if fresh_cache:
            shutil.rmtree(fresh_cache, ignore_errors=True)


def _run(opts: Options, notes: List[str], log: Callable[[str], None]) -> Dict[str, Any]:
    import jitflow as jf
    tf, jax = _frameworks(opts, notes)
    startup = warm_up(jf, tf, jax)
    rng = np.random.default_rng(0)
    a, b, c, x = (rng.uniform(-1, 1, opts.size).astype(np.float32) for _ in range(4))
    builders = {
        "small": lambda: elementwise_case("small", f"(a) reduce_sum(tanh(a*b+c)) on {opts.size} float32",
                                          small_fn, small_floor, [a, b, c], jf, tf, jax),
        "chain": lambda: elementwise_case("chain", f"(b) {opts.chain_ops}-op elementwise chain on {opts.size} "
                                          "float32", lambda m: chain_fn(m, opts.chain_ops),
                                          make_chain_floor(opts.chain_ops), [x], jf, tf, jax),
        "mlp": lambda: mlp_case(jf, tf, jax),
        "big": lambda: big_case(jf, tf, jax, opts.big_log2),
    }
    cases = {}
    for key in opts.cases:
        cases[key] = measure_case(builders[key](), opts, log)
    extra = {"jax": getattr(jax, "__version__", None)} if jax is not None else {}
    payload = {"benchmark": "compiler", "environment": C.environment(**extra),
               "options": {k: v for k, v in vars(opts).items()}, "notes": notes, "startup_s": startup,
               "cases": cases}
    if opts.second_process:
        log("second process check")
        payload["second_process"] = second_process(log)
    return payload


def main(argv: Optional[Sequence[str]] = None) -> int:
    return C.run_benchmark(parse_args(argv), run, print_report)


if __name__ == "__main__":
    sys.exit(main())
