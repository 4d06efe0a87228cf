"""Variational inducing points (Titsias 2009): the collapsed lower bound on log p(t) for any PSD kernel, O(nM²).

With inducing inputs Z (M × d), Q = K_fu K_uu⁻¹ K_uf is the Nyström approximation of K(X, X), and the
collapsed bound is  F(θ) = log N(t | 0, Q + σ²I) − tr(K − Q) / (2σ²) ≤ log p(t)  (Titsias 2009, eq. 9).
Q is a Bayesian linear regression on the M features φ(x) = L⁻¹k(Z, x) (K_uu = LLᵀ) with w ~ N(0, I), so
the conditioned model is the package's weight-space solver, with the trace term subtracted from its
evidence and k(x, x) − φ(x)ᵀφ(x) added to its predictive variance (the VFE/DTC predictive).
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.tensor.linalg import cholesky, solve_triangular

from bayeskern._linalg import exact_cholesky, solve_lower
from bayeskern._validation import PACKAGE_DIR, as_inputs, check_integer, check_kernel, check_name, check_sigma, is_symbolic, numerical_failure, owned_data, same_columns
from bayeskern.approx._titsias import INDUCING_JITTER, titsias_bound
from bayeskern.blr import DesignRows, WeightSpaceBLR
from bayeskern.features import KernelProjection, design_matrix
from bayeskern.kernels import Kernel
from bayeskern.likelihood import KernelLikelihood, attach

__all__ = ["VFE", "InducingFeatures", "InducingPosterior", "VFELikelihood"]

#: inducing points chosen when neither `inducing` nor `n_inducing` is given (all points when n is smaller)
DEFAULT_N_INDUCING = 300
#: k-means runs on at most this many points per inducing point (a seeded subsample beyond)
KMEANS_POINTS_PER_CENTER = 50


#: a RuntimeWarning (a FitWarning at an EB optimum) when the jitter δ on K_uu costs the trace term at least this many nats:
#: a Bayes factor of e between models compared by their bounds
JITTER_COST_WARNING = 1.0
#: from this many nats of `jitter_trace_cost` and the log N term's first-order share on, the bound is also computed with
#: δ/JITTER_PROBE, and the difference is what the jitter costs the whole bound (`jitter_bound_cost`): with Z = X and σ below the data's noise the trace term's share
#: was 0.74 nats but the bound moved by 19 (the log N(t | 0, Q + σ²I) term too, the same way), 26×; a review's share of
#: 0.01 moved it by 0.12, 12×; a user trial's (a very smooth kernel on 60 inducing points) 0.0014 moved it by 1.19, 870×,
#: where the log N term's first-order share was 1.192. From 0.05 of the two shares (1/20 of the warning's 1 nat) a second
#: build of the bound is paid where it can matter
MEASURE_JITTER_FROM, JITTER_PROBE = 0.05, 100.0


def _jitter(Kuu, lib):
    return INDUCING_JITTER * lib.mean(lib.diagonal(Kuu))  # δ = INDUCING_JITTER · mean diag K_uu


def _jittered(Kuu, lib, jitter=None):
    delta = _jitter(Kuu, lib) if jitter is None else jitter
    return Kuu + delta * lib.eye(Kuu.shape[0])  # K_uu + δI


def _kernel_recomputed(kernel: Kernel, Z, X):
    """K(Z, X) as one Op of the hyperparameters, whose gradient recomputes the kernel inside its own fused pass.

    Inlined, PyTensor would keep every intermediate of the forward pass (per-column differences, squares,
    exponentials: a dozen M × n arrays) for the backward pass that follows the bound's Op; recomputing costs
    one pass. Measured at n = 20 000, M = 300, 5-D ARD RBF: 0.30 s instead of 0.88 s per value and gradient.
    """
    nodes = [(node, name, pt.as_tensor_variable(v)) for node in kernel.walk() for name, v in node.parameters().items()]
    stand_ins = [v.type() for _, _, v in nodes]
    bound = {}
    for (node, name, _), s in zip(nodes, stand_ins):
        bound.setdefault(id(node), {})[name] = s
    z, x = Z.type(), X.type()
    K = kernel._build(z, x, False, lambda node: bound.get(id(node), {}))
    return OpFromGraph([*stand_ins, z, x], [K])(*(v for _, _, v in nodes), Z, X)


class InducingFeatures(KernelProjection):
    """φ(x) = L⁻¹k(Z, x) with K_uu + δI = LLᵀ: φ(x)ᵀφ(x′) = k(x, Z)(K_uu + δI)⁻¹k(Z, x′), the Nyström kernel Q. `jitter`: δ."""

    @numerical_failure("the kernel's values at the inducing points overflow float64 or are not positive definite: scale or center X")
    def __init__(self, kernel, Z: np.ndarray, jitter: float | None = None):
        Kuu = kernel.evaluate(Z)
        self.jitter = float(_jitter(Kuu, np)) if jitter is None else jitter  # δ (given: a probe of its effect)
        L = exact_cholesky(_jittered(Kuu, np, self.jitter))
        if L is None:
            raise ValueError(
                f"the kernel {kernel!r} is not positive definite at the inducing points (K_uu + δI has no Cholesky "
                "factor): VFE needs a PSD kernel; check it with bayeskern.checks.psd"
            )
        super().__init__(kernel, Z, solve_lower(L, np.eye(len(Z))).T)  # P = L⁻ᵀ: φ(x) = L⁻¹k(Z, x)

    def _repr_args(self):
        return {"n_inducing": len(self.X_basis)}


class InducingPosterior(WeightSpaceBLR):
    """The VFE model conditioned on t: the weight-space solver on `InducingFeatures` with w ~ N(0, I), plus the parts Q leaves out.

    `log_marginal_likelihood` is the bound F (the BLR's log N(t | 0, Q + σ²I) minus `trace_term` = tr(K − Q)/(2σ²));
    `nystrom_residual` = tr(K − Q)/tr(K), how much prior variance the inducing points miss at the data.
    `inducing_jitter`: δ, added to K_uu always (a fixed INDUCING_JITTER relative to its mean diagonal, as GPflow and
    PyMC do, so that close inducing points keep the bound's gradient stable; Q is then the Nyström kernel of K_uu + δI,
    still ≤ K). `jitter_trace_cost`: a lower bound on the nats of `trace_term` that come from δ rather than from the
    inducing points, δ·‖(K_uu + δI)⁻¹K_uf‖²_F/(2σ²); it grows as σ⁻². From MEASURE_JITTER_FROM nats of it and of
    the log N(t | 0, Q + σ²I) term's first-order share, ½δ‖(K_uu + δI)⁻¹K_uf α‖² (α = (Q + σ²I)⁻¹t), on,
    `jitter_bound_cost` is what δ costs the whole bound, measured as F(δ/JITTER_PROBE) − F (None below, or where K_uu
    with that little jitter has no Cholesky factor: then the trace term's share stands for it); a RuntimeWarning says
    when the cost reaches JITTER_COST_WARNING. The
    predictive of f at x adds k(x, x) − φ(x)ᵀφ(x) to the BLR's variance (Titsias 2009, eq. 6). Leave-one-out
    is that of the training model N(0, Q + σ²I).
    """

    def __init__(self, kernel: Kernel, Z: np.ndarray, X: np.ndarray, t: np.ndarray, sigma: float, jitter: float | None = None):
        self.kernel, features = kernel, InducingFeatures(kernel, Z, jitter)
        rows = DesignRows(features, X, t)
        super().__init__(features, X, t, sigma, np.ones(rows.M), rows)
        prior = float(np.sum(kernel._values(X, diag=True)))  # tr K
        explained = rows.sum_of_squares  # tr Q = ‖Φ‖²_F
        residual = max(prior - explained, 0.0)  # tr(K − Q) ≥ 0; round-off below 0 is 0
        self.nystrom_residual = residual / prior if prior > 0 else 0.0
        self.trace_term = residual / (2.0 * sigma**2)
        self.log_marginal_likelihood -= self.trace_term  # F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²)
        self.inducing_jitter = features.jitter
        # Q₀ − Q_δ = δ K_fu K_uu⁻¹(K_uu + δI)⁻¹K_uf ⪰ δ K_fu (K_uu + δI)⁻²K_uf, and (K_uu + δI)⁻¹K_uf = PΦᵀ with P = L⁻ᵀ,
        # so tr(Q₀ − Q_δ) ≥ δ‖PΦᵀ‖²_F = δ tr(PᵀP ΦᵀΦ)
        P = features.projection
        self.jitter_trace_cost = features.jitter * float(np.sum((P.T @ P) * rows.gram)) / (2.0 * sigma**2)
        # the log N term's share to first order, ½δ αᵀK_fu(K_uu + δI)⁻²K_uf α = ½δ‖PΦᵀα‖², Φᵀα = m_w (w ~ N(0, I))
        fit_share = 0.5 * features.jitter * float(np.sum((P @ self.weights_mean) ** 2))
        self.jitter_bound_cost = None
        if jitter is None and self.jitter_trace_cost + fit_share >= MEASURE_JITTER_FROM:
            tighter = self._bound_with(kernel, Z, X, t, sigma, features.jitter / JITTER_PROBE)
            self.jitter_bound_cost = None if tighter is None else tighter - self.log_marginal_likelihood
        for message in self.jitter_warnings():
            warnings.warn(message, RuntimeWarning, skip_file_prefixes=(PACKAGE_DIR,))  # at the caller's line

    @staticmethod
    def _bound_with(kernel, Z, X, t, sigma, jitter: float) -> float | None:
        """The bound F with `jitter` on K_uu instead; None where K_uu + jitter·I has no Cholesky factor (no measure)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                return InducingPosterior(kernel, Z, X, t, sigma, jitter).log_marginal_likelihood
            except ValueError:
                return None

    def jitter_warnings(self) -> list[str]:
        """What the jitter δ costs the bound, when it reaches JITTER_COST_WARNING nats (else nothing): the measured
        `jitter_bound_cost` where there is one, else the trace term's share, `jitter_trace_cost`."""
        advice = (f"(it grows as 1/σ², σ = {self.sigma:.3g} here): with noise this small, use fewer or farther-apart inducing "
                  "points, or the exact GP")
        if self.jitter_bound_cost is not None and self.jitter_bound_cost >= JITTER_COST_WARNING:
            return [f"the jitter δ = {self.inducing_jitter:.3g} on K_uu lowers the VFE bound by {self.jitter_bound_cost:.3g} nats (the "
                    f"bound with δ/{JITTER_PROBE:g} is that much higher; {self.jitter_trace_cost:.3g} of them at least in the trace "
                    f"term tr(K − Q)/(2σ²)), so the bound and its predictions are those of the jittered K_uu {advice}"]
        if self.jitter_bound_cost is not None or self.jitter_trace_cost < JITTER_COST_WARNING:
            return []
        return [f"the jitter δ = {self.inducing_jitter:.3g} on K_uu adds at least {self.jitter_trace_cost:.3g} nats to the VFE bound's "
                f"trace term tr(K − Q)/(2σ²), which these inducing points would not miss without it, so the bound is that much "
                f"looser in that term {advice}"]

    def _latent(self, Xnew, full_cov):
        Phi_new = design_matrix(self.features, Xnew)
        mean, var, cov = self._from_features(Phi_new, full_cov)
        missed = self.kernel._values(Xnew, diag=True) - np.sum(Phi_new**2, axis=1)  # k(x, x) − q(x, x) ≥ 0
        var = var + np.maximum(missed, 0.0)
        if full_cov:
            cov = cov + self.kernel._values(Xnew) - Phi_new @ Phi_new.T  # K** − Q**
        return mean, var, cov

    def prior_variance(self, Xnew) -> float:
        return float(np.max(self.kernel._values(Xnew, diag=True), initial=0.0))

    def draws_from(self, prediction, n: int, rng: np.random.Generator) -> np.ndarray:
        return super(WeightSpaceBLR, self).draws_from(prediction, n, rng)  # K** − Q** is not in weight space: the covariance's route


def _check_inducing(inducing, n_inducing):
    if inducing is not None and n_inducing is not None:
        raise ValueError("give inducing (the points) or n_inducing (how many to choose), not both")
    if n_inducing is not None:
        check_integer(n_inducing, "n_inducing", 1)
    if inducing is not None:
        if is_symbolic(inducing):
            raise ValueError("inducing must be numbers (the inducing inputs Z, (M, d)); they are not fitted")
        as_inputs(inducing, "inducing")


@dataclass(frozen=True)
class VFE:
    """Titsias' variational inducing points, for `approx=` of `bayeskern.gp.marginal_likelihood` and `bayeskern.gp.condition`.

    `inducing`: the inducing inputs Z (M, d), fixed. `n_inducing`: how many to choose instead, by k-means
    on X (seeded by `seed`; on a subsample of KMEANS_POINTS_PER_CENTER·M rows when n is larger); neither:
    DEFAULT_N_INDUCING. With n ≤ M the data points themselves. Any PSD kernel, any input dimension; the
    model's log density is the collapsed bound F ≤ log p(t), O(nM²) per evaluation. The inducing inputs
    are not optimised: more of them (or better placed ones) can only raise F.
    """

    inducing: object = field(default=None, repr=False)
    n_inducing: int | None = None
    seed: int = 0

    def __post_init__(self):
        _check_inducing(self.inducing, self.n_inducing)
        check_integer(self.seed, "seed", 0)

    def __repr__(self) -> str:
        given = f"inducing=<{len(as_inputs(self.inducing, 'inducing'))} points>" if self.inducing is not None else f"n_inducing={self.n_inducing}"
        return f"VFE({given})" if self.seed == 0 else f"VFE({given}, seed={self.seed})"

    def inducing_points(self, X: np.ndarray) -> np.ndarray:
        """Z for the data X: as given (checked against X's columns), else k-means centres of X (X itself when n ≤ M)."""
        if self.inducing is not None:
            Z = as_inputs(self.inducing, "inducing")
            same_columns(X, Z, "X", "inducing")
            return Z
        M = self.n_inducing or DEFAULT_N_INDUCING
        if len(X) <= M:
            return X.copy()
        from scipy.cluster.vq import kmeans2  # here, not at the top: importing scipy.cluster costs every GP fit ~0.05 s

        rng = np.random.default_rng(self.seed)
        points = X[rng.choice(len(X), KMEANS_POINTS_PER_CENTER * M, replace=False)] if len(X) > KMEANS_POINTS_PER_CENTER * M else X
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty cluster is re-seeded by '++'; its warning is not the user's
            Z, _ = kmeans2(points, M, minit="++", seed=rng)
        return np.unique(Z, axis=0)  # coincident centres would make K_uu singular

    def marginal_likelihood(self, name: str, X, y, kernel: Kernel, sigma, **kwargs):
        """Add the collapsed VFE bound as the log density of y to the current PyMC model (see `bayeskern.gp.marginal_likelihood`)."""
        name, (X, t) = check_name(name), owned_data(X, y)  # (kept by the likelihood's record: not the caller's arrays)
        kernel, sigma = check_kernel(kernel), check_sigma(sigma, allow_zero=False)
        kernel._check_tree_input_dim(X.shape[1])
        Z = self.inducing_points(X)
        X_data = pytensor.shared(X, name=f"{name}_X", shape=(None, X.shape[1]))
        Z_data = pytensor.shared(Z, name=f"{name}_Z", shape=(None, X.shape[1]))
        y_data = pytensor.shared(t, name=f"{name}_y", shape=(None,))
        Kuu, Kuf, kdiag = kernel.full(Z_data), _kernel_recomputed(kernel, Z_data, X_data), kernel.diag(X_data)

        def generate(Kuu, Kuf, kdiag, sigma, size):
            L = cholesky(_jittered(Kuu, pt), lower=True)
            Phi = solve_triangular(L, Kuf, lower=True).T  # φ(x) = L⁻¹k(Z, x): prior draws of the Nyström model Q
            z = pm.Normal.dist(0.0, 1.0, shape=(Phi.shape[1],))
            return pt.dot(Phi, z) + pm.Normal.dist(0.0, sigma, shape=(Phi.shape[0],))

        def logp(value, Kuu, Kuf, kdiag, sigma):
            return titsias_bound(Kuu, Kuf, kdiag, value, sigma)

        obs = pm.CustomDist(name, Kuu, Kuf, kdiag, sigma, dist=generate, logp=logp, signature="(m,m),(m,n),(n),()->(n)", observed=y_data, **kwargs)
        return attach(obs, VFELikelihood(X, t, sigma, kernel, Z))

    def condition(self, kernel: Kernel, X: np.ndarray, t: np.ndarray, sigma: float, box_of: np.ndarray | None = None) -> InducingPosterior:
        """The VFE model at numeric hyperparameters (see `bayeskern.gp.condition`); `box_of`: the inputs the inducing points are chosen from (X if None)."""
        kernel = check_kernel(kernel)
        kernel._check_tree_input_dim(X.shape[1])
        return InducingPosterior(kernel, self.inducing_points(X if box_of is None else box_of), X, t, sigma)


@dataclass(frozen=True)
class VFELikelihood(KernelLikelihood):
    """The record of the collapsed VFE bound in a PyMC model: data, σ, the exact kernel and the inducing inputs Z."""

    X: np.ndarray
    y: np.ndarray
    sigma: object
    kernel: Kernel
    inducing: np.ndarray = field(repr=False)

    def check_inputs(self, X: np.ndarray) -> None:
        self.kernel._check_tree_input_dim(X.shape[1])

    def condition(self, predict_at=None) -> InducingPosterior:  # (predictions go through the inducing points: nothing to prepare)
        return InducingPosterior(self.kernel, self.inducing, self.X, self.y, float(self.sigma))

    def fit_warnings(self, conditioned=None) -> list[str]:
        """The jitter on K_uu costing the trace term JITTER_COST_WARNING nats or more at these (fitted) hyperparameters."""
        if conditioned is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # said here, once
                conditioned = self.condition()
        return conditioned.jitter_warnings()
