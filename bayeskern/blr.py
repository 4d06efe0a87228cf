"""Bayesian linear regression in weight space: the PyMC likelihood, the analytic posterior and the evidence.

Model: w ~ N(0, Σ), t = Φw + ε, ε ~ N(0, σ²I), with Φ = φ(X) from a feature map. Everything is
computed through Σ = L Lᵀ and B = I + ΨᵀΨ/σ² with Ψ = ΦL, whose eigenvalues are ≥ 1, so the M × M
factorisation never needs jitter and Σ is never inverted.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.linalg

from bayeskern._linalg import LOG_2PI, _factor, cho_solve, solve_lower
from bayeskern._marginal import MarginalGaussian
from bayeskern._results import Posterior
from bayeskern._validation import (
    as_inputs, as_targets, check_name, check_prior_cov, check_sigma, check_weight_precision, is_symbolic, numerical_failure,
    offset_ratio, same_columns,
)
from bayeskern.features import design_matrix

__all__ = ["BLRPosterior", "likelihood", "posterior"]


def _prior_factor(S, M: int, lib):
    """L with Σ = L Lᵀ, for Σ a scalar (s·I), a vector (diagonal) or a matrix; `lib` is np or pt."""
    if S.ndim == 0:
        return lib.sqrt(S) * lib.eye(M)
    if S.ndim == 1:
        return lib.diag(lib.sqrt(S))
    return pt.linalg.cholesky(S) if lib is pt else scipy.linalg.cholesky(S, lower=True)


def _log_evidence_symbolic(t, Phi, S, sigma):
    """log N(t | 0, ΦΣΦᵀ + σ²I), in O(n M²) through the M × M matrix B (Woodbury)."""
    n, M = Phi.shape[0], Phi.shape[1]
    Psi = pt.dot(Phi, _prior_factor(S, M, pt))  # Ψ = Φ L
    LB = pt.linalg.cholesky(pt.eye(M) + pt.dot(Psi.T, Psi) / sigma**2)  # B = I + ΨᵀΨ/σ²
    v = pt.linalg.solve_triangular(LB, pt.linalg.solve_triangular(LB, pt.dot(Psi.T, t), lower=True), lower=True, trans=1)
    v = v / sigma**2  # v = B⁻¹Ψᵀt/σ² = L⁻¹ m_N
    # tᵀC⁻¹t = ‖t − Φm_N‖²/σ² + m_NᵀΣ⁻¹m_N   (PRML 3.82, 3.86 with a general Σ)
    quad = pt.sum((t - pt.dot(Psi, v)) ** 2) / sigma**2 + pt.sum(v**2)
    # log|C| = 2n log σ + log|B|
    return -0.5 * quad - n * pt.log(sigma) - pt.sum(pt.log(pt.diagonal(LB))) - 0.5 * n * LOG_2PI


def likelihood(name: str, X, y, features, prior_cov, sigma, collapsed: bool = False, **kwargs):
    """Add Bayesian linear regression t = Φw + ε to the current PyMC model.

    `features`: φ, a feature map or callable X → Φ (n, M). `prior_cov`: Σ, the prior covariance of
    w — a scalar α⁻¹, a vector (diagonal), an (M, M) SPD matrix, or a PyMC random variable of those
    shapes. `sigma`: σ > 0, the noise standard deviation. With `collapsed=False` the weights are
    explicit: `{name}_weights` ~ N(0, Σ) and t ~ N(Φw, σ²I). With `collapsed=True` they are
    integrated out: t ~ N(0, ΦΣΦᵀ + σ²I), evaluated in weight space in O(n M²).
    Extra keyword arguments go to the observed distribution. Returns the observed variable.
    """
    name, X = check_name(name), as_inputs(X, "X")
    t = as_targets(y, X.shape[0], "y")
    Phi = design_matrix(features, X, "features")
    _warn_if_far_from_zero(features, X, Phi)
    M = Phi.shape[1]
    S = check_prior_cov(prior_cov, M)
    sigma = check_sigma(sigma, allow_zero=False)
    S_t = pt.as_tensor_variable(S)
    if not collapsed:
        if S_t.ndim == 2:
            w = pm.MvNormal(f"{name}_weights", mu=pt.zeros(M), cov=S_t)
        else:
            w = pm.Normal(f"{name}_weights", mu=0.0, sigma=pt.sqrt(S_t), shape=M)
        return pm.Normal(name, mu=pt.dot(Phi, w), sigma=sigma, observed=t, **kwargs)

    def generate(Phi, S, sigma, size):
        L = _prior_factor(S, Phi.shape[1], pt)
        z = pm.Normal.dist(0.0, 1.0, shape=(Phi.shape[1],))
        return pt.dot(Phi, pt.dot(L, z)) + pm.Normal.dist(0.0, sigma, shape=(Phi.shape[0],))  # Φw + ε

    def logp(value, Phi, S, sigma):
        return _log_evidence_symbolic(value, Phi, S, sigma)

    core = {0: "()", 1: "(m)", 2: "(m,m)"}[S_t.ndim]
    obs = pm.CustomDist(
        name, pt.as_tensor_variable(Phi), S_t, sigma, dist=generate, logp=logp,
        signature=f"(n,m),{core},()->(n)", observed=t, **kwargs,
    )
    obs.tag.bayeskern = MarginalGaussian("blr", X, t, sigma, features=features, prior_cov=S)
    return obs


#: inputs farther from 0 than this many standard deviations sit "far from zero" (`offset_ratio`)
_FAR_FROM_ZERO = 10.0
#: a column-scaled Φ with a condition number above 1/√ε has a ΦᵀΦ that is singular to round-off
_ILL_CONDITIONED = 1.0 / np.sqrt(np.finfo(np.float64).eps)


def _offset_advice(X: np.ndarray) -> str:
    ratio = offset_ratio(X)
    if ratio > _FAR_FROM_ZERO:
        return (
            f"X sits far from zero for its spread (|column mean| / std up to {ratio:.3g}): centre it "
            "(X − X.mean(axis=0)) or standardise it before the feature map"
        )
    return "standardise X, or choose features of comparable scale"


def _warn_if_far_from_zero(features, X: np.ndarray, Phi: np.ndarray) -> None:
    """RuntimeWarning when X sits far from 0 and φ(X) is singular to round-off because of it.

    In a PyMC model σ and Σ are not known yet, so the B of `_factor_precision` cannot be checked; the
    column-scaled Φ can: cond(Φ D⁻¹) > 1/√ε means ΦᵀΦ has lost every digit, and the log density
    computed from it is noise (e.g. polynomial features at x ≈ 1e6).
    """
    if offset_ratio(X) <= _FAR_FROM_ZERO:
        return
    norms = np.linalg.norm(Phi, axis=0)
    scaled = Phi[:, norms > 0] / norms[norms > 0]
    if scaled.shape[1] > 1 and np.linalg.cond(scaled) > _ILL_CONDITIONED:
        warnings.warn(
            f"the features {features!r} of X are singular to round-off (condition number of the "
            f"column-scaled design matrix {np.linalg.cond(scaled):.3g}), so the likelihood is inaccurate: "
            + _offset_advice(X),
            RuntimeWarning,
            stacklevel=3,
        )


def _factor_precision(B: np.ndarray, features, X: np.ndarray) -> np.ndarray:
    """L_B with B = I + ΨᵀΨ/σ² = L_B L_Bᵀ, or a ValueError naming `features` and X.

    B's eigenvalues are ≥ 1 in exact arithmetic, so a factorisation that fails or is singular to
    round-off (the package's rule, `_linalg`) means that rounding ΨᵀΨ lost it: φ(X) spans too many
    orders of magnitude, typically because X sits far from 0 and the features are powers of x.
    """
    LB = _factor(B, 0.0)
    if LB is not None:
        return LB
    raise ValueError(
        f"the features {features!r} of X are too ill-conditioned for float64: B = I + ΨᵀΨ/σ² (Ψ = φ(X)L, "
        f"eigenvalues ≥ 1 in exact arithmetic) is not numerically positive definite; {_offset_advice(X)}"
    )


@dataclass(frozen=True)
class BLRPosterior(Posterior):
    """The analytic BLR posterior: weights N(m_N, S_N), the predictive at Xnew and the evidence.

    `weights_mean`: m_N = σ⁻² S_N Φᵀt. `weights_cov`: S_N = (Σ⁻¹ + σ⁻²ΦᵀΦ)⁻¹ (PRML 3.53–3.54).
    `mean`: Φ*m_N. `cov`: Φ*S_NΦ*ᵀ, plus σ²I when `include_noise` (PRML 3.58–3.59).
    `log_marginal_likelihood`: the evidence log p(t) (PRML 3.86 with a general Σ).
    """

    weights_mean: np.ndarray
    weights_cov: np.ndarray


@numerical_failure(
    "the features of X are numerically rank-deficient or too large for float64 (B = I + ΨᵀΨ/sigma², Ψ = Φ·chol(prior_cov), "
    "cannot be factorised), or X, Xnew, y or sigma make the posterior overflow: scale or center X and y, use fewer "
    "features, a smaller prior_cov or a larger sigma"
)
def posterior(features, X, y, sigma, prior_cov, Xnew=None, include_noise: bool = False) -> BLRPosterior:
    """The exact posterior of w ~ N(0, Σ), t = Φw + ε, ε ~ N(0, σ²I), and its predictive at Xnew.

    `features`: φ. `sigma`: σ > 0. `prior_cov`: Σ (scalar α⁻¹, vector, or SPD matrix). `Xnew`:
    where to predict (X if not given). `include_noise`: whether `cov`/`var` are for f = Φ*w (False)
    or for new observations (True).
    """
    X = as_inputs(X, "X")
    t = as_targets(y, X.shape[0], "y")
    Xnew = X if Xnew is None else as_inputs(Xnew, "Xnew")
    same_columns(X, Xnew, "X", "Xnew")
    if is_symbolic(include_noise) or not isinstance(include_noise, bool | np.bool_):
        raise ValueError(f"include_noise must be True or False, got {include_noise!r}")
    sigma = float(check_sigma(sigma, allow_zero=False))
    Phi = design_matrix(features, X, "features")
    n, M = Phi.shape
    S = check_prior_cov(prior_cov, M)
    if is_symbolic(S):
        raise ValueError("prior_cov must be numeric here; random variables belong in likelihood()")
    check_weight_precision(Phi, S, sigma)

    L = _prior_factor(S, M, np)  # Σ = L Lᵀ
    Psi = Phi @ L  # Ψ = Φ L
    LB = _factor_precision(np.eye(M) + Psi.T @ Psi / sigma**2, features, X)  # B = I + ΨᵀΨ/σ² = L_B L_Bᵀ
    G = solve_lower(LB, L.T)  # S_N = L B⁻¹ Lᵀ = GᵀG
    weights_cov = G.T @ G
    v = cho_solve(LB, Psi.T @ t) / sigma**2  # v = B⁻¹Ψᵀt/σ² = L⁻¹m_N
    weights_mean = L @ v  # m_N = σ⁻² S_N Φᵀ t   (PRML 3.53)

    Phi_new = design_matrix(features, Xnew)
    mean = Phi_new @ weights_mean  # y(x) = m_Nᵀ φ(x)   (PRML 3.58)
    H = G @ Phi_new.T  # Φ*S_NΦ*ᵀ = HᵀH
    cov, var = H.T @ H, np.sum(H**2, axis=0)  # σ²_N(x) − σ² = φ(x)ᵀ S_N φ(x)   (PRML 3.59)
    if include_noise:
        cov, var = cov + sigma**2 * np.eye(len(Xnew)), var + sigma**2
    cov[np.diag_indices_from(cov)] = var

    # log p(t) = −½[‖t − Φm_N‖²/σ² + m_NᵀΣ⁻¹m_N] − n log σ − ½ log|B| − n/2 log 2π
    quad = np.sum((t - Psi @ v) ** 2) / sigma**2 + v @ v
    lml = -0.5 * quad - n * np.log(sigma) - np.sum(np.log(np.diag(LB))) - 0.5 * n * LOG_2PI
    return BLRPosterior(mean, cov, var, float(lml), bool(include_noise), Xnew, weights_mean, weights_cov)
