"""Reproducibility: the same spec and seed give the same numbers whatever PyTensor's compile cache holds."""

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from bayeskern._compile import compiled_graph, exact_arithmetic, numpy_mode, untraced
from bayeskern.fit.empirical_bayes import NUMPY_MAX_N

ROOT = Path(__file__).resolve().parents[1]


def _pytensors_own_python_mode():
    """PyTensor's own Elemwise and Sum on the Python linker (FAST_RUN's rewrites without fusion): the reference the
    numpy modes' own paths are compared with, bit for bit."""
    from pytensor.compile.mode import Mode, get_mode

    return Mode(linker="py", optimizer=get_mode("FAST_RUN").provided_optimizer.excluding("fusion", "fuse_indexed_into_elemwise"))


# one empirical-Bayes fit of a small GP, run in a fresh process: the objective and its gradient at two
# fixed points (one far out, where the sums are large and cancel), then the whole fit, printed as JSON
# (Python writes floats to 17 digits: equal text is equal bits). Under PyTensor's default fastmath the
# cold and the warm process differed here in the last bits of the value and of two gradient components
_FIT = """
import importlib, json, sys, warnings
import numpy as np, pymc as pm
import bayeskern as bk
importlib.import_module("bayeskern.fit.empirical_bayes").NUMPY_MAX_N = int(sys.argv[1])  # 0: the objective on Numba
from bayeskern.likelihood import find_likelihood
from bayeskern.fit.empirical_bayes import _Objective

warnings.simplefilter("ignore")
X, y = bk.datasets.sinusoid(40, 0.2, 0)  # (more points than _spd_inverse.LEAF: the inverse is halved, its Numba code loaded warm)
f64 = np.float64
with pm.Model() as model:
    amp, ls, s = pm.HalfNormal("amp", f64(2.0)), pm.HalfNormal("ls", f64(3.0)), pm.HalfNormal("s", f64(1.0))
    bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls), s)
objective = _Objective(model, find_likelihood(model)[0], include_prior=False)
at = [objective(z) for z in (np.full(3, -1.0), np.array([-7.0, -6.0, -5.0]))]
fit = bk.fit.empirical_bayes(model, restarts=2, seed=0).to_dict()
fit.pop("seconds"), fit.pop("compile_seconds")
print(json.dumps({"at": [[f, g.tolist()] for f, g in at], "fit": fit}))
"""


def _run(code: list[str], compiledir: Path) -> subprocess.CompletedProcess:
    """A fresh Python process in the repository root with its own PyTensor compile directory."""
    env = dict(os.environ)
    flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",") if f and not f.startswith("base_compiledir")]
    env["PYTENSOR_FLAGS"] = ",".join(flags + [f"base_compiledir={compiledir}"])
    done = subprocess.run([sys.executable, *code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("engine", ["numba", "numpy"])
def test_a_cold_and_a_warm_compile_cache_give_bit_identical_eb_numbers(tmp_path, engine):
    """On Numba (the objective of a fit beyond NUMPY_MAX_N points) and in numpy (40 points, the default here)."""
    compiledir = tmp_path / "compiledir"
    numpy_max_n = "0" if engine == "numba" else str(NUMPY_MAX_N)
    cold = _run(["-c", _FIT, numpy_max_n], compiledir).stdout  # an empty compile directory: everything compiled fresh
    warm = _run(["-c", _FIT, numpy_max_n], compiledir).stdout  # the same directory: everything loaded from Numba's cache
    assert cold == warm  # bit for bit: no tolerance, the two processes run the same arithmetic
    fit = json.loads(cold)["fit"]
    assert fit["converged"] and math.isfinite(fit["log_marginal_likelihood"])
    if engine == "numba":  # the cause: every function bayeskern compiled was compiled without fastmath (the flag keys the disk cache)
        cached = [p.name for p in (compiledir / "numba").iterdir() if p.name.startswith("string.")]
        assert cached and not [name for name in cached if "_fastmath1" in name]


def test_compiled_graphs_are_built_without_fastmath():
    x = pt.vector("x")
    call = compiled_graph([x], [pt.sum(pt.exp(x) * x)])
    # the Numba dispatcher of the whole graph carries the flags it is (and its Ops are) compiled with
    assert not call.function.vm.jit_fn.targetoptions.get("fastmath")
    assert call(np.array([0.0, 1.0]))[0] == pytest.approx(np.e, rel=1e-15)


@pytest.mark.parametrize(("scope", "flag", "value"), [(exact_arithmetic, "numba__fastmath", False), (numpy_mode, "cxx", ""),
                                                     (untraced, "traceback__limit", 0)])
def test_flag_scopes_nest_overlap_across_threads_and_restore_the_flag(scope, flag, value):
    """exact_arithmetic, numpy_mode and untraced set process-wide PyTensor flags: restored only when the last scope closes."""

    def current():
        return getattr(pytensor.config, flag)

    before = current()
    with scope():
        assert current() == value
        with scope():
            assert current() == value
        assert current() == value  # the inner scope closing does not restore the flag
    assert current() == before

    inside, release, seen = threading.Barrier(2), threading.Event(), []

    def hold(wait: bool):
        with scope():
            inside.wait()
            if wait:
                release.wait()
            seen.append(current())

    first = threading.Thread(target=hold, args=(False,))
    second = threading.Thread(target=hold, args=(True,))
    first.start(), second.start()
    first.join()  # the first scope closed while the second is still open: the flag stays set
    seen.append(current())
    release.set()
    second.join()
    assert seen == [value, value, value] and current() == before


def test_the_graphs_bayeskern_builds_record_no_creation_stack_and_the_users_still_do(tmp_path, monkeypatch):
    """`untraced`: the likelihood's graph (built by gp.marginal_likelihood) and the graphs a fit builds and compiles carry
    no `tag.trace`; a variable the user creates, before or after, keeps PyTensor's (8 frames by default). The kept
    rewritten graphs go to an empty folder of this test's own, so that the fit compiles its graphs here rather than
    loading them (`_graph_cache`)."""
    import pymc as pm

    import bayeskern as bk
    from bayeskern import _graph_cache

    monkeypatch.setattr(_graph_cache, "_folder", lambda: tmp_path)

    X = np.linspace(0.0, 1.0, 12)[:, None]
    y = np.sin(6.0 * X[:, 0])
    limit = pytensor.config.traceback__limit
    with pm.Model() as model:
        ell = pm.HalfNormal("ell", 1.0)
        obs = bk.gp.marginal_likelihood("y", X, y, bk.kernels.RBF(ell), sigma=0.1)
    K, noise_var = obs.owner.inputs[1:3]  # the kernel's lower triangle and σ², inputs of the observed variable
    assert K.owner is not None and K.tag.trace == [] and K.owner.inputs[0].tag.trace == [] and noise_var.tag.trace == []
    assert ell.tag.trace != []  # the user's own variable, created by PyMC in the user's code
    seen = []
    original = pytensor.function

    def spy(*args, **kwargs):  # every function the fit compiles: are its graph's variables traced?
        fn = original(*args, **kwargs)
        # the variables it computes (its inputs may be the model's own value variables, created in the user's code)
        seen.extend(bool(v.tag.trace) for node in fn.maker.fgraph.apply_nodes for v in node.outputs if hasattr(v.tag, "trace"))
        return fn

    pytensor.function = spy
    try:
        bk.fit.empirical_bayes(model, restarts=2, seed=0)
    finally:
        pytensor.function = original
    assert seen and not any(seen)
    assert pytensor.config.traceback__limit == limit and pt.vector("after").tag.trace != []

def _numbers_apart(a, b, path="") -> list[str]:
    """Paths where two summary.json values differ: numbers beyond 1e-9 relative, anything else at all."""
    if isinstance(a, dict) and isinstance(b, dict):
        skip = {"seconds", "compile_seconds", "cheaper"}  # wall times, and the kernel-trick audit's faster side, read off them
        keys = (set(a) | set(b)) - skip
        return [d for k in sorted(keys) for d in _numbers_apart(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _numbers_apart(x, y, f"{path}[{i}]")]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    if numbers:
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


SHIPPED_SPECS = sorted(p.name for p in (ROOT / "models").glob("*.toml"))


@pytest.mark.slow
@pytest.mark.parametrize("spec", SHIPPED_SPECS)
def test_a_whole_run_gives_the_same_summary_on_a_cold_and_a_warm_cache(tmp_path, spec):
    compiledir, summaries = tmp_path / "compiledir", []
    for phase in ("cold", "warm"):
        out = tmp_path / phase
        _run(["-m", "bayeskern.cli", "run", f"models/{spec}", "--out", str(out)], compiledir)
        summaries.append(json.loads((out / "summary.json").read_text()))
    # the bar: every number within 1e-9 relative (they are in fact bit-identical)
    assert _numbers_apart(*summaries) == []


def test_the_numpy_mode_clips_by_ufuncs_with_the_same_numbers():
    """PyTensor's Clip loops per element in Python; the NUMPY mode rewrites it (constant lo ≤ hi) to maximum (hi = ∞) or
    numpy's clip, and the mask of its gradient at ± the largest float, (x ≥ −max) ∧ (x ≤ max), to isfinite(x)."""
    from pytensor.scalar.basic import AND, GE, LE, Clip, Maximum, Minimum

    from bayeskern._compile import NUMPY

    x = pt.vector("x")
    largest = np.finfo(np.float64).max
    clipped = [pt.clip(x, 0.0, np.inf), pt.clip(x, -1.0, 2.0), pt.clip(x, -largest, largest)]
    gradient = pytensor.grad(pt.sum(clipped[2] * pt.arange(9.0)), x)  # the clip's mask times 0, 1, …, 8
    with numpy_mode():
        f = pytensor.function([x], [*clipped, gradient], mode=NUMPY)
    ops = [type(n.op.scalar_op) for n in f.maker.fgraph.apply_nodes if hasattr(n.op, "scalar_op")]
    assert not [op for op in ops if op in (Clip, Maximum, Minimum) or issubclass(op, GE | LE | AND)][1:]  # one maximum left
    values = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, 7.0, np.inf, -np.inf, np.nan])
    *got, got_gradient = f(values)
    for g, lo, hi in zip(got, (0.0, -1.0, -largest), (np.inf, 2.0, largest), strict=True):
        np.testing.assert_array_equal(g, np.clip(values, lo, hi))  # NaN stays NaN, bit for bit otherwise
    np.testing.assert_array_equal(got_gradient, np.where((values >= -largest) & (values <= largest), np.arange(9.0), 0.0))

def test_a_hoisted_objective_keeps_what_depends_on_constants_alone_and_folds_it():
    """`compiled_graph(hoist=True)` passes the data-only values to the rest; a value computed from constants alone is
    not one of them: it stays in the rest, where rewriting folds it into a constant (here the bounds of a clip, which
    the numpy mode then evaluates with numpy's ufuncs rather than PyTensor's per-element Python loop)."""
    from pytensor.scalar.basic import Clip

    from bayeskern._compile import NUMPY

    x = pt.scalar("x")
    d = pytensor.shared(np.linspace(-2.0, 2.0, 7), name="d")
    lo, hi = pt.expand_dims(-pt.exp(pt.constant(0.0)), 0), pt.expand_dims(pt.exp(pt.constant(0.0)), 0)  # [-1], [1], unfolded
    call = compiled_graph([x], [pt.sum(pt.clip(x * pt.square(d), lo, hi))], hoist=True, mode=NUMPY)
    assert call(0.7)[0] == pytest.approx(np.sum(np.clip(0.7 * np.linspace(-2.0, 2.0, 7) ** 2, -1.0, 1.0)), rel=1e-15)
    main = call.function.maker.fgraph
    assert len(main.inputs) == 3  # x, the data's square (the one data-only value read) and the data themselves
    assert not [n for n in main.apply_nodes if type(getattr(n.op, "scalar_op", None)) is Clip]  # PyTensor's, element by element

def test_the_numpy_mode_writes_each_elementwise_result_into_one_array_with_the_same_numbers():
    """The NUMPY mode's Elemwise writes into the input the in-place rewrite let it destroy, else one new array, and folds
    a variadic Mul or Add into it (`_IntoOneArray`): the same numbers, bit for bit, as PyTensor's own Elemwise on the
    Python linker (the mode without that rewrite), value and gradient; the function's inputs are left as they were."""
    from bayeskern._compile import NUMPY, ONE_ARRAY_MIN_SIZE, _IntoOneArray

    x, y, a = pt.vector("x"), pt.vector("y"), pt.scalar("a")
    u = pt.exp(-0.5 * (x - y) ** 2 / a)  # in-place chains on intermediates, a broadcast scalar
    out = pt.sum(u * x * y * pt.sin(x) * a) + pt.sum(u + x + pt.cos(y) + a)  # five-operand Mul, four-operand Add
    outputs = [out, *pt.grad(out, [x, y, a])]
    # the NUMPY mode without `_elemwise_into_one_array` (its other rewrites find no Clip, OpFromGraph or HalfNormal here)
    plain = _pytensors_own_python_mode()
    with numpy_mode():
        into_one, elementwise = (pytensor.function([x, y, a], outputs, mode=m) for m in (NUMPY, plain))
    ops = [n.op for n in into_one.maker.fgraph.apply_nodes]
    assert sum(isinstance(op, _IntoOneArray) for op in ops) >= 10 and any(op.destroy_map for op in ops if isinstance(op, _IntoOneArray))
    assert any(len(n.inputs) > 2 for n in into_one.maker.fgraph.apply_nodes if isinstance(n.op, _IntoOneArray))
    assert not [n for n in elementwise.maker.fgraph.apply_nodes if isinstance(n.op, _IntoOneArray)]
    rng = np.random.default_rng(0)
    for size in (1000, ONE_ARRAY_MIN_SIZE + 1):  # new memory (`_small`) below ONE_ARRAY_MIN_SIZE entries, into one array above
        xv, yv = rng.standard_normal(size), rng.standard_normal(size)
        kept = xv.copy(), yv.copy()
        for got, want in zip(into_one(xv, yv, 0.7), elementwise(xv, yv, 0.7), strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(xv, kept[0])
        np.testing.assert_array_equal(yv, kept[1])
    # a matrix in Fortran order with a broadcast row; and booleans, whose % numpy computes in int8 (left to Elemwise)
    A, r = pt.matrix("A"), pt.vector("r")
    B = pt.exp(-A) * A * r + A * 2.0
    u, v = pt.vector("u", dtype="bool"), pt.vector("v", dtype="bool")
    with numpy_mode():
        pair = [pytensor.function([A, r, u, v], [B, pt.grad(pt.sum(B), A), u % v], mode=m) for m in (NUMPY, plain)]
    Av, rv = np.asfortranarray(rng.standard_normal((600, 600))), rng.standard_normal(600)
    uv, vv = rng.random(ONE_ARRAY_MIN_SIZE + 1) < 0.5, np.ones(ONE_ARRAY_MIN_SIZE + 1, dtype=bool)
    for got, want in zip(pair[0](Av, rv, uv, vv), pair[1](Av, rv, uv, vv), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_the_numpy_modes_one_entry_nodes_skip_perform_with_the_same_numbers(monkeypatch):
    """Where every operand and the result of an `_IntoOneArray` node hold one entry by their types (shape () or (1,)),
    its thunk calls the ufunc without `perform`: with `perform` made to fail, a graph of such nodes (unary, binary,
    a variadic Mul and Add, a bool mask, an overflow to inf, a signed zero) still runs, bit for bit PyTensor's own
    Elemwise on the Python linker, and raises no warning; a node over a vector still goes through `perform`."""
    import warnings

    from bayeskern._compile import NUMPY, _IntoOneArray

    a, b, c = pt.scalar("a"), pt.scalar("b"), pt.vector("c", shape=(1,))
    mask = pt.lt(a, b)
    outs = [pt.exp(a) * b * -a, a + b + pt.exp(-b) + 1.5, mask * a * b * 3.0, pt.exp(1000.0 * a), -(a * 0.0), pt.sqr(c) * c * a]
    outputs = [*outs, *pt.grad(sum(pt.sum(o) for o in outs[:2]), [a, b])]
    plain = _pytensors_own_python_mode()
    with numpy_mode():
        lean, elementwise = (pytensor.function([a, b, c], outputs, mode=m) for m in (NUMPY, plain))
    nodes = [n for n in lean.maker.fgraph.apply_nodes if isinstance(n.op, _IntoOneArray)]
    assert len(nodes) >= 8 and any(len(n.inputs) > 2 for n in nodes) and any(n.inputs[0].type.ndim for n in nodes)

    def fails(*args):
        raise AssertionError("perform called")

    monkeypatch.setattr(_IntoOneArray, "perform", fails)
    with numpy_mode():  # compiled again with perform failing: the thunks are made after the patch
        lean = pytensor.function([a, b, c], outputs, mode=NUMPY)
    for values in [(0.7, -1.3, [2.0]), (1.2, 0.4, [-0.5]), (-0.0, 0.0, [0.0])]:  # (e^1200 overflows: inf, silently)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = lean(*values)
        want = elementwise(*values)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
            assert np.array_equal(np.signbit(g), np.signbit(w))
        assert np.isinf(got[3]) == (values[0] == 1.2)
    x = pt.vector("x")
    with numpy_mode():
        over_a_vector = pytensor.function([x], pt.exp(x) * x, mode=NUMPY)
    with pytest.raises(AssertionError, match="perform called"):
        over_a_vector(np.ones(3))


@pytest.mark.parametrize("size", [3, 300_000])
def test_the_numpy_mode_refuses_runtime_broadcasting_as_pytensor_does(size):
    """`_IntoOneArray` asks Elemwise's runtime-broadcast check only where it can fail: a length 1 in a dimension not
    marked broadcastable beside a longer one is still refused (small operands and large, matrices too), while operands
    of one shape, or beside a scalar broadcast by its type, run as before."""
    from bayeskern._compile import NUMPY, _IntoOneArray

    x, y, a = pt.vector("x"), pt.vector("y"), pt.scalar("a")
    A, B = pt.matrix("A"), pt.matrix("B")
    with numpy_mode():
        f = pytensor.function([x, y, a], [x * y * a, pt.exp(x) + y], mode=NUMPY)
        g = pytensor.function([A, B], A * B, mode=NUMPY)
    assert all(isinstance(v.owner.op, _IntoOneArray) for v in [*f.maker.fgraph.outputs, *g.maker.fgraph.outputs])
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(size), rng.standard_normal(size)
    np.testing.assert_array_equal(f(u, v, 2.0)[0], u * v * 2.0)
    for args in [(u[:1], v, 2.0), (u, v[:1], 2.0)]:
        with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
            f(*args)
    M = rng.standard_normal((4, size))
    np.testing.assert_array_equal(g(M, M), M * M)
    with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
        g(M[:1], M)


@pytest.mark.parametrize("layout", ["scattered", "in runs"])
@pytest.mark.parametrize("share_below", [0.0, 0.2, 0.5, 0.9, 1.0])
def test_the_numpy_modes_exp_is_numpys_to_the_bit_whatever_share_of_it_underflows(share_below, layout):
    """`_exp` leaves out the arguments below EXP_ZERO_BELOW (whose exp is exactly 0) where they are more than
    EXP_SKIP_FROM = 30 % of an array: by a masked exp where they lie in runs (the pairs of sorted points), else by
    replacing them and zeroing their results. np.exp to the bit on each path, in place or not, with NaN, ±inf, the
    subnormal band and the edge values among them; and the numpy mode's Exp over a large array, with its gradient, is
    PyTensor's own."""
    from bayeskern._compile import EXP_ZERO_BELOW, NUMPY, ONE_ARRAY_MIN_SIZE, _exp, _exp_zeros, _in_runs

    rng = np.random.default_rng(7)
    size = ONE_ARRAY_MIN_SIZE + 1
    below = rng.random(size) < share_below if layout == "scattered" else np.arange(size) % 5000 < share_below * 5000
    x = np.where(below, rng.uniform(-1e5, EXP_ZERO_BELOW, size), rng.uniform(-800.0, 700.0, size))
    x[:8] = [np.nan, -np.inf, np.inf, -745.13, -745.14, EXP_ZERO_BELOW, -708.5, 709.7]
    zero = _exp_zeros(x)
    assert (zero is None) == (share_below <= 0.3)
    assert zero is None or _in_runs(zero) == (layout == "in runs" or share_below == 1.0)
    want = np.exp(x)
    out = np.full(size, 3.0)
    _exp(x, out)
    np.testing.assert_array_equal(out, want)
    in_place = x.copy()
    _exp(in_place, in_place)
    np.testing.assert_array_equal(in_place, want)
    _exp(x[::2], out[: (size + 1) // 2])  # not contiguous: numpy's own exp
    np.testing.assert_array_equal(out[: (size + 1) // 2], want[::2])
    v = pt.vector("v")
    outputs = [pt.exp(v * 0.5) * v, pt.grad(pt.sum(pt.exp(v * 0.5) * v), v)]
    plain = _pytensors_own_python_mode()
    with numpy_mode():
        ours, theirs = (pytensor.function([v], outputs, mode=m) for m in (NUMPY, plain))
    for got, expected in zip(ours(2 * x), theirs(2 * x), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_the_numpy_mode_sums_in_place_and_folds_masked_products_into_one_array_with_the_same_numbers():
    """Two more of the NUMPY mode's numpy paths, bit for bit PyTensor's own Elemwise and Sum on the Python linker: a
    product with a 0/1 mask among its operands (bool × float computes in float, as Elemwise's left fold does) goes into
    one array (`_IntoOneArray`), and a Sum reduces its input where it lies instead of a copy (`_SumInPlace`), for a
    C-contiguous input; a strided slice and a Fortran-ordered matrix go through Sum's own `perform`."""
    from bayeskern._compile import NUMPY, ONE_ARRAY_MIN_SIZE, _IntoOneArray, _SumInPlace

    x, y, A = pt.vector("x"), pt.vector("y"), pt.matrix("A")
    masked = (x > 0) * x * y * pt.sin(y)  # a bool operand in a four-operand Mul
    outputs = [pt.sum(masked), pt.sum(x[::3] * y[::3]), pt.sum(pt.exp(A), axis=0), pt.sum(A * 0.5), *pt.grad(pt.sum(masked), [x, y])]
    plain = _pytensors_own_python_mode()
    with numpy_mode():
        ours, theirs = (pytensor.function([x, y, A], outputs, mode=m) for m in (NUMPY, plain))
    nodes = ours.maker.fgraph.apply_nodes
    assert any(isinstance(n.op, _IntoOneArray) and any(v.type.dtype == "bool" for v in n.inputs) for n in nodes)
    assert sum(isinstance(n.op, _SumInPlace) for n in nodes) >= 3
    assert not [n for n in theirs.maker.fgraph.apply_nodes if isinstance(n.op, _SumInPlace)]
    rng = np.random.default_rng(1)
    xv, yv = rng.standard_normal(ONE_ARRAY_MIN_SIZE + 1), rng.standard_normal(ONE_ARRAY_MIN_SIZE + 1)
    Av = np.asfortranarray(rng.standard_normal((300, 400)))
    for got, want in zip(ours(xv, yv, Av), theirs(xv, yv, Av), strict=True):
        np.testing.assert_array_equal(got, want)


def test_inside_reused_arrays_a_result_is_written_into_an_array_only_once_nothing_holds_it():
    """`reused_arrays`: the numpy mode's large elementwise results go into arrays kept from earlier calls that nothing
    else holds any more: the same numbers, bit for bit; a result a caller still holds is never written over; the arrays
    kept do not grow from one call to the next; the block lets them go at its end."""
    from bayeskern._compile import NUMPY
    from bayeskern._reused_arrays import REUSE_MIN_SIZE, reused_arrays

    x, a = pt.vector("x"), pt.scalar("a")
    u = pt.exp(-0.5 * x**2 / a)
    outputs = [u * x + a, pt.sum(u * pt.sin(x) * a)]  # a large result returned to the caller, and a reduction
    with numpy_mode():
        f = pytensor.function([x, a], outputs, mode=NUMPY)
    xv = np.random.default_rng(0).standard_normal(REUSE_MIN_SIZE + 1)
    want = [f(xv, a) for a in (0.7, 1.3, 2.1)]  # outside the block: new arrays
    with reused_arrays():
        first = f(xv, 0.7)
        kept = sum(len(v) for v in reused_arrays.arrays.values())
        assert kept >= 1
        second, third = f(xv, 1.3), f(xv, 2.1)
        assert sum(len(v) for v in reused_arrays.arrays.values()) <= kept + 2  # the results held here, not a copy per call
        for got, expected in zip((first, second, third), want, strict=True):
            for g, w in zip(got, expected, strict=True):
                np.testing.assert_array_equal(g, w)  # first and second still hold their own numbers
        assert not np.shares_memory(first[0], second[0]) and not np.shares_memory(second[0], third[0])
    assert reused_arrays.arrays == {} and reused_arrays.nbytes == 0


@pytest.mark.parametrize("loc, scale, size, dtype", [
    (0.0, 2.0, None, "float64"), (np.array([0.0, 1.0]), np.array([[1.0], [2.0], [3.0]]), None, "float64"),
    (0.5, np.array([1.0, 4.0]), (5, 2), "float64"), (0.5, np.array([1.0, 4.0]), (50, 2), "float32")])
def test_the_numpy_mode_draws_halfnormals_as_scipy_does_without_scipy_stats(loc, scale, size, dtype):
    """HalfNormal draws on the NUMPY mode are μ + σ·|standard_normal| from numpy's Generator: bit for bit
    `scipy.stats.halfnorm.rvs` from the same generator (its definition, μ + σ·|standard_normal| in float64, then the
    RV's dtype), and the next draw too."""
    import scipy.stats
    from pytensor.compile.builders import OpFromGraph
    from pytensor.tensor.random.basic import HalfNormalRV

    from bayeskern._compile import NUMPY

    rng = pytensor.shared(np.random.default_rng(0))
    next_rng, draw = pt.random.halfnormal(loc, scale, size=size, rng=rng, dtype=dtype, return_next_rng=True)
    with numpy_mode():
        f = pytensor.function([], draw, mode=NUMPY, updates={rng: next_rng})
    ops = [n.op for n in f.maker.fgraph.apply_nodes]
    ops += [m.op for op in ops if isinstance(op, OpFromGraph) for m in op.fgraph.apply_nodes]  # a draw wrapped with its core shape
    assert ops and not [op for op in ops if type(op) is HalfNormalRV]  # PyTensor's own, which draws by scipy.stats
    reference = np.random.default_rng(0)
    for _ in range(3):
        got, want = f(), scipy.stats.halfnorm.rvs(loc, scale, size=size, random_state=reference).astype(dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_draws_in_numpy_are_the_numba_backends():
    """`_compile.draw` (the numpy mode) gives PyMC's default `pm.draw` (Numba) numbers for the same seed, bit for bit
    under exact arithmetic: SciPy's samplers behind PyTensor's own Cauchy (so PyMC's HalfCauchy), Bernoulli and Gumbel
    draw other numbers from the same generator, which `_draws_as_numba` replaces; and no SciPy sampler is left."""
    import pymc as pm
    from pytensor.tensor.random.basic import ScipyRandomVariable

    from bayeskern._compile import NUMPY, draw

    with pm.Model():
        rvs = [pm.Cauchy("c", 1.0, 2.0), pm.HalfCauchy("hc", 1.5), pm.Cauchy("cv", np.array([0.0, 1.0]), 1.0, shape=(3, 2)),
               pm.Bernoulli("b", 0.3), pm.Bernoulli("bv", np.array([0.1, 0.5, 0.9]), shape=3), pm.Gumbel("g", 0.5, 2.0, shape=4),
               pm.HalfNormal("h", 2.0), pm.Gamma("ga", 2.0, 0.5), pm.InverseGamma("ig", 2.0, 1.0)]
    with exact_arithmetic():
        numba = pm.draw(rvs, draws=200, random_seed=3)
    for rv, got, want in zip(rvs, draw(rvs, draws=200, random_seed=3), numba, strict=True):
        assert got.dtype == want.dtype, rv.name
        np.testing.assert_array_equal(got, want, err_msg=rv.name)
    f = pm.pytensorf.compile([], rvs, mode=NUMPY, random_seed=0)
    scipy_draws = [n.op for n in f.maker.fgraph.apply_nodes if isinstance(n.op, ScipyRandomVariable) and type(n.op).__module__.startswith("pytensor")]
    assert not scipy_draws  # (bayeskern's replacements subclass PyTensor's Ops: hence the module test)


def test_the_numpy_mode_runs_no_fused_loop():
    """A fused elemwise loop (Composite, or PyTensor 3.3.8's FusedElemwise/scalarized OpFromGraphs for Numba) runs per
    element in Python on the Python linker: a numpy-mode EB fit at n = 500 took 24 s instead of 1 s with them."""
    import pymc as pm
    from pytensor.compile.builders import OpFromGraph
    from pytensor.scalar.basic import Composite

    import bayeskern as bk
    from bayeskern.fit.empirical_bayes import _Objective
    from bayeskern.likelihood import find_likelihood

    X, y = bk.datasets.sinusoid(30, 0.2, 1)
    with pm.Model() as model:
        amp, ls, s = pm.HalfNormal("amp", 2.0), pm.HalfNormal("ls", 3.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls) + bk.kernels.Linear(), s)
    objective = _Objective(model, find_likelihood(model)[0], include_prior=False)
    objective(objective.flat(objective.point))
    graph = objective._value_and_grad.function.maker.fgraph
    fused = [n for n in graph.apply_nodes if isinstance(n.op, OpFromGraph) or isinstance(getattr(n.op, "scalar_op", None), Composite)]
    assert len(graph.apply_nodes) > 20 and fused == []


def test_empirical_bayes_in_numpy_and_on_numba_reaches_the_same_optimum(monkeypatch):
    """The objective's two engines (numpy up to NUMPY_MAX_N points, Numba beyond) find the same maximum."""
    import pymc as pm

    import bayeskern as bk
    from bayeskern.fit.empirical_bayes import empirical_bayes

    module = sys.modules["bayeskern.fit.empirical_bayes"]
    X, y = bk.datasets.sinusoid(60, 0.2, 1)

    def fit():
        with pm.Model() as model:
            amp, ls, s = pm.HalfNormal("amp", 2.0), pm.HalfNormal("ls", 3.0), pm.HalfNormal("s", 1.0)
            bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls), s)
        return empirical_bayes(model, restarts=2, seed=0)

    in_numpy = fit()
    monkeypatch.setattr(module, "NUMPY_MAX_N", 0)
    on_numba = fit()
    # the same function to round-off: both stop within ~1e-10 of the maximum; 1e-8 in the LML, 1e-4 in θ
    assert in_numpy.converged and on_numba.converged
    assert abs(in_numpy.log_marginal_likelihood - on_numba.log_marginal_likelihood) < 1e-8
    for name in ("amp", "ls", "s"):
        np.testing.assert_allclose(in_numpy.params[name], on_numba.params[name], rtol=1e-4)
