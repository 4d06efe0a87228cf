"""Empirical Bayes (type-II maximum likelihood): maximise the marginal likelihood over the hyperparameters."""

import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import scipy.optimize
from scipy.optimize import LbfgsInvHessProduct
from pymc.initial_point import make_initial_point_fn
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors

from bayeskern._blas import blas_for_size
from bayeskern._compile import NUMPY, compiled_graph, numpy_mode, untraced
from bayeskern._reused_arrays import reused_arrays
from bayeskern._gaussian_logp import GaussianLogp
from bayeskern._json import jsonable
from bayeskern._validation import PACKAGE_DIR, check_flag, check_integer, check_model, check_seed
from bayeskern.fit._data_start import data_start
from bayeskern.fit._initial_point import point_draws
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.warning import FitWarning
from bayeskern.likelihood import attach, find_likelihood

__all__ = ["EmpiricalBayesResult", "Laplace", "Optimum", "empirical_bayes"]

#: a coordinate is "at the edge of its support" when it has run out to |z| ≥ AT_BOUND_Z in PyMC's
#: unconstrained space (e^±8: a factor 3000 from 1 for a log-transformed parameter) AND the objective
#: rises all the way out: its gradient still points outwards, or moving it out to |z| = Z_LIMIT loses
#: less than EDGE_FLAT. A run stopped at a cliff on its way out (beyond it K + σ²I is singular to
#: round-off and needs jitter) is continued from EDGE_STEP further out, at most EDGE_RETRIES times
AT_BOUND_Z, EDGE_STEP, EDGE_FLAT, EDGE_RETRIES = 8.0, 5.0, 1e-3, 3
#: the edge of the box in unconstrained space: starts drawn from the priors are clipped to it, `_at_edge` looks out to
#: it, and `_finish_at_edges` puts the coordinates running out there. e^−30 ≈ 1e-13 from the edge of the support, and a
#: logistic or interval transform's value still short of its bound in float64 (from |z| ≈ 37 it rounds onto the bound,
#: and then no longer tells which elements ran to it)
Z_LIMIT = 30.0
#: converged: a Newton step from where the optimiser stopped, with the optimiser's own curvature,
#: would gain at most GAIN_TOL in the objective (nats), over the parameters not at a bound
GAIN_TOL = 1e-4
#: a coordinate at a bound whose gradient still points outwards by more than this has not reached its edge
GRAD_TOL = 1e-3
#: the curvature pairs (step, change of gradient) kept for that estimate, and L-BFGS-B's memory (its `maxcor`; SciPy's
#: default is 10): a model has tens of parameters, where 30 pairs cost nothing and bring L-BFGS close to BFGS (a run
#: takes 30–100 iterations). Measured with 10 → 30 pairs, evaluations: the 11-parameter additive kernel at n = 500
#: 89 → 70 (1e-4 nats of the optimum after 74 → 58), the sum kernel at n = 500 52 → 45, 5-D ARD at n = 500 (3 starts)
#: 102 → 93, the README fit 189 → 176, VFE at n = 20 000 81 → 50; more only for HSGP at n = 10⁵ (141 → 161, two scales
#: following their tails to 0); the same optima
CURVATURE_PAIRS = 30
#: the optimiser stops once an iteration gains ≤ ROUND_OFF_GAIN · |objective| where max |gradient| ≤ STOP_GRAD,
#: or where max |gradient| ≤ GRAD_TOL and a Newton step would gain ≤ STOP_GAIN (the rule of `converged`, 1e-4 of
#: its tolerance) with as many curvature pairs as parameters, up to CURVATURE_PAIRS (fewer leave a direction
#: the run has not explored at the scale of its latest, perhaps stiff, step): progress has reached the round-off
#: floor of the objective near a stationary point
STOP_GRAD, ROUND_OFF_GAIN, STOP_GAIN = 1e-4, 1e-11, 1e-8
#: the optimiser also stops where the coordinates past AT_BOUND_Z still rising outwards have at most EDGE_GAIN (nats)
#: left between them and the rest meets `_near_stationary` to STOP_GAIN: a scale θ = e^z running to 0 enters K as
#: θ^r (r = 1 for an amplitude or offset, 2 for σ or 1/ℓ), so the objective's tail is c·e^{rz}, the gain left out to
#: the edge |∂f/∂z|/r ≤ |∂f/∂z|, and following it costs an iteration per halving (this rule saves 9 of the sum
#: kernel's 68 evaluations at n = 500, 83 of the README fit's 338; measured with 10 curvature pairs). 1e-2 of GAIN_TOL
EDGE_GAIN = 1e-6
#: a line search that has spent STALLED_SEARCH evaluations without an acceptable point, from an iterate that already
#: meets the rule of `converged`, ends the run there: on the round-off floor of the objective L-BFGS-B's line searches
#: otherwise spend their 20 evaluations on noise, twice (measured on the 11-parameter additive kernel: 152
#: evaluations, 38 of them ended by this rule, gaining 2e-9 nats, with 10 curvature pairs); away from it a line search
#: takes 1–3
STALLED_SEARCH = 4
#: `_finish_at_edges` ends a run whose scales run out to their edges: it is tried once the other coordinates' predicted
#: gain is ≤ FINISH_GAIN and the outward gradients sum to ≤ GRAD_TOL, puts those coordinates at |z| = Z_LIMIT, and takes
#: up to FINISH_STEPS quasi-Newton steps, each to cut that gain FINISH_RATE-fold. The tails otherwise cost an iteration
#: per halving, and L-BFGS-B's steps along them keep the rest from settling (measured: README fit 251 → 189 evaluations,
#: sum kernel at n = 500 59 → 52, the additive kernel 88 → 89, with 10 curvature pairs; log p within 2e-6 of the run
#: without it, higher for these three)
FINISH_GAIN, FINISH_STEPS, FINISH_RATE = 1e-5, 4, 4.0
#: up to this many data points (rows one evaluation passes over) the objective runs in numpy (`_compile.NUMPY`: no
#: compilation, ~0.3–1 s of graph rewriting instead of Numba's 5–30 s for a new structure on a new machine). Measured
#: per evaluation of the 11-parameter additive kernel (2026-11-24, pair form, warm cache), numpy vs Numba: n = 200
#: 18 vs 4.7 ms, n = 500 31–42 vs 24–28 ms, n = 1000 273 vs 214 ms, n = 2000 934 vs 875 ms; Numba's compile of that
#: objective on an empty cache 30 s, against a whole numpy fit at n = 500 of 4–8 s
NUMPY_MAX_N = 5000
#: evaluations remembered by the objective: the optimum is asked for again after its run (the edge tests, the
#: result), and a start checked for finiteness before its run is still remembered when fewer starts are drawn
RECENT_EVALUATIONS = 4
#: two optima are one if their objectives differ by less than this (flat directions, such as an ARD
#: length scale running off to infinity, leave the coordinates themselves undetermined). Ten times GAIN_TOL: each
#: converged run is within GAIN_TOL of its stationary point only as far as the L-BFGS curvature estimate is right,
#: and on a flat ridge it is not — two starts of the 5-D VFE benchmark, both converged at one optimum, ended
#: 2.95e-4 apart and were reported as "distinct optima" when this was 1e-4. 1e-3 nats is a Bayes factor of 1.001.
LML_SAME = 1e-3
#: how often an approximation chosen by the package may be re-chosen at the optimum and the fit continued (`_refine`)
MAX_REFINEMENTS = 3


@dataclass(frozen=True)
class Optimum:
    """One local optimum found by the restarts: natural-scale `params`, the objective and the LML there."""

    params: dict
    objective: float
    log_marginal_likelihood: float
    converged: bool
    starts: int  # how many starts ended here


@dataclass(frozen=True)
class Laplace:
    """A Gaussian approximation at the optimum from the Hessian in PyMC's unconstrained space.

    `cov_unconstrained` = (−∇²objective)⁻¹ over the unconstrained coordinates `names`; `sd` maps each
    parameter to its standard deviation on the natural scale by the delta method (NaN where the
    Hessian is not negative definite, e.g. for a parameter at a bound). Without the prior it is the
    curvature of the log marginal likelihood alone. `ok`: the Hessian over the coordinates not at an
    edge was negative definite.
    """

    sd: dict
    cov_unconstrained: np.ndarray
    names: tuple
    ok: bool
    n_evaluations: int = 0


@dataclass(frozen=True)
class EmpiricalBayesResult:
    """The best optimum of the marginal likelihood (plus log prior, with `include_prior`) over the restarts.

    `params`: name → value on the natural scale. `log_marginal_likelihood`: log p(t | θ̂).
    `objective`: what was maximised (the LML, or LML + log prior). `predicted_gain`: what a Newton
    step from the optimum would still gain, ½ gᵀH̃g with g the gradient over the parameters not at a
    bound and H̃ ≈ (−∇²objective)⁻¹ the optimiser's own curvature estimate (half the squared Newton
    decrement: invariant to how the parameters are scaled, as far as H̃ is exact); `converged`: predicted_gain ≤ GAIN_TOL
    (1e-4 nats), i.e. the objective is within that of a stationary point. `grad_norm`: max
    |∇objective| in unconstrained space. `at_bound`: name → whether it ran to the edge of its support; `bound`: name →
    that edge (its natural value in the limit, e.g. 0.0 for a scale running to 0; elements not at
    the edge keep their value), for the parameters at it. Where on the flat way out the optimiser
    stopped is a matter of round-off, so `params` there is only "somewhere near the edge".
    `n_evaluations`: every value-and-gradient evaluation of the fit (starts, searches, edge tests);
    the Laplace approximation, computed when `.laplace` is first read, counts its own. `conditioned`: the model
    conditioned at the optimum (`bayeskern.conditioned.Conditioned`), factorised once; `jitter` (added
    to C's diagonal, 0.0 normally) and `log_marginal_likelihood` are both read from that one
    factorisation. `optima`: the distinct optima, best first. `laplace`: the Laplace approximation at
    the optimum, computed on first use (2 evaluations per coordinate; `to_dict` reads it) with the
    objective the fit compiled, which the result keeps. `seconds`: wall time;
    `compile_seconds` of it spent building and compiling the objective, up to its first evaluation
    (a kernel graph compiled later, for the conditioned model, counts in `seconds` only).
    """

    params: dict
    log_marginal_likelihood: float
    objective: float
    include_prior: bool
    converged: bool
    predicted_gain: float
    grad_norm: float
    at_bound: dict
    n_evaluations: int
    jitter: float
    optima: tuple
    seconds: float
    compile_seconds: float
    plug_in: PlugIn = field(repr=False)
    conditioned: object = field(repr=False)
    bound: dict = field(default_factory=dict)
    laplace_at: object = field(default=None, repr=False, compare=False)  # () -> Laplace

    @cached_property
    def laplace(self) -> Laplace:
        """The Laplace approximation at the optimum, computed on first use."""
        if self.laplace_at is None:
            raise ValueError("this result holds no objective to compute a Laplace approximation from")
        return self.laplace_at()

    def to_dict(self) -> dict:
        """The numbers as JSON values (`_json.jsonable`: lists for arrays, None for NaN and ±inf)."""
        return jsonable({
            "params": self.params, "log_marginal_likelihood": self.log_marginal_likelihood,
            "objective": self.objective, "include_prior": self.include_prior, "converged": self.converged,
            "predicted_gain": self.predicted_gain,
            "grad_norm": self.grad_norm, "at_bound": dict(self.at_bound), "bound": self.bound,
            "n_evaluations": self.n_evaluations,
            "jitter": self.jitter, "laplace_sd": self.laplace.sd, "laplace_ok": self.laplace.ok,
            "optima": [{"params": o.params, "log_marginal_likelihood": o.log_marginal_likelihood,
                        "converged": o.converged, "starts": o.starts} for o in self.optima],
            "seconds": self.seconds, "compile_seconds": self.compile_seconds,
        })

    def posterior(self, Xnew=None, include_noise: bool = False):
        """The exact GP/BLR posterior with the hyperparameters at the optimum (`gp.posterior`/`blr.posterior`)."""
        return self.conditioned.posterior(Xnew, include_noise)


def _with_jitter(logp):
    """The graph with the marginal Gaussian's Op swapped for its escalating-jitter twin (finite where C needs jitter).

    The jitter itself is read from the model conditioned at the optimum, with the log marginal likelihood.
    """
    nodes = [v.owner for v in ancestors([logp]) if v.owner is not None and isinstance(v.owner.op, GaussianLogp)]
    if len(nodes) != 1:
        return logp
    node = nodes[0]
    twin = GaussianLogp(jitter=True)(*node.inputs)
    (logp,) = graph_replace([logp], dict(zip(node.outputs, twin, strict=True)), strict=False)
    return logp


def _log_density(model, obs, include_prior: bool):
    """log p(t | θ) (+ log p(θ) with `include_prior`) over the model's value variables, without Jacobian terms.

    The observed variable's own log density (`pm.logp`: the function its CustomDist was given), with the
    hyperparameters replaced by their values: what `model.logp(vars=[obs], jacobian=False)` computes, without PyMC's
    rewriting of the whole model graph into its intermediate representation first (~0.2 s of every fit's set-up for
    the 11-parameter additive kernel, the largest part of building its objective). The priors, small graphs, through
    `model.logp`.
    """
    [likelihood] = model.replace_rvs_by_values([pt.sum(pm.logp(obs, model.rvs_to_values[obs], warn_rvs=False))])
    if not include_prior:
        return likelihood
    return likelihood + model.logp(vars=list(model.free_RVs), jacobian=False)


class _Objective:
    """Value and gradient of a log density over the flat unconstrained vector z, compiled once."""

    def __init__(self, model, obs, include_prior: bool):
        self.model = model
        n_data = find_likelihood(model)[1].rows_per_evaluation()
        self.point = point_draws(model)()
        self.value_vars = model.value_vars
        logp = _with_jitter(_log_density(model, obs, include_prior))
        unused = [model.values_to_rvs[v].name for v in self.value_vars if v not in set(ancestors([logp]))]
        if unused:
            raise ValueError(
                f"hyperparameter(s) {', '.join(unused)} do not enter the "
                f"{'posterior' if include_prior else 'marginal likelihood'}: nothing determines them "
                "(hyperpriors of hyperparameters need include_prior=True)"
            )
        natural = [pt.as_tensor_variable(v) for v in model.replace_rvs_by_values(model.free_RVs)]
        # the value variables themselves are the compiled functions' inputs, fed the pieces of z (`_split`): no copy of
        # the graphs over one joined vector (`pymc.join_nonshared_inputs` clones them, ~0.1 s of every fit's set-up)
        options = {"mode": NUMPY} if n_data <= NUMPY_MAX_N else {}
        self._value_and_grad = compiled_graph(list(self.value_vars), [logp], hoist=True, gradient=True, **options)
        self._natural_values = pt.concatenate([v.ravel() for v in natural])  # (empirical_bayes refuses a model without free RVs)
        self._natural = compiled_graph(list(self.value_vars), natural, mode=NUMPY)  # evaluated a few times per fit: numpy
        self.sizes = [int(np.size(self.point[v.name])) for v in self.value_vars]
        self._shapes, self._ends = [np.shape(self.point[v.name]) for v in self.value_vars], np.cumsum(self.sizes)[:-1]
        self.transformed = np.concatenate(
            [np.full(s, model.rvs_to_transforms[model.values_to_rvs[v]] is not None) for v, s in zip(self.value_vars, self.sizes)]
        )
        self.n_evaluations = 0
        self._jacobian = None
        self._recent: OrderedDict = OrderedDict()  # z's bytes → (f, g) of the latest evaluations

    def flat(self, point: dict) -> np.ndarray:
        return np.concatenate([np.ravel(point[v.name]) for v in self.value_vars]).astype(np.float64)

    def _split(self, z) -> list[np.ndarray]:
        """The value variables' values in z (the inverse of `flat`)."""
        pieces = np.split(np.asarray(z, dtype=np.float64), self._ends)
        return [piece.reshape(shape).astype(v.dtype) for piece, shape, v in zip(pieces, self._shapes, self.value_vars, strict=True)]

    def __call__(self, z):
        """(objective, gradient) at z; a point among the last few evaluated is not evaluated again (nor counted)."""
        key = np.asarray(z, dtype=np.float64).tobytes()
        if key not in self._recent:
            self.n_evaluations += 1
            f, g = self._value_and_grad(*self._split(z))
            self._recent[key] = (float(f), np.array(g, dtype=np.float64))  # a copy: the compiled function may reuse its output
            if len(self._recent) > RECENT_EVALUATIONS:
                self._recent.popitem(last=False)
        f, g = self._recent[key]
        return f, g.copy()

    def forget(self) -> None:
        """Drop the remembered evaluations and what was computed from the data alone (after the data or approximation
        behind the objective changed, or once the fit is done)."""
        self._recent.clear()
        self._value_and_grad.forget()

    def params(self, z) -> dict:
        """Natural-scale values of the free random variables at z."""
        values = self._natural(*self._split(z))
        return {rv.name: float(v) if np.ndim(v) == 0 else np.array(v) for rv, v in zip(self.model.free_RVs, values, strict=True)}

    def natural_jacobian(self, z) -> np.ndarray:
        """∂θ/∂z (natural values by unconstrained coordinates), built when first asked for (by the Laplace approximation)."""
        if self._jacobian is None:  # vectorize: one batched graph instead of a Scan over rows
            rows = self._natural_values.shape[0]
            jac = pt.concatenate([pt.reshape(pytensor.gradient.jacobian(self._natural_values, v, vectorize=True), (rows, -1))
                                  for v in self.value_vars], axis=1)
            self._jacobian = compiled_graph(list(self.value_vars), [jac], mode=NUMPY)
        return np.asarray(self._jacobian(*self._split(z))[0])

    def coordinate_owner(self) -> list[str]:
        return [self.model.values_to_rvs[v].name for v, s in zip(self.value_vars, self.sizes) for _ in range(s)]


def _starts(model, objective: _Objective, restarts: int, seed) -> list[np.ndarray]:
    """The model's initial point (its initvals), then where the data put some hyperparameters (`data_start`), then draws
    from the priors, else jitter, each with a finite objective."""
    starts = [objective.flat(objective.point)]
    from_data = data_start(objective, find_likelihood(model)[1], Z_LIMIT) if restarts > 1 else None
    if from_data is not None and np.isfinite(objective(from_data)[0]):
        starts.append(from_data)
    rng = np.random.default_rng(seed)
    prior = point_draws(model, "prior") if restarts > 1 else None

    @cache
    def jittered():  # compiled only if ten prior draws in a row give no finite objective
        with numpy_mode():  # a few draws each
            return make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)

    for _ in range(restarts - len(starts)):
        for attempt in range(20):
            make = prior if attempt < 10 else jittered()
            z = np.clip(objective.flat(make(rng.integers(2**31))), -Z_LIMIT, Z_LIMIT)
            if np.isfinite(objective(z)[0]):
                starts.append(z)
                break
    return starts


def _maximise(objective: _Objective, z0: np.ndarray, maxiter: int):
    # no bounds: with every coordinate boxed, L-BFGS-B's first trial step is the full gradient step
    # (not 1/|g|), which on ARD problems throws length scales to the box edge and stops there

    last = {}  # the latest evaluation, which is the iterate L-BFGS-B reports to the callback
    iterates = []  # (z, gradient of −objective) at each iterate, for the curvature pairs
    since_iterate = [0]  # evaluations since the latest iterate: the current line search's
    searching_from_iterate = [False]  # the current line search starts at iterates[-1] (its gradient is known)
    previous = [np.inf]  # −objective at the latest iterate
    finish_below = [FINISH_GAIN]  # the predicted gain of the rest under which `_finish_at_edges` is tried

    def record(z, g_negative):
        if not iterates or not np.array_equal(iterates[-1][0], z):
            iterates.append((np.asarray(z), g_negative))

    def negative(z):
        since_iterate[0] += 1
        if since_iterate[0] > STALLED_SEARCH and searching_from_iterate[0]:
            if _near_stationary(iterates[-1][1], _curvature_pairs(iterates), GAIN_TOL):
                raise _StalledSearch
        f, g = objective(z)
        last["z"], last["g"] = np.array(z), g
        if not iterates and np.isfinite(f):  # the first evaluation is at the start z0: the first iterate
            record(last["z"], -g)
        if not np.isfinite(f):  # C not positive definite here: a wall the line search backs away from
            return 1e300, np.zeros_like(z)
        return -f, -g

    def stop_at_round_off(intermediate_result):  # this parameter name makes SciPy pass f as well as x
        # L-BFGS-B's own tests (ftol, gtol) sit at the round-off floor of a sum of n log terms, where its line searches
        # can spend dozens of evaluations on noise: the stops of STOP_GRAD, ROUND_OFF_GAIN, STOP_GAIN, EDGE_GAIN above
        f = intermediate_result.fun
        gain, previous[0] = previous[0] - f, f
        since_iterate[0] = 0
        searching_from_iterate[0] = np.array_equal(last.get("z"), intermediate_result.x)
        if not searching_from_iterate[0]:
            return
        record(last["z"], -last["g"])
        pairs = _curvature_pairs(iterates)
        if _settled_short_of_edges(objective, last["z"], last["g"], pairs):
            raise StopIteration
        finished = _finish_at_edges(objective, last["z"], last["g"], pairs, finish_below)
        if finished is not None:
            raise _FinishedAtEdges(*finished)
        if gain > ROUND_OFF_GAIN * max(1.0, abs(f)):
            return
        if np.max(np.abs(last["g"]), initial=0.0) <= STOP_GRAD or _near_stationary(last["g"], pairs, STOP_GAIN):
            raise StopIteration

    try:
        res = scipy.optimize.minimize(
            negative, z0, jac=True, method="L-BFGS-B", callback=stop_at_round_off,
            options={"maxiter": maxiter, "maxfun": 4 * maxiter, "ftol": 1e-13, "gtol": 1e-7, "maxcor": CURVATURE_PAIRS},
        )
    except _StalledSearch:  # the latest iterate is the result, as after a line search that fails
        z, g = iterates[-1]
        res = scipy.optimize.OptimizeResult(x=z, fun=previous[0], jac=g, success=True, message="line search stalled")
    except _FinishedAtEdges as end:  # (no iterate: the step to the edges says nothing of the curvature of the rest)
        z, f, g = end.args
        res = scipy.optimize.OptimizeResult(x=z, fun=-f, jac=-g, success=True, message="finished at the edges")
    else:
        record(res.x, np.asarray(res.jac))
    res.curvature = _curvature_pairs(iterates)
    return res


class _StalledSearch(Exception):
    """A line search spent STALLED_SEARCH evaluations from an iterate within GAIN_TOL of a stationary point."""


class _FinishedAtEdges(Exception):
    """`_finish_at_edges` found where the run ends: (z, f, g)."""


def _near_stationary(g: np.ndarray, pairs: tuple, gain: float) -> bool:
    """max |g| ≤ GRAD_TOL and a Newton step would gain ≤ `gain`, with at least as many curvature pairs as parameters
    (up to CURVATURE_PAIRS): the L-BFGS estimate then rests on as many steps as there are directions (not necessarily
    independent ones), not only on the scale of the latest step."""
    S, Y = pairs
    return bool(
        np.max(np.abs(g), initial=0.0) <= GRAD_TOL and len(S) >= min(len(g), CURVATURE_PAIRS) and _newton_gain(g, S, Y) <= gain
    )


def _run_out(objective: _Objective, z: np.ndarray) -> np.ndarray:
    """Which coordinates of z have run out past AT_BOUND_Z towards an edge of their support (transformed ones only)."""
    return objective.transformed & (np.abs(z) >= AT_BOUND_Z)


def _rising_out(objective: _Objective, z: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Which coordinates have run out past AT_BOUND_Z with the objective still rising outwards."""
    return _run_out(objective, z) & (g * np.sign(z) > 0)


def _done_but_edges(g: np.ndarray, out: np.ndarray, pairs: tuple) -> bool:
    """At most EDGE_GAIN left to gain between the coordinates `out` (the sum of their gradients: a scale running to its
    edge has an e^{rz} tail) and the others stationary (`_near_stationary` to STOP_GAIN)."""
    return bool(np.sum(np.abs(g[out])) <= EDGE_GAIN and _near_stationary(np.where(out, 0.0, g), pairs, STOP_GAIN))


def _settled_short_of_edges(objective: _Objective, z: np.ndarray, g: np.ndarray, pairs: tuple) -> bool:
    """Coordinates rising out (`_rising_out`) and `_done_but_edges`: going on would only follow e^−|z| tails."""
    out = _rising_out(objective, z, g)
    return bool(out.any() and _done_but_edges(g, out, pairs))


def _finish_at_edges(objective: _Objective, z: np.ndarray, g: np.ndarray, pairs: tuple, finish_below: list) -> tuple | None:
    """Where a run can end at once, its tails followed out: the coordinates past AT_BOUND_Z still rising outwards put at
    their edges (|z| = Z_LIMIT), the others moved by up to FINISH_STEPS quasi-Newton steps H̃∇f from the run's curvature pairs;
    (z, f, g) there once `_done_but_edges` holds there, else None.

    Tried where the others' predicted gain is at most `finish_below[0]` (FINISH_GAIN, then a tenth of each failed try's)
    and the outward gradients sum to at most GRAD_TOL: a try spends its evaluations, and the run goes on as before. A
    step must not lower f, must cut the predicted gain at least FINISH_RATE-fold (on an ill-conditioned ridge the L-BFGS
    curvature cannot, and L-BFGS-B is left to it), and must leave no edge coordinate's gradient pointing back inwards.
    """
    out = _rising_out(objective, z, g)

    def rest(v):  # the other coordinates' part of v
        return np.where(out, 0.0, v)

    gain = _newton_gain(rest(g), *pairs)
    if not out.any() or gain > finish_below[0] or np.sum(np.abs(g[out])) > GRAD_TOL:
        return None
    finish_below[0] = gain / 10
    point, f = z.copy(), objective(z)[0]  # (the run's latest evaluation, remembered: not evaluated again)
    edges = np.sign(z[out]) * np.maximum(Z_LIMIT, np.abs(z[out]))  # (one already further out stays there)
    for _ in range(FINISH_STEPS):
        trial = point + rest(_newton_step(rest(g), *pairs))  # f rises along +H̃∇f: H̃ is of −f, which L-BFGS-B minimises
        trial[out] = edges
        f_trial, g_trial = objective(trial)
        gain_trial = _newton_gain(rest(g_trial), *pairs)
        inwards = np.any(g_trial[out] * np.sign(z[out]) < 0)  # a maximum passed on the way out: not a tail
        if not (np.isfinite(f_trial) and f_trial >= f and gain_trial <= gain / FINISH_RATE) or inwards:
            return None
        point, f, g, gain = trial, f_trial, g_trial, gain_trial
        if _done_but_edges(g, out, pairs):
            return point, f, g
    return None


def _curvature_pairs(iterates: list) -> tuple[np.ndarray, np.ndarray]:
    """The last CURVATURE_PAIRS steps s = Δz and gradient changes y = Δ∇(−objective) with sᵀy > 0, oldest first.

    `iterates`: (z, gradient of −objective) at each iterate of a run, in order.
    """
    points = [(z, g) for z, g in iterates if np.all(np.isfinite(g))]
    kept = []
    for a, b in zip(reversed(points[:-1]), reversed(points[1:])):  # newest first: the stop checks call this every iteration
        s, y = b[0] - a[0], b[1] - a[1]
        if np.all(np.isfinite(y)) and s @ y > 1e-12 * np.linalg.norm(s) * np.linalg.norm(y):
            kept.append((s, y))
            if len(kept) == CURVATURE_PAIRS:
                break
    kept.reverse()
    p = len(iterates[0][0]) if iterates else 0
    return np.array([s for s, _ in kept]).reshape(-1, p), np.array([y for _, y in kept]).reshape(-1, p)


def _newton_gain(g: np.ndarray, S: np.ndarray, Y: np.ndarray) -> float:
    """½ gᵀH̃g: what a Newton step would still gain (half the squared Newton decrement).

    H̃ ≈ (−∇²objective)⁻¹ is the L-BFGS estimate from the curvature pairs (S, Y), H₀ = γI with
    γ = sᵀy / yᵀy of the latest pair (Nocedal & Wright 7.20). SciPy's LbfgsInvHessProduct starts from
    H₀ = I; with the pairs (s, γy) it gives H̃/γ.
    """
    return 0.5 * float(g @ _newton_step(g, S, Y))


def _newton_step(g: np.ndarray, S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """H̃g, the quasi-Newton step of `_newton_gain` (g itself without curvature pairs)."""
    if len(S) == 0:
        return g
    gamma = float(S[-1] @ Y[-1] / (Y[-1] @ Y[-1]))
    return gamma * LbfgsInvHessProduct(S, gamma * Y).matvec(g)


def _predicted_gain(res, free: np.ndarray) -> float:
    """`_newton_gain` over the free coordinates at where the run stopped, with the run's curvature pairs."""
    return _newton_gain(np.where(free, res.jac, 0.0), *res.curvature)


def _at_edge(objective: _Objective, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which coordinates ran out to the edge of their support, and which of those stopped at a cliff.

    Both tests look past the point where the optimiser stopped — that point, on a flat way out, is a
    matter of round-off — to the gradient there and to the objective at the edge of the box.
    """
    f0, g = objective(z)
    edge, cliff = np.zeros(len(z), dtype=bool), np.zeros(len(z), dtype=bool)
    for i in np.flatnonzero(_run_out(objective, z)):
        outwards = np.sign(z[i])
        if g[i] * outwards > GRAD_TOL:  # still rising outwards: stopped by a cliff (or maxiter), not a maximum
            edge[i] = cliff[i] = True
            continue
        far = z.copy()
        far[i] = outwards * max(Z_LIMIT, abs(z[i]))
        f1 = objective(far)[0]
        edge[i] = bool(np.isfinite(f1) and f1 >= f0 - EDGE_FLAT)  # flat or rising all the way out
    return edge, cliff


def _past_cliffs(objective: _Objective, res, maxiter: int):
    """A run that stopped at a cliff on its way to an edge, continued from beyond the cliff.

    Noise-free data: log p(t | θ) rises as σ → 0 until K + σ²I is singular to round-off, where the
    jitter takes over and the objective drops onto a plateau. Whether a line search stops on the cliff
    top or jumps onto the plateau is round-off; the edge is σ → 0 either way, and beyond the cliff
    every run ends alike.
    """
    for _ in range(EDGE_RETRIES):
        if not (np.isfinite(res.fun) and res.fun < 1e299):
            break
        _, cliff = _at_edge(objective, res.x)
        if not cliff.any():
            break
        z = res.x.copy()
        z[cliff] = np.clip(z[cliff] + EDGE_STEP * np.sign(z[cliff]), -Z_LIMIT, Z_LIMIT)
        further = _maximise(objective, z, maxiter)
        if not (np.isfinite(further.fun) and further.fun < 1e299):
            break
        res = further
    return res


def _bound(objective: _Objective, z: np.ndarray, edge: np.ndarray) -> dict:
    """The edge each parameter at it ran to: its natural value with its edge coordinates at ±∞."""
    if not edge.any():
        return {}
    limit = z.copy()
    limit[edge] = np.sign(z[edge]) * np.inf
    owners = objective.coordinate_owner()
    with np.errstate(all="ignore"):
        values = objective.params(limit)
    return {name: v for name, v in values.items() if any(e and o == name for e, o in zip(edge, owners, strict=True))}


def _laplace(objective: _Objective, z: np.ndarray, names: list[str], at_edge: np.ndarray, rows: int) -> Laplace:
    """Hessian by central differences of the exact gradient; sd on the natural scale by the delta method.

    Coordinates at the edge of their support are left out (their sd is NaN): the Hessian is inverted
    on the others. The gradients on the fit's BLAS threads (`rows`: the fit's problem size), whenever this is asked for.
    """
    counted = objective.n_evaluations
    p = len(z)
    H = np.empty((p, p))
    with blas_for_size(rows):
        for j in range(p):
            h = 1e-5 * max(1.0, abs(z[j]))
            e = np.zeros(p)
            e[j] = h
            H[:, j] = (objective(z + e)[1] - objective(z - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    inner = ~at_edge
    block = -H[np.ix_(inner, inner)]
    eig = np.linalg.eigvalsh(block) if inner.any() else np.ones(1)
    ok = bool(np.all(np.isfinite(block)) and eig.min() > 1e-12 * max(1.0, eig.max()))
    cov = np.full((p, p), np.nan)
    if ok and inner.any():
        cov[np.ix_(inner, inner)] = np.linalg.inv(block)
    J = objective.natural_jacobian(z)[:, inner]  # ∂θ/∂z over the coordinates kept
    sd_flat = np.sqrt(np.clip(np.diag(J @ cov[np.ix_(inner, inner)] @ J.T), 0.0, None)) if ok else np.full(J.shape[0], np.nan)
    touched = np.abs(objective.natural_jacobian(z)[:, at_edge]).sum(axis=1) > 0  # natural values moved by an edge coordinate
    sd_flat = np.where(touched, np.nan, sd_flat)
    sd, i = {}, 0
    for name, value in objective.params(z).items():
        size = int(np.size(value))
        sd[name] = float(sd_flat[i]) if np.ndim(value) == 0 else sd_flat[i : i + size].reshape(np.shape(value))
        i += size
    objective.forget()  # the result keeps the objective, not the values of its data
    return Laplace(sd, cov, tuple(names), ok, objective.n_evaluations - counted)


def empirical_bayes(model=None, restarts: int = 5, seed=None, include_prior: bool = False, maxiter: int = 500) -> EmpiricalBayesResult:
    """Maximise log p(t | θ) (or log p(t | θ) + log p(θ), MAP-II, with `include_prior`) over the hyperparameters θ.

    `model`: a PyMC model (the context's if not given) whose only observed variable is a marginal
    Gaussian from `bayeskern.gp.marginal_likelihood` or `bayeskern.blr.likelihood(collapsed=True)`;
    its free random variables are the hyperparameters, and their priors fix only their supports
    unless `include_prior`. The optimiser is L-BFGS-B in PyMC's unconstrained space with the exact
    gradient, from `restarts` starts: the model's initial point (honouring `initval`); then, for a Bayesian linear
    regression whose prior variance Σ = α⁻¹ is one hyperparameter, α and β = σ⁻² at the evidence's best fixed point
    from data-scaled starts (`evidence_approximation`'s; its maxima can lie far apart, far in the priors' tails); then
    draws from the priors (`seed`). Warns (FitWarning) when not converged, at a bound, or when restarts
    find different optima.
    """
    started = time.perf_counter()
    model, seed = pm.modelcontext(check_model(model)), check_seed(seed)
    restarts, maxiter = check_integer(restarts, "restarts", 1), check_integer(maxiter, "maxiter", 1)
    include_prior = check_flag(include_prior, "include_prior")
    obs, record = find_likelihood(model)
    if not model.free_RVs:
        raise ValueError("the model has no free random variables: there are no hyperparameters to fit")
    with untraced():  # bayeskern's own graphs (objective, starts, conditioned model): no creation stack recorded
        objective = _Objective(model, obs, include_prior)
        plug_in = PlugIn(model, record)
        # the objective's large temporaries kept from one evaluation to the next, let go at the end; a small problem's BLAS
        # on one thread (`bayeskern._blas`: as fast, and not slowed 10× by cores busy with other work) for every evaluation
        # of the fit, the first (remembered by the objective) among them: the same numbers whatever threads the caller has
        with reused_arrays(), blas_for_size(record.size()):
            _check_initial_point(objective, plug_in)
            compile_seconds = time.perf_counter() - started
            runs = _optimise(model, objective, restarts, seed, maxiter)
            runs, plug_in = _refine(obs, objective, plug_in, runs, maxiter)
            result = _result(objective, plug_in, runs, include_prior, time_started=started, compile_seconds=compile_seconds,
                             rows=record.size())
    objective.forget()  # the result keeps the objective for its Laplace approximation, not the values of its data
    _warn(result)
    return result


def _check_initial_point(objective: _Objective, plug_in: PlugIn) -> None:
    """The objective at the model's initial point must be finite (this first call also compiles it); where it is not,
    the model conditioned there says why when it can (e.g. features too ill-conditioned for float64)."""
    z = objective.flat(objective.point)
    if np.isfinite(objective(z)[0]):
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a jitter it needed: the message below says what is wrong)
            plug_in.numeric(objective.params(z)).condition()
    except ValueError as err:
        raise ValueError(f"the log marginal likelihood is not finite at the model's initial point: {err}") from None
    raise ValueError(
        "the log marginal likelihood is not finite at the model's initial point: its covariance C (K + sigma^2 I, or "
        "Phi Sigma Phi^T + sigma^2 I) is not positive definite there (or a prior gives zero density); set initval on "
        "the hyperparameters or check the kernel or features"
    )


def _optimise(model, objective: _Objective, restarts: int, seed, maxiter: int) -> list:
    """One L-BFGS-B run per start (continued past cliffs), the finite ones, best first."""
    runs = []
    for z0 in _starts(model, objective, restarts, seed):
        res = _past_cliffs(objective, _maximise(objective, z0, maxiter), maxiter)
        if np.isfinite(res.fun) and res.fun < 1e299:
            runs.append(res)
    if not runs:
        raise ValueError(
            "every start ended where K + sigma^2 I cannot be factorised, even with jitter: check the kernel "
            "(is it positive semi-definite?) and the priors' supports"
        )
    return sorted(runs, key=lambda r: r.fun)


def _refine(obs, objective: _Objective, plug_in: PlugIn, runs: list, maxiter: int) -> tuple[list, PlugIn]:
    """An approximation chosen by the package (HSGP's automatic basis) is re-chosen at the optimum; when it changes,
    every run continues from where it stopped, on the new one, until the choice holds (at most MAX_REFINEMENTS times)."""
    for _ in range(MAX_REFINEMENTS):
        record = obs.tag.bayeskern.refined(plug_in.numeric(objective.params(runs[0].x)))
        if record is None:
            return runs, plug_in
        record.install()
        attach(obs, record)
        objective.forget()  # the same z has another objective now
        plug_in = plug_in.with_record(record)
        runs = sorted((_past_cliffs(objective, _maximise(objective, res.x, maxiter), maxiter) for res in runs), key=lambda r: r.fun)
    if obs.tag.bayeskern.refined(plug_in.numeric(objective.params(runs[0].x))) is not None:
        warnings.warn(f"the approximation chosen by the package still changed after {MAX_REFINEMENTS} refits; the fit keeps "
                      "the last one: give its settings explicitly (e.g. HSGP's m and c)", FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
    return runs, plug_in


def _group_optima(runs: list, objective=lambda res: res.fun) -> list[tuple]:
    """Runs (best first) whose objectives differ by less than LML_SAME are one optimum: (best run of it, number of starts)."""
    optima: list[tuple] = []
    for res in runs:
        for k, (other, count) in enumerate(optima):
            if abs(objective(res) - objective(other)) < LML_SAME:
                optima[k] = (other, count + 1)
                break
        else:
            optima.append((res, 1))
    return optima


def _conditioned_at(plug_in: PlugIn, params: dict):
    """The model conditioned at `params`; its jitter is reported once, by `_warn`, not as a RuntimeWarning here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return plug_in.condition(params)


def _result(objective: _Objective, plug_in: PlugIn, runs: list, include_prior: bool, *, time_started, compile_seconds, rows: int):
    """The result at the best run: edges, convergence, optima, and the model conditioned there."""
    owners = objective.coordinate_owner()
    edges = {id(res): _at_edge(objective, res.x)[0] for res in runs}
    gains = {id(res): _predicted_gain(res, ~edges[id(res)]) for res in runs}

    def converged(res) -> bool:  # not res.success: L-BFGS-B reports a failed line search at the objective's round-off floor
        return bool(gains[id(res)] <= GAIN_TOL)

    best, edge = runs[0], edges[id(runs[0])]
    params = objective.params(best.x)
    conditioned = _conditioned_at(plug_in, params)

    def lml(res) -> float:  # with the prior the objective is not the LML: condition there (the best one is already)
        if not include_prior:
            return -res.fun
        return (conditioned if res is best else _conditioned_at(plug_in, objective.params(res.x))).log_marginal_likelihood
    optima = tuple(Optimum(objective.params(r.x), float(-r.fun), float(lml(r)), converged(r), c) for r, c in _group_optima(runs))
    return EmpiricalBayesResult(
        params=params, log_marginal_likelihood=conditioned.log_marginal_likelihood, objective=float(-best.fun),
        include_prior=include_prior, converged=converged(best), predicted_gain=gains[id(best)],
        grad_norm=float(np.max(np.abs(best.jac), initial=0.0)),
        at_bound={name: bool(np.any(edge[[o == name for o in owners]])) for name in dict.fromkeys(owners)},
        n_evaluations=objective.n_evaluations, jitter=conditioned.jitter, optima=optima,
        seconds=time.perf_counter() - time_started, compile_seconds=compile_seconds, plug_in=plug_in,
        conditioned=conditioned, bound=_bound(objective, best.x, edge),
        laplace_at=lambda: _laplace(objective, best.x, owners, edge, rows),
    )


def _warn(result: EmpiricalBayesResult) -> None:
    if result.jitter > 0:
        warnings.warn(
            f"at the optimum the covariance of the data, C = K + sigma^2 I (Phi Sigma Phi^T + sigma^2 I for a BLR), "
            f"is not numerically positive definite: jitter {result.jitter:.3g} was added to its diagonal "
            "(the noise is too small for the model's resolution of these inputs)",
            FitWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )
    if not result.converged:
        warnings.warn(
            f"empirical_bayes did not converge: a Newton step from where it stopped would still gain "
            f"{result.predicted_gain:.3g} in the objective (tolerance {GAIN_TOL:g}; max |gradient| {result.grad_norm:.3g}); "
            "try more restarts or a larger maxiter",
            FitWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )
    bound = [name for name, flag in result.at_bound.items() if flag]
    if bound:
        warnings.warn(
            f"parameter(s) at the edge of their support: {', '.join(_edge_text(result, n) for n in bound)}; "
            "the data do not pin them down",
            FitWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )
    for message in result.plug_in.numeric(result.params).fit_warnings(result.conditioned):
        warnings.warn(message, FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
    if len(result.optima) > 1:
        second = result.optima[1]
        warnings.warn(
            f"restarts found {len(result.optima)} distinct optima; kept the best (objective {result.objective:.6g}), "
            f"next best {second.objective:.6g} — see .optima",
            FitWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )


def _edge_text(result: EmpiricalBayesResult, name: str) -> str:
    """'s → 0' for a scalar at its edge; 'theta[2] → 0, theta[3] → 0' for the elements of a vector at theirs."""
    edge, stopped = np.asarray(result.bound[name]), np.asarray(result.params[name])
    if edge.ndim == 0:
        return f"{name} → {edge:.3g}"
    moved = np.argwhere(edge != stopped)  # elements not at the edge keep the value the optimiser stopped at
    if len(moved) == 0:  # a transform coupling the elements: name the whole vector
        return f"{name} → {np.array2string(edge, precision=3)}"
    return ", ".join(f"{name}[{', '.join(map(str, i))}] → {edge[tuple(i)]:.3g}" for i in moved)
