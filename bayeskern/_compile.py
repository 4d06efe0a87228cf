"""Compile a PyTensor graph once per structure and reuse it: the one path from symbols to numbers."""

import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.io import In
from pytensor.compile.maker import FunctionMaker
from pytensor.compile.mode import Mode, get_mode
from pytensor.compile.rewriting import inline_ofg_node
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, equal_computations
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import graph_replace
from pytensor.graph.rewriting.basic import MergeOptimizer, in2out, node_rewriter
from pytensor.graph.traversal import graph_inputs, io_toposort
from pytensor.link.numba.linker import NumbaLinker
from pytensor.scalar.basic import AND, GE, LE, Add, Clip, FixedLogicalComparison, Mul, upcast_out_no_complex
from pytensor.tensor.basic import Alloc, AllocEmpty
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum
from pytensor.tensor.random.basic import BernoulliRV, CauchyRV, GumbelRV, HalfNormalRV

from bayeskern import _graph_cache
from bayeskern._distinct_pairs import with_distinct_pairs
from bayeskern._fills import fill_from_one_element
from bayeskern._reused_arrays import REUSE_MIN_SIZE, SharedScope, reused_arrays
from bayeskern._squared_ratios import with_squared_ratios
from bayeskern._summed_products import SummedProducts

__all__ = ["NUMBA_NOGIL", "NUMPY", "NUMPY_OBJECTIVE", "compiled", "compiled_graph", "data_stand_ins", "draw", "exact_arithmetic", "linked", "numpy_function", "numpy_mode",
           "on_data_inputs", "same_structure", "split_off_data", "untraced"]


class _OrderedClip(Clip):
    """clip(x, lo, hi) for lo ≤ hi, computed by numpy's `clip` ufunc in one pass (NaN stays NaN, as in Clip)."""

    nfunc_spec = ("clip", 3, 1)


class _IsFinite(FixedLogicalComparison):
    """x is neither ±∞ nor NaN: numpy's `isfinite`, one pass."""

    nfunc_spec = ("isfinite", 1, 1)

    def impl(self, x):
        return np.isfinite(x)


_ORDERED_CLIP, _IS_FINITE = _OrderedClip(upcast_out_no_complex, name="clip"), _IsFinite()


@node_rewriter([Elemwise])
def _clip_by_ufuncs(fgraph, node):
    """clip(x, lo, hi) with constant lo ≤ hi by numpy's ufuncs: maximum(x, lo) where hi = +∞, else numpy's clip (one pass,
    not maximum then minimum): the same numbers, NaN included.

    PyTensor's Clip has no numpy ufunc (numpy's clip differs where lo > hi), so its `perform` loops over
    the elements in Python: ~50 ms for the n × n squared distances PyMC's stationary kernels clip at 0.
    """
    scalar_op = node.op.scalar_op
    if not isinstance(scalar_op, Clip) or isinstance(scalar_op, _OrderedClip):
        return None
    x, lo, hi = node.inputs
    if not (isinstance(lo, Constant) and isinstance(hi, Constant) and np.all(lo.data <= hi.data)):
        return None
    out = pt.maximum(x, lo) if np.all(hi.data == np.inf) else Elemwise(_ORDERED_CLIP)(x, lo, hi)
    return [out.astype(node.outputs[0].dtype)]


@node_rewriter([Elemwise])
def _clip_mask_as_isfinite(fgraph, node):
    """(x ≥ −max) ∧ (x ≤ max), max the largest float of x's dtype (the gradient's mask of a clip at ± max, which each
    column of a stationary kernel's squared distance carries), as isfinite(x): one pass over the pairs, not three."""
    if not isinstance(node.op.scalar_op, AND) or len(node.inputs) != 2:
        return None
    tests = {}
    for v in node.inputs:
        if v.owner is None or not isinstance(v.owner.op, Elemwise) or not isinstance(v.owner.op.scalar_op, GE | LE):
            return None
        x, bound = v.owner.inputs
        if not (isinstance(bound, Constant) and x.type.dtype in ("float32", "float64")):
            return None
        largest = np.finfo(x.type.dtype).max
        wanted = -largest if isinstance(v.owner.op.scalar_op, GE) else largest
        if not np.all(bound.data == wanted):
            return None
        tests[type(v.owner.op.scalar_op)] = x
    if set(tests) != {GE, LE} or tests[GE] is not tests[LE]:
        return None
    return [Elemwise(_IS_FINITE)(tests[GE])]


def _draw_shape(size, *params) -> tuple:
    """The shape of a draw: `size`, else the parameters' broadcast shape (RandomVariable's rule without batch dims)."""
    return tuple(size) if size is not None else np.broadcast_shapes(*(np.shape(p) for p in params))


class _HalfNormalAsNumba(HalfNormalRV):
    """μ + σ·|standard_normal| from numpy's Generator, as PyTensor's Numba backend draws, and SciPy's `halfnorm.rvs`
    does too (in float64, cast once); but SciPy's import of scipy.stats on first use cost ~0.3 s, the largest part of
    drawing a fit's prior starts. For σ > 0, the support PyMC's HalfNormal allows (SciPy raises for σ < 0)."""

    @classmethod
    def rng_fn(cls, rng, loc, scale, size):
        return loc + scale * np.abs(rng.standard_normal(_draw_shape(size, loc, scale)))


class _CauchyAsNumba(CauchyRV):
    """μ + σ·standard_cauchy from numpy's Generator, as PyTensor's Numba backend draws (its `scipy.stats.cauchy.rvs`
    draws other numbers from the same generator, and imports scipy.stats)."""

    @classmethod
    def rng_fn(cls, rng, loc, scale, size):
        return loc + scale * rng.standard_cauchy(_draw_shape(size, loc, scale))


class _BernoulliAsNumba(BernoulliRV):
    """0 where p < a uniform draw, else 1, as PyTensor's Numba backend draws (SciPy's `bernoulli.rvs`: other numbers)."""

    @classmethod
    def rng_fn(cls, rng, p, size):
        return np.where(p < rng.random(_draw_shape(size, p)), 0, 1)


class _GumbelAsNumba(GumbelRV):
    """numpy's Gumbel, μ − σ·log(−log(1 − U)), as PyTensor's Numba backend draws (SciPy's `gumbel_r.rvs`: other numbers)."""

    @classmethod
    def rng_fn(cls, rng, loc, scale, size):
        return rng.gumbel(loc, scale, _draw_shape(size, loc, scale))


_AS_NUMBA = {HalfNormalRV: _HalfNormalAsNumba, CauchyRV: _CauchyAsNumba, BernoulliRV: _BernoulliAsNumba, GumbelRV: _GumbelAsNumba}


@node_rewriter(list(_AS_NUMBA))
def _draws_as_numba(fgraph, node):
    """A draw PyTensor's `perform` makes with SciPy — HalfNormal, Cauchy (and so PyMC's HalfCauchy, its |·|), Bernoulli,
    Gumbel — as the Numba backend makes it, from numpy's Generator: `pm.draw` in either mode gives the same numbers for
    a seed, up to Numba's fastmath round-off (`_compile.draw`), and scipy.stats is not imported."""
    new = _AS_NUMBA.get(type(node.op))
    return None if new is None else new(**node.op._props_dict()).make_node(*node.inputs).outputs


@node_rewriter([OpFromGraph])
def _inline_op_from_graph(fgraph, node):
    """An OpFromGraph's inner graph in place of the node: the Python linker would compile it apart, with fusion."""
    return inline_ofg_node(node)


#: below this many entries `_IntoOneArray` computes its result in new memory (`_small`): there the temporaries it would save are
#: memory the allocator hands back at once to the next large array, and saving them moved the page faults elsewhere.
#: Measured per EB evaluation without this floor, medians of 2–3 fresh processes alternated with the plain Elemwise:
#: sum kernel n = 500 (125 250 pairs) 12.5 → 13.8 ms, n = 1000 55.5 → 54.3, n = 2000 242 → 226; additive kernel
#: n = 500 30.7 → 30.8, n = 1000 131 → 124, n = 2000 542 → 461. Inside `reused_arrays` the floor is REUSE_MIN_SIZE:
#: there the array written into is kept memory, not new pages
ONE_ARRAY_MIN_SIZE = 2**18


#: float64's exp is exactly 0 below this (it rounds to 0 below about −745.13; its smallest subnormal, 4.9e-324, is
#: e^−744.44)
EXP_ZERO_BELOW = -746.0
#: numpy's SIMD exp (AVX-512 here) runs ~1 ns an element from this argument up, and leaves its fast path below about
#: −707.8: ~12 ns an element whose exp is still normal, 35–70 ns one whose exp is subnormal, ~6 ns one whose exp rounds
#: to 0 (125 000 equal arguments each, medians: −707 0.14 ms, −708 1.6 ms, −720 4.4 ms, −746 0.75 ms)
EXP_FAST_FROM = -700.0
#: from this share of arguments below EXP_ZERO_BELOW (every 97th counted), `_exp` leaves them out of numpy's exp
EXP_SKIP_FROM = 0.3
#: `_exp` leaves them out by a masked exp (`where=`) where they lie in runs (numpy's masked loop calls its inner loop
#: once per run, ~12 ns a run), else by replacing them with EXP_FAST_FROM and zeroing their results. Runs: fewer than
#: EXP_RUNS_FROM changes between below and not below per argument, in two windows of EXP_PROBE_SIZE (at random
#: positions there are 2s(1 − s) for a share s)
EXP_PROBE_SIZE, EXP_RUNS_FROM = 1024, 1 / 16


def _exp(x: np.ndarray, out: np.ndarray) -> None:
    """np.exp(x, out=out) to the bit (`out` may be x), with exp not evaluated where it is exactly 0 when many are.

    Over the 125 250 pairs of n = 500 (µs, medians; points sorted, so that the arguments below lie in runs / at random
    positions): with 30 % of them below EXP_ZERO_BELOW, np.exp 367 / 611, masked 249 / 819, replaced 325 / 410; with
    80 %, np.exp 658 / 803, masked 170 / 706, replaced 302 / 392; with none, np.exp 109 / 102."""
    zero = _exp_zeros(x)
    if zero is None:
        np.exp(x, out=out)
    elif _in_runs(zero):
        np.exp(x, out=out, where=~zero)
        np.copyto(out, 0.0, where=zero)
    else:
        if out is not x:
            np.copyto(out, x)
        np.putmask(out, zero, EXP_FAST_FROM)  # exp(EXP_FAST_FROM) is finite: × 0 below gives exactly 0
        np.exp(out, out=out)
        np.multiply(out, ~zero, out=out)  # (NaN is not below EXP_ZERO_BELOW: its exp stays NaN, × 1)


def _exp_zeros(x: np.ndarray) -> np.ndarray | None:
    """x < EXP_ZERO_BELOW where more than EXP_SKIP_FROM of a C-contiguous x is (judged on every 97th), else None."""
    sample = x.reshape(-1)[::97] if x.flags.c_contiguous else x[:0]  # (not contiguous, or empty: numpy's own exp)
    if np.count_nonzero(sample < EXP_ZERO_BELOW) <= EXP_SKIP_FROM * sample.size:
        return None
    return x < EXP_ZERO_BELOW  # (NaN is not below)


def _in_runs(zero: np.ndarray) -> bool:
    """Whether the Trues of `zero` lie in runs: fewer than EXP_RUNS_FROM changes per element in a window of
    EXP_PROBE_SIZE consecutive elements at a quarter and at three quarters of it."""
    flat = zero.reshape(-1)
    windows = [flat[k : k + EXP_PROBE_SIZE] for k in (flat.size // 4, 3 * flat.size // 4)]
    changes = sum(np.count_nonzero(w[1:] != w[:-1]) for w in windows)
    return changes < EXP_RUNS_FROM * sum(w.size for w in windows)


#: Elemwise's Python `perform` refuses a node of more operands (inputs and output) than numpy's frompyfunc takes; a sum
#: or product of more (a Periodic kernel on 16 columns, a sum of 32 kernels) is folded by `_IntoOneArray` instead
ELEMWISE_MAX_OPERANDS = 32


class _IntoOneArray(Elemwise):
    """An Elemwise whose numpy `perform` writes its result into one array: the input it may destroy (PyTensor's in-place
    rewrite marked it), else a new one; a variadic Add or Mul folds left to right into it.

    Elemwise's own `perform` lets every ufunc allocate its result, copies that into the destroyed input where the node
    is in place, and folds a variadic Add or Mul through a new array per operand. At n(n + 1)/2 pairs each new array
    costs its page faults: the 11-parameter additive kernel at n = 2000 spent 45 ms on one five-operand Mul. The
    numbers are the same ufuncs' in the same order: bit for bit Elemwise's (exp is not evaluated where it is exactly 0
    and most of it is: `_exp`). Operands all of fewer than ONE_ARRAY_MIN_SIZE entries are computed in new memory
    (`_small`).
    """

    def perform(self, node, inputs, output_storage):
        largest = max(np.size(x) for x in inputs)  # (a result as large by broadcasting alone: the same)
        small = largest < ONE_ARRAY_MIN_SIZE and (reused_arrays.depth == 0 or largest < REUSE_MIN_SIZE)
        variadic = _folds(self.scalar_op, len(inputs))
        dtype = node.outputs[0].type.dtype
        if small:
            output_storage[0][0] = np.asarray(self._small(node, inputs, variadic), dtype=dtype)
            return
        self._check_runtime_broadcast(node, inputs)
        shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
        k = self.inplace_pattern.get(0)
        target = inputs[k] if k is not None and (k < 2 or not variadic) else None  # a variadic fold reads operands ≥ 2 later
        if isinstance(target, np.ndarray) and target.shape == shape and target.dtype == dtype and target.flags.writeable:
            out = target
        else:
            out = reused_arrays.empty(shape, dtype)
        ufunc = getattr(np, self.nfunc_spec[0])
        with np.errstate(all="ignore"):
            if variadic:
                ufunc(inputs[0], inputs[1], out=out)
                for x in inputs[2:]:
                    ufunc(out, x, out=out)
            elif ufunc is np.exp and dtype == "float64" and isinstance(inputs[0], np.ndarray):
                _exp(inputs[0], out)
            else:
                ufunc(*inputs, out=out)
        output_storage[0][0] = out

    @staticmethod
    def _check_runtime_broadcast(node, inputs):
        """Elemwise's check, asked only where it can fail: it refuses a length 1 at run time in a dimension not marked
        broadcastable where another operand's length is not 1, so operands whose types hold one entry cannot fail it,
        nor can the others if they have one shape. Its loop over every dimension of every operand, at ~40 nodes of an
        evaluation, was 4.5 % of one of the 11-parameter additive kernel at n = 25, 3 % at n = 200 (alternated in one
        process; BENCHMARKS.md, session 36)."""
        shapes = [np.shape(x) for x, v in zip(inputs, node.inputs, strict=True) if not all(v.type.broadcastable)]
        if any(shape != shapes[0] for shape in shapes[1:]):
            Elemwise._check_runtime_broadcast(node, inputs)

    def _small(self, node, inputs, variadic: bool):
        """The ufunc's result on operands below ONE_ARRAY_MIN_SIZE, in new memory (allocated cheaply at that size):
        `_ufunc_fold`'s, without Elemwise's per-call work."""
        if any(np.ndim(x) for x in inputs):  # (scalars cannot broadcast at run time)
            self._check_runtime_broadcast(node, inputs)
        return _ufunc_fold(getattr(np, self.nfunc_spec[0]), inputs, variadic)

    def make_py_thunk(self, node, storage_map, compute_map, no_recycling, debug=False):
        """Where every operand and the result hold one entry by their types (shape () or (1, …)), a thunk that calls
        `_ufunc_fold` on them and nothing else: no `perform`, whose per-call work is most of such a node's 8–15 µs.
        They are a hyperparameter's transforms and the gradient's chain-rule factors, ~50 nodes of an evaluation of the
        11-parameter additive kernel. The same ufunc calls, so the same numbers. Measured, one evaluation against
        `perform`, alternated in one process (the same f and ∇f to the bit; BENCHMARKS.md, session 36): that kernel
        n = 25 −16 %, n = 200 −12 %, n = 500 −4 %; the seeds' sum kernel n = 25 −15 %, n = 500 −5 %."""
        if debug or not all(all(v.type.broadcastable) for v in (*node.inputs, *node.outputs)):
            return super().make_py_thunk(node, storage_map, compute_map, no_recycling, debug)
        ufunc, dtype = getattr(np, self.nfunc_spec[0]), node.outputs[0].type.dtype
        variadic = _folds(self.scalar_op, len(node.inputs))
        operands, result = [storage_map[v] for v in node.inputs], storage_map[node.outputs[0]]
        computed = [] if compute_map is None else [compute_map[node.outputs[0]]]

        def thunk():
            result[0] = np.asarray(_ufunc_fold(ufunc, [x[0] for x in operands], variadic), dtype=dtype)
            for flag in computed:
                flag[0] = True

        thunk.inputs, thunk.outputs, thunk.perform, thunk.lazy = operands, [result], self.perform, False
        return thunk


def _folds(scalar_op, n_operands: int) -> bool:
    """A variadic Add or Mul (more than two operands), which Elemwise's `perform` folds left to right with the binary
    ufunc, as `_ufunc_fold` and `_IntoOneArray` do."""
    return isinstance(scalar_op, Add | Mul) and n_operands > 2


def _ufunc_fold(ufunc, inputs: list, variadic: bool):
    """ufunc(*inputs) in new memory; a variadic Add or Mul folded left to right with the binary ufunc, as Elemwise's
    `perform` folds it (PyTensor's `prepare_node`): bit for bit its numbers, signed zeros included."""
    with np.errstate(all="ignore"):
        if not variadic:
            return ufunc(*inputs)
        result = ufunc(inputs[0], inputs[1])
        for x in inputs[2:]:
            result = ufunc(result, x)
        return result


@node_rewriter([Elemwise])
def _elemwise_into_one_array(fgraph, node):
    """`_IntoOneArray` for an Elemwise of one float output computed by a numpy ufunc on operands of its own dtype (no type
    promotion to follow), after the in-place rewrites have chosen what it may destroy."""
    op = node.op
    if type(op) is not Elemwise or len(node.outputs) != 1 or not op.nfunc_spec:
        return None
    ufunc = getattr(np, op.nfunc_spec[0], None)
    variadic = _folds(op.scalar_op, len(node.inputs))
    if len(node.inputs) + 1 > ELEMWISE_MAX_OPERANDS and not variadic:  # (a fold takes any number of operands)
        return None
    nin = 3 if isinstance(op.scalar_op, _OrderedClip) else ufunc.nin if isinstance(ufunc, np.ufunc) and ufunc.nout == 1 else None
    if nin is None or not (variadic or len(node.inputs) == op.nfunc_spec[1] == nin):  # (np.clip: its ufunc behind a function)
        return None
    dtype = node.outputs[0].type.dtype
    masks = isinstance(op.scalar_op, Mul)  # a product may hold 0/1 masks: bool × float computes in float, as reduce does
    if dtype not in ("float32", "float64") or any(v.type.dtype != dtype and not (masks and v.type.dtype == "bool") for v in node.inputs):
        return None  # floats in, the same float out: numpy computes in that dtype (bool % bool, say, computes in int8)
    return [_IntoOneArray(op.scalar_op, op.inplace_pattern, op.name, op.nfunc_spec)(*node.inputs)]


class _SumInPlace(Sum):
    """A Sum whose numpy `perform` reduces its input where it lies. CAReduce's own `perform` first copies it
    (`np.array(input, dtype=acc_dtype)` copies even in the same dtype): the 11-parameter additive kernel's objective sums
    twelve arrays over the n(n + 1)/2 pairs an evaluation. The same `np.add.reduce` over a C-contiguous array of the
    same bytes: bit for bit Sum's; any other input is left to Sum's `perform`."""

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        acc_dtype, out_dtype = self.acc_dtype or node.outputs[0].type.dtype, node.outputs[0].type.dtype
        if not (isinstance(x, np.ndarray) and x.dtype == acc_dtype and x.flags.c_contiguous):
            return super().perform(node, inputs, output_storage)
        output_storage[0][0] = np.asarray(self.ufunc.reduce(x, axis=self.axis, dtype=acc_dtype), dtype=out_dtype)


@node_rewriter([Sum])
def _sum_in_place(fgraph, node):
    """`_SumInPlace` for a Sum."""
    op = node.op
    if type(op) is not Sum:
        return None
    return [_SumInPlace(axis=op.axis, dtype=op.dtype, acc_dtype=op.acc_dtype)(*node.inputs)]


#: PyTensor's Python linker with FAST_RUN's rewrites except elemwise fusion (a fused loop would run element by
#: element in Python; PyTensor 3.3.8 added a second fusion for Numba, `fuse_indexed_into_elemwise`, whose
#: FusedElemwise ops made a numpy-mode fit at n = 500 run 20–40× slower), plus `_clip_by_ufuncs`, `_clip_mask_as_isfinite`,
#: `_inline_op_from_graph`, `_draws_as_numba`, `_elemwise_into_one_array` and `_sum_in_place`: every Op runs its numpy/SciPy
#: `perform`, so compiling costs the rewrites alone (~0.3 s) where Numba needs seconds per new graph — for graphs
#: evaluated too few times, or on arrays too small, for Numba's compilation to pay for itself. Also without
#: `local_mul_exp_to_exp_add`: it folds a·exp(−r²/2), a = e^z, into exp(z − r²/2), a second exp over every pair
#: where the gradient needs exp(−r²/2) itself (measured with the clip's rewrites: 5-D ARD at n = 500, one evaluation
#: 20.9 → 18.6 ms, medians of 60 alternated in one process). And without `introduce_explicit_core_shape_rv`, Numba's
#: wrapper of a random variable (an OpFromGraph whose inner function PyTensor compiles with its C/VM linker, importing
#: setuptools: 0.1-0.2 s of the README fit's process when its initial points were loaded from the compile directory);
#: the Python linker runs the RandomVariable's own `perform`, the same numpy draw
NUMPY = Mode(
    linker="py",
    optimizer=get_mode("FAST_RUN").provided_optimizer.excluding(
        "fusion", "fuse_indexed_into_elemwise", "local_mul_exp_to_exp_add", "introduce_explicit_core_shape_rv"
    ).register(
        (in2out(_clip_by_ufuncs, _clip_mask_as_isfinite), 49.5), (in2out(_inline_op_from_graph), 0.5),
        (in2out(_draws_as_numba), 0.6),
        (in2out(_elemwise_into_one_array, _sum_in_place), 99.0),
    ),
)

#: `NUMPY` for the objective of a fit (value and gradient; `compiled_graph` with `hoist` and `gradient`), whose gradient
#: sums products over the pairs: those sums with their common factors multiplied once (`SummedProducts`, before the
#: in-place rewrites). With `with_squared_ratios` before differentiating, the 11-parameter additive kernel on random
#: times, one evaluation (medians of alternated evaluations in one process, each over a Cholesky of the same size):
#: n = 500 7.1 → 6.1 Choleskys, n = 2000 5.1 → 4.5 (BENCHMARKS.md, session 35)
NUMPY_OBJECTIVE = Mode(linker="py", optimizer=NUMPY.provided_optimizer.register((SummedProducts(), 49.4)))
#: the modes on PyTensor's Python linker, each with what its rewrites add to NUMPY's (part of a graph's key on disk)
_NUMPY_MODES = {NUMPY: "", NUMPY_OBJECTIVE: "SummedProducts"}  # (by identity: Mode has no __eq__)


class _GilReleasingNumbaLinker(NumbaLinker):
    """PyTensor's Numba linker, its compiled function releasing the GIL while it runs (Numba's `nogil`), and cached
    on disk apart from the function PyTensor's own linker makes of the same graph: Numba's cache index keys on the
    signature and the bytecode, not on `nogil`, so under the same key either would load the other's."""

    def jit_compile(self, fn_and_cache):
        from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS
        from pytensor.link.numba.dispatch.basic import numba_njit

        fn, _ = fn_and_cache
        key = CACHED_SRC_FUNCTIONS.get(fn.py_func)  # PyTensor's disk-cache key of the graph (None: not cacheable)
        if key is None:
            return numba_njit(fn.py_func, final_function=True, nogil=True)
        original = fn.py_func
        py_func = types.FunctionType(original.__code__, original.__globals__, original.__name__, original.__defaults__, original.__closure__)
        CACHED_SRC_FUNCTIONS[py_func] = f"{key}_nogil"  # a copy of the function, under a key of its own
        return numba_njit(py_func, final_function=True, cache=True, nogil=True)


#: PyTensor's NUMBA mode (the same rewrites, and `_fills.fill_from_one_element` after them: the same numbers) whose
#: compiled functions release the GIL while they run: for a function several threads call at once, such as a log
#: density nutpie's chains evaluate (`fit._nutpie`)
NUMBA_NOGIL = Mode(linker=_GilReleasingNumbaLinker(), optimizer=get_mode("NUMBA").provided_optimizer.register(
    (in2out(fill_from_one_element), 99.0)))

_MAX_ENTRIES = 512
_CACHE: OrderedDict = OrderedDict()

#: structures kept compiled in a process: a fit holds four or five (objective, natural values, initial point, prior
#: draws, the Laplace step's Jacobian), so 64 keep a dozen kernel structures' fits
_MAX_GRAPHS = 64
_GRAPHS: list = []  # (inputs with the data's stand-ins, outputs, compile options, function, lock); newest last
_GRAPHS_LOCK = threading.Lock()

class _SharedFlags(SharedScope):
    """PyTensor flags set while any scope of this object is open, in any thread; restored when the last one closes.

    PyTensor's flags are process-wide, so scopes that overlap across threads must not restore them
    out of order (`pytensor.config.change_flags` would).
    """

    def __init__(self, **values):
        super().__init__()
        self.values, self.saved = values, {}

    def _first_opened(self) -> None:
        self.saved = {name: getattr(pytensor.config, name) for name in self.values}
        for name, value in self.values.items():
            setattr(pytensor.config, name, value)

    def _last_closed(self) -> None:
        for name, value in self.saved.items():
            setattr(pytensor.config, name, value)


#: Compile with IEEE arithmetic: PyTensor's Numba linker without fastmath, inside this block.
#:
#: PyTensor compiles by default with LLVM's fastmath flags (reassoc, contract, …), under which the
#: order of a sum and the fusing of a·b + c are LLVM's choice, and its choice depends on how much of
#: the graph it sees at once: a function compiled fresh is linked and inlined differently from the
#: same function assembled from Numba's on-disk cache (measured: the EB gradient of a BLR model
#: differs in the last bits between a process with an empty and one with a filled compile
#: directory, and the optimiser then ends elsewhere). Without fastmath the order is the program's,
#: so the numbers are the same whatever is cached. The flag is read when a function is compiled
#: (and keys the disk cache).
exact_arithmetic = _SharedFlags(numba__fastmath=False)

#: Inside this block, functions compiled without a mode (PyMC's initial-point functions) use `NUMPY`,
#: and no Op compiles C code (cxx ""): each runs its `perform`. A function compiled meanwhile in
#: another thread runs in numpy too (slower on large arrays, the same numbers up to round-off).
numpy_mode = _SharedFlags(mode=NUMPY, cxx="")


def draw(variables, draws: int = 1, random_seed=None):
    """`pm.draw` in `NUMPY`: each RandomVariable runs its numpy `perform`. PyMC's default mode compiles every such function
    with Numba, 1.8–2.5 s on an empty compile directory (measured 2026-11-27: 2000 draws of an InverseGamma prior 1.9 s
    against 0.02 s here). The numbers are the Numba backend's for the same seed, up to its fastmath round-off (a few
    ULP; Laplace up to 90): `_draws_as_numba` for the samplers that would otherwise draw differently."""
    import pymc as pm  # (this module otherwise needs PyTensor alone)

    return pm.draw(variables, draws=draws, random_seed=random_seed, mode=NUMPY)


#: Graphs built inside this block (in any thread) carry no record of the Python stack that created each variable:
#: PyTensor's `tag.trace`, up to `traceback__limit` = 8 frames read with their source lines for every variable and
#: constant, in graph building and in every rewrite. Measured on a fit whose structure is compiled already (model and
#: objective, n = 500, medians of 8 alternated): 5-D ARD 458 → 347 ms, the sum kernel 405 → 309, the 11-parameter
#: additive kernel 913 → 861. Used by bayeskern's own graph building and compiling; PyTensor's error messages for
#: those graphs name the Op and its inputs, not the line that created it
untraced = _SharedFlags(traceback__limit=0)


def _function(inputs: list, outputs, **options):
    """`pytensor.function` with exact arithmetic; in `numpy_mode` when asked for `NUMPY` or `NUMPY_OBJECTIVE`, its
    rewritten graph kept on disk for later processes (`_graph_cache`), under a key that tells the two modes apart."""
    with exact_arithmetic(), untraced():
        context = _NUMPY_MODES.get(options.get("mode"))  # (the mode object passed, whatever name it is reached by)
        if context is None:
            return pytensor.function(inputs, outputs, **options)
        with numpy_mode():
            return _graph_cache.function(inputs, outputs, compile_=lambda: pytensor.function(inputs, outputs, **options),
                                         context=context, **options)


def numpy_function(inputs: list, outputs, **options):
    """`pytensor.function` on the NUMPY mode: for graphs evaluated a few times, where compiling would cost more."""
    return _function(inputs, outputs, mode=NUMPY, **options)


def compiled(key: Hashable, build: Callable[[], tuple[list, object]], numpy: bool = False):
    """The compiled function for `key`, built by `build() -> (inputs, outputs)` on first use.

    Compilation costs from a fraction of a second to seconds; evaluating a cached function
    costs microseconds. The cache keeps the most recently used `_MAX_ENTRIES` functions. `numpy`:
    run it on the `NUMPY` mode (nothing compiled), a separate entry. Otherwise it runs on Numba, its arrays passed
    C-contiguous and writable (`_on_one_array_type`).
    """
    key = (key, numpy)
    fn = _CACHE.get(key)
    if fn is None:
        with untraced():
            inputs, outputs = build()
        fn = _function(inputs, outputs, on_unused_input="ignore", **({"mode": NUMPY} if numpy else {}))
        fn = fn if numpy else _on_one_array_type(fn)
        _CACHE[key] = fn
        if len(_CACHE) > _MAX_ENTRIES:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return fn


def _on_one_array_type(fn: Callable) -> Callable:
    """`fn`, a Numba-compiled function, given its array arguments C-contiguous and writable (copied where not).

    Numba compiles a function once per type of its arguments, and a read-only or a strided array is another type: a
    model's own read-only copy of X (`_validation.owned`) after the caller's X compiled the whole graph again (measured
    on a new machine: `blr.condition(phi, X, …)` after `phi(X)` at 200 000 points, 1.1–2.4 s). The copy is O(n·d),
    beside the O(n·m) output."""

    def call(*args):
        return fn(*(np.require(a, requirements="CW") if isinstance(a, np.ndarray) else a for a in args))

    call.function = fn
    return call


def data_stand_ins(outputs: list) -> tuple[list, list, list]:
    """(the shared data variables of `outputs`' graph, a fresh stand-in of each type, `outputs` on the stand-ins).

    Data only: a shared variable with an update (a random generator) stays in the graph as it is.
    """
    shared = [v for v in graph_inputs(outputs) if isinstance(v, SharedVariable) and getattr(v, "default_update", None) is None]
    stand_ins = [v.type(name=v.name) for v in shared]
    return shared, stand_ins, graph_replace(list(outputs), dict(zip(shared, stand_ins, strict=True)), strict=True)


def same_structure(a: tuple[list, list], b: tuple[list, list]) -> bool:
    """Whether two (inputs, outputs) graphs compute the same: inputs of the same types, and `equal_computations`
    finding the same operations, constants and wiring from them."""
    (inputs_a, outputs_a), (inputs_b, outputs_b) = a, b
    return (len(inputs_a) == len(inputs_b) and len(outputs_a) == len(outputs_b)
            and all(x.type == y.type for x, y in zip(inputs_a, inputs_b, strict=True))
            and equal_computations(list(outputs_b), list(outputs_a), list(inputs_b), list(inputs_a)))


def compiled_graph(inputs: list, outputs: list, hoist: bool = False, gradient: bool = False, **options) -> Callable:
    """`pytensor.function(inputs, outputs, **options)`, reused for every later graph of the same structure.

    A PyMC model's graph holds its data in shared variables. Here they become explicit inputs, fed
    their current values at each call, so two models that differ only in their data (or two fits of
    one model) share one compiled function; graphs match when `equal_computations` finds the same
    operations, constants and wiring. Rewriting a graph for compilation takes about half a second,
    evaluating it at n = 500 about ten milliseconds. The callable returned has the shared compiled
    function as `.function`; calls of one compiled function are serialised across threads.

    `hoist`: compute what depends on the data alone once per data (`_Hoisted`), for a function called many times
    with new `inputs` on the same data — an objective over the hyperparameters (not for a graph that draws random
    numbers: its generators' states are not data). The callable's `.forget()` drops those values.

    `gradient`: `outputs` is one scalar f, and the function returns f and ∇f, its gradient with respect to `inputs`
    (each raveled, in order, joined). The gradient is built only where a new structure is compiled: graphs of one
    structure have gradients of one structure, so a later graph of it is matched on f alone (differentiating the sum
    kernel's log density and matching the larger graph were ~60 % of setting up an empirical-Bayes objective). In numpy
    mode with `hoist`, before f is differentiated, its kernel pairs are evaluated once per distinct datum
    (`_distinct_pairs.with_distinct_pairs`: points on a grid) and its squared ratios (t/ℓ)² become `SquaredRatio`s,
    whose gradient reads r² (`_squared_ratios`); it is compiled on `NUMPY_OBJECTIVE`.
    """
    shared, stand_ins, outputs = data_stand_ins(outputs)
    all_inputs = list(inputs) + stand_ins
    hoist = hoist and not any(isinstance(v, SharedVariable) for v in graph_inputs(outputs))  # a generator's state is no data
    key = dict(options, hoist=hoist, gradient=gradient)
    with _GRAPHS_LOCK:
        for k in range(len(_GRAPHS) - 1, -1, -1):
            entry_inputs, entry_outputs, entry_key, fn, lock = _GRAPHS[k]
            if entry_key == key and same_structure((entry_inputs, entry_outputs), (all_inputs, outputs)):
                _GRAPHS.append(_GRAPHS.pop(k))  # most recently used last, as in `compiled`
                break
        else:
            if hoist and gradient and options.get("mode") is NUMPY:  # (Numba's fused loops pass over the pairs once; at
                # the sizes a fit compiles with Numba, the kept values would exceed HOIST_MAX_BYTES anyway)
                to_compile = [with_squared_ratios(with_distinct_pairs(outputs[0], list(inputs), kept_bytes=HOIST_MAX_BYTES))]
                options = dict(options, mode=NUMPY_OBJECTIVE)
            else:
                to_compile = outputs
            compiled = _with_gradient(to_compile, inputs) if gradient else to_compile
            fn = _Hoisted(list(inputs), stand_ins, compiled, options) if hoist else _function(all_inputs, compiled, **options)
            lock = threading.Lock()
            _GRAPHS.append((all_inputs, outputs, key, fn, lock))
            del _GRAPHS[:-_MAX_GRAPHS]
    if hoist:
        kept = _DataValues()

        def call(*values):
            with lock:  # a compiled function holds its own storage: one call at a time across threads
                return fn(values, [v.get_value(borrow=True) for v in shared], kept)

        call.function, call.forget = fn.main, kept.clear
        return call

    def call(*values):
        with lock:  # a compiled function holds its own storage: one call at a time across threads
            return fn(*values, *(v.get_value(borrow=True) for v in shared))

    call.function, call.forget = fn, lambda: None
    return call


def _with_gradient(outputs: list, wrt: list) -> list:
    """[f, ∇f] for outputs [f]: ∂f/∂v for each v of `wrt`, raveled and joined in order."""
    [f] = outputs
    return [f, pt.concatenate([pt.grad(f, v).ravel() for v in wrt])]


#: the most `_Hoisted` keeps per data: its values grow as the pairs of points (5 MB at n = 500 for the sum kernel,
#: 80 MB at n = 2000); beyond, they are recomputed at each call (the cost of the unsplit function), and not copied.
#: The data themselves are kept too (a copy, to notice a change made in place): O(n·d), small beside them
HOIST_MAX_BYTES = 64 * 2**20


class _Hoisted:
    """A function of (per-call inputs, data) compiled in two parts: `data_part` computes, from the data alone, every value
    that a computation depending on the per-call inputs reads; `main` computes the outputs from the inputs, those values
    and the data. PyTensor evaluates every node at every call: the pairs of points, the inputs gathered at them and
    their differences would be recomputed at each evaluation of a likelihood, although only the hyperparameters change
    (measured: 3.2 of 15 ms per evaluation of the sum kernel at n = 500). The outputs are the whole function's to
    round-off (the two parts are rewritten apart: the EB objective's values bit-equal, its gradient to the last bits).
    """

    def __init__(self, inputs: list, stand_ins: list, outputs: list, options: dict):
        graph = FunctionGraph(inputs + stand_ins, outputs, clone=True)
        MergeOptimizer().rewrite(graph)  # one copy of each computation (the gradient repeats the forward pass's indices)
        inputs, stand_ins, outputs = graph.inputs[: len(inputs)], graph.inputs[len(inputs):], graph.outputs
        reads = _data_only_reads(inputs, stand_ins, outputs)
        stand_ins_for_reads = [v.type() for v in reads]
        # the data-only part runs once per data set: in numpy (`NUMPY`) whatever the rest is compiled with, so that an
        # objective on Numba compiles one function, not two (a Numba compilation of a new graph costs seconds)
        self.data_part = _function(stand_ins, reads, mode=NUMPY, on_unused_input="ignore")
        self.main = _function(inputs + stand_ins_for_reads + stand_ins, graph_replace(outputs, dict(zip(reads, stand_ins_for_reads)), strict=False),
                              **dict(options, on_unused_input="ignore"))

    def __call__(self, values, data: list, kept: "_DataValues"):
        computed = kept.lookup(data)
        if computed is None:
            computed = self.data_part(*data)
            if kept.keeps(data, computed):
                computed = [np.array(v) for v in computed]  # a copy: the compiled function may reuse its output
                kept.store(data, computed)
        return self.main(*values, *computed, *data)


#: NUMBA_NOGIL's linker without rewrites: for a graph rewritten already
_AS_REWRITTEN = Mode(linker=NUMBA_NOGIL.linker, optimizer=None)


def split_off_data(function) -> tuple[FunctionGraph, FunctionGraph, list[str]] | None:
    """A function compiled on Numba, of inputs and data (shared variables), as the graphs of two functions (for `linked`)
    that give its outputs to the bit: `data_part(*data)`, the values computed from the data alone that the rest reads,
    and `main(*inputs, *those values, *data)`, the outputs; with the names of the data, in order. For a function called
    many times on the same data (a log density in a sampler: the pairs of points and the inputs gathered at them
    would otherwise be recomputed at every call). Both are the graph `function` was rewritten to, as it is, so with
    the same arithmetic (rewriting the parts apart could change the last bits, as it does for `_Hoisted`). None where
    nothing is computed from the data alone, or an in-place operation would overwrite such a value (`_overwritten`)."""
    graph, inputs, data, on_stand_ins = _data_apart(function)
    reads = _data_only_reads(inputs, data, list(graph.outputs))
    if not reads or _overwritten(graph, reads):
        return None
    read_stand_ins = [v.type() for v in reads]
    data_part = _as_rewritten(list(on_stand_ins.values()), graph_replace(reads, on_stand_ins, strict=False))
    main = _as_rewritten(inputs + read_stand_ins + list(on_stand_ins.values()), graph_replace(
        list(graph.outputs), {**on_stand_ins, **dict(zip(reads, read_stand_ins, strict=True))}, strict=False))
    return data_part, main, [v.name for v in data]


def _overwritten(graph: FunctionGraph, variables: list) -> bool:
    """Whether an in-place operation of `graph` writes into the memory of one of `variables`: into it, into a view of it
    (a row taken at an index that depends on an input, then scaled in place), or into the buffer it is itself a view of
    (a sibling view of that buffer written in place). PyTensor's destroy handler, which the in-place rewrites attach,
    maps every destroyed buffer and every view of one (`droot`); two disjoint views of one buffer count as one."""
    handler = getattr(graph, "destroy_handler", None)
    if handler is None:  # no in-place rewrite ran: an Op in place by its own making is refused, not reasoned about
        return any(node.op.destroy_map for node in graph.apply_nodes)
    destroyed = handler.refresh_droot_impact()[0]
    return any(v in destroyed for v in variables)


def on_data_inputs(function) -> tuple[FunctionGraph, list[str]]:
    """The graph `function` (compiled on Numba) was rewritten to, as it is, its data (shared variables) made inputs after
    its own, for `linked`: `linked(graph)(*inputs, *data)` gives its outputs to the bit; with the names of the data."""
    graph, inputs, data, on_stand_ins = _data_apart(function)
    outputs = graph_replace(list(graph.outputs), on_stand_ins, strict=False)
    return _as_rewritten(inputs + list(on_stand_ins.values()), outputs), [v.name for v in data]


def _data_apart(function) -> tuple[FunctionGraph, list, list, dict]:
    """(the graph `function` was rewritten to, its inputs, its data — shared variables —, a stand-in for each datum)."""
    graph = function.maker.fgraph
    data = [v for v in graph.inputs if isinstance(v, SharedVariable)]
    return graph, [v for v in graph.inputs if not isinstance(v, SharedVariable)], data, {v: v.type(name=v.name) for v in data}


def _as_rewritten(inputs: list, outputs: list) -> FunctionGraph:
    """The graph `pytensor.function(inputs, outputs)` would link if nothing were rewritten (PyTensor's copies of outputs
    that are inputs or constants added), not linked: for `linked`, now or in a later process (`_graph_cache.keep`)."""
    return FunctionMaker([In(v) for v in inputs], list(outputs), mode=_AS_REWRITTEN, accept_inplace=True, on_unused_input="ignore").fgraph


def linked(graph: FunctionGraph) -> Callable:
    """The Numba function of a graph made by `split_off_data` or `on_data_inputs` (here, or kept on disk by an earlier
    process): compiled on `NUMBA_NOGIL` with exact arithmetic as it is, nothing rewritten; Numba compiles it at its
    first call, or loads it from PyTensor's compile directory."""
    with exact_arithmetic():
        return _graph_cache.function_of(graph, _AS_REWRITTEN).vm.jit_fn


def _data_only_reads(inputs: list, data: list, outputs: list) -> list:
    """The variables computed from the data alone (a datum among their ancestors, no input) that a node depending on an
    input reads. What is computed from constants alone stays with its reader, to be folded into a constant there (a
    value passed in is no constant to rewrites that need one: the bounds of a clip). An allocation (zeros to be written
    into) stays with its reader too: a value passed in would be copied before an in-place write."""
    depends, from_data, reads = set(inputs), set(data), {}
    for node in io_toposort(list(graph_inputs(outputs)), outputs):
        if any(v in depends for v in node.inputs):
            depends.update(node.outputs)
            reads.update((v, None) for v in node.inputs
                         if v in from_data and v not in depends and v.owner is not None and not isinstance(v.owner.op, (Alloc, AllocEmpty)))
        elif any(v in from_data for v in node.inputs):
            from_data.update(node.outputs)
    return list(reads)


class _DataValues:
    """The data-only values of one set of data arrays, kept while the data are equal to the copies kept of them."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.data, self.values = None, None

    def lookup(self, data: list) -> list | None:
        same = self.data is not None and len(self.data) == len(data) and all(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc") for a, b in zip(self.data, data))  # shapes too
        return self.values if same else None

    @staticmethod
    def keeps(data: list, values: list) -> bool:
        """Whether these values are kept: dense data (compared by value) and values within HOIST_MAX_BYTES."""
        return all(isinstance(a, np.ndarray) for a in data) and sum(np.asarray(v).nbytes for v in values) <= HOIST_MAX_BYTES

    def store(self, data: list, values: list) -> None:
        self.data, self.values = [np.array(a) for a in data], values
