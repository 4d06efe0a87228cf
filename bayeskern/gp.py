"""Gaussian processes: the marginal likelihood in a PyMC model, prior samples, and the exact posterior."""

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import scipy.linalg

from bayeskern._compile import untraced
from bayeskern._gaussian_logp import gaussian_logp
from bayeskern._linalg import EPS, LOG_2PI, cho_solve, cholesky, loo_gaussian, minus_gram, psd_factor, psd_tolerance, solve_lower
from bayeskern._results import Posterior
from bayeskern._validation import (
    PACKAGE_DIR, NonFiniteError, as_inputs, check_finite_result, check_integer, check_kernel, check_name, check_seed, check_sigma, numerical_failure, owned, owned_data,
    offset_ratio, same_columns,
)
from bayeskern.conditioned import Conditioned
from bayeskern.kernels import Kernel
from bayeskern.likelihood import KernelLikelihood, attach

__all__ = ["ExactGP", "GPLikelihood", "GPPosterior", "condition", "marginal_likelihood", "posterior", "prior_samples"]


def marginal_likelihood(name: str, X, y, kernel: Kernel, sigma, approx=None, **kwargs):
    """Add the observed marginal Gaussian y ~ N(0, K + σ²I) to the current PyMC model.

    `X`: inputs (n, d). `y`: observations t (n,). `kernel`: k, whose hyperparameters may be PyMC
    random variables. `sigma`: σ > 0, the noise standard deviation (number or random variable).
    The log density is exact (Cholesky of C = K + σ²I, no jitter; −inf where C is not numerically
    positive definite) and its gradient is ½ tr((ααᵀ − C⁻¹) ∂C/∂θ), α = C⁻¹t (R&W 5.9).
    Extra keyword arguments (e.g. `dims`) go to `pm.CustomDist`. Returns the observed variable,
    which `bayeskern.fit` recognises as a marginal Gaussian likelihood. `approx`: None for the exact
    GP, or an approximation of `bayeskern.approx` (`HSGP(m, c)`) whose likelihood is used instead.
    """
    if approx is not None:
        from bayeskern.approx import check_approx  # here, not at import: an exact GP's process never loads the approximations

        return check_approx(approx, exact_allowed=True).marginal_likelihood(name, X, y, kernel, sigma, **kwargs)
    name, (X, y) = check_name(name), owned_data(X, y)  # (kept by the likelihood's record: not the caller's arrays)
    kernel, sigma = check_kernel(kernel), check_sigma(sigma, allow_zero=False)
    # the data enter as shared variables, not constants: the compiled graph (cached on disk by
    # PyTensor) is then the same for every data set of this shape of model
    X_data = pytensor.shared(X, name=f"{name}_X", shape=(None, X.shape[1]))
    y_data = pytensor.shared(y, name=f"{name}_y", shape=(None,))

    def generate(K, noise_var, size):
        C = K + pt.tril(K, -1).T + noise_var * pt.eye(K.shape[-1])  # C = K + σ²I   (PRML 6.62), K from its lower triangle
        return pm.MvNormal.dist(mu=0.0, cov=C)

    def logp(value, K, noise_var):
        return gaussian_logp(K, value, noise_var)  # σ²I is added inside, no n × n identity in the graph

    with untraced():  # the kernel's and the likelihood's graphs: no creation stack recorded
        K = kernel.lower_triangle(X_data)  # K(X, X)'s lower triangle, each pair evaluated once: the likelihood reads no other
        obs = pm.CustomDist(
            name, K, pt.square(sigma), dist=generate, logp=logp, signature="(n,n),()->(n)", observed=y_data, **kwargs
        )
    return attach(obs, GPLikelihood(X, y, sigma, kernel))


@dataclass(frozen=True)
class GPLikelihood(KernelLikelihood):
    """The record of t ~ N(0, K + σ²I) in a PyMC model: data, σ and the kernel (hyperparameters may be symbolic)."""

    X: np.ndarray
    y: np.ndarray
    sigma: object
    kernel: Kernel

    def check_inputs(self, X: np.ndarray) -> None:
        self.kernel.full(X[:2])  # the graph is built, and the inputs checked, without compiling

    def condition(self, predict_at=None) -> "ExactGP":
        return ExactGP(self.kernel, self.X, self.y, float(self.sigma), predict_at)


def prior_samples(kernel: Kernel, X, n: int = 1, seed=None) -> np.ndarray:
    """n draws of f(X) ~ N(0, K(X, X)), as an (n, len(X)) array (the PRML figure 6.5 samples).

    Drawn through a factor K = F Fᵀ (`bayeskern._linalg.psd_factor`: pivoted Cholesky, else the eigendecomposition),
    f = F z, which needs no jitter even when K is singular; a kernel that is not positive semi-definite on X gets a
    ValueError.
    """
    X, seed = as_inputs(X, "X"), check_seed(seed)
    n = check_integer(n, "n", 1)
    F = psd_factor(check_kernel(kernel).evaluate(X), "the kernel on X")
    return np.random.default_rng(seed).standard_normal((n, F.shape[1])) @ F.T  # f = F z


@dataclass(frozen=True)
class GPPosterior(Posterior):
    """The exact GP posterior at Xnew, and the log marginal likelihood of the training data.

    `mean`: m(x) = kᵀC⁻¹t (PRML 6.66). `cov`: K** − kᵀC⁻¹k (PRML 6.67), plus σ²I when
    `include_noise` (then it is the predictive covariance of new observations t, not of f).
    `var`: its diagonal, never negative. `jitter`: what was added to C's diagonal (0.0 if nothing).
    `alpha`: α = C⁻¹t, the dual weights of the mean m(x) = Σᵢ αᵢ k(xᵢ, x).
    `loo_log_predictive`: log p(tᵢ | t₋ᵢ) for each training point, the exact leave-one-out predictive
    density at these hyperparameters (R&W 5.10–5.12), computed on first use (one O(n³) inverse).
    What it is not: a refit — the hyperparameters stay as given, even if they were fitted to all of t.
    """

    jitter: float
    alpha: np.ndarray
    chol: np.ndarray = field(repr=False)  # L with C (+ jitter) = L Lᵀ
    targets: np.ndarray = field(repr=False)  # t

    @cached_property
    def loo_log_predictive(self) -> np.ndarray:
        log_density = loo_gaussian(self.chol, self.targets, self.alpha)[2]
        return check_finite_result(log_density, "the leave-one-out log density log p(tᵢ | t₋ᵢ) of the targets y")


#: inputs farther from 0 than this many standard deviations sit "far from zero" (`offset_ratio`)
_FAR_FROM_ZERO = 10.0


def _offset_hint(kernel: Kernel, X: np.ndarray) -> str:
    """Advice to centre X if it sits far from 0 for its spread and k depends on where x is, not only on x − x′.

    Shift-invariance is checked on the first 20 rows: K(x) against K(x − x̄), 1e-8 relative (the
    stationary kernels agree to round-off). Empty if there is nothing to advise.
    """
    ratio = offset_ratio(X)
    if ratio <= _FAR_FROM_ZERO:
        return ""
    rows = X[:20]
    K, K_centred = kernel.evaluate(rows), kernel.evaluate(rows - X.mean(axis=0))
    if np.max(np.abs(K - K_centred)) <= 1e-8 * max(np.max(np.abs(K)), np.max(np.abs(K_centred)), 1e-300):
        return ""
    return (
        f" X sits far from zero for its spread (|column mean| / std up to {ratio:.3g}) and {kernel!r} depends on "
        "where the inputs are, not only on x − x′: K(X, X) is dominated by its value at that offset and "
        "rounding swamps the rest. Centre X (X − X.mean(axis=0)) or standardise it; for such a kernel "
        "this changes the prior, so choose the centre deliberately."
    )


def _refuse_non_psd(kernel: Kernel, X: np.ndarray, K: np.ndarray) -> None:
    """Before jitter is tried on K + σ²I: a ValueError if K is not PSD up to round-off, or spoilt by an offset.

    A kernel that is not positive semi-definite on X (λmin(K) < −c·n·ε·λmax, `_linalg.psd_tolerance`)
    is named rather than jittered; so is a kernel whose K(X, X) is spoilt by rounding because X sits
    far from 0 (`_offset_hint`), where jitter would only hide it.
    """
    hint = _offset_hint(kernel, X)
    if hint:
        raise ValueError(f"K(X, X) + sigma^2 I of the kernel {kernel!r} is not positive definite in floating point." + hint)
    lam = scipy.linalg.eigvalsh(0.5 * (K + K.T))
    if lam[0] < -psd_tolerance(lam):
        raise ValueError(
            f"the kernel {kernel!r} is not positive semi-definite on X: K(X, X) has the eigenvalue "
            f"{lam[0]:.3g} (largest {lam[-1]:.3g}), far below the round-off scale {psd_tolerance(lam):.3g}, so it is "
            "not a valid GP covariance; see bayeskern.checks.psd(kernel, X) for the spectrum"
        )


def _warn_if_offset_spoils(kernel: Kernel, X: np.ndarray, K: np.ndarray, sigma: float) -> None:
    """RuntimeWarning when K's rounding, n·ε·max|K|, is not small against σ² because X sits far from 0."""
    rounding = len(K) * EPS * float(np.max(np.abs(K)))
    if rounding > 1e-5 * sigma**2 and (hint := _offset_hint(kernel, X)):
        warnings.warn(
            f"the GP posterior may be inaccurate: K(X, X) reaches {np.max(np.abs(K)):.3g}, so its rounding "
            f"(n·ε·max|K| = {rounding:.2g}) is not small against the noise variance σ² = {sigma**2:.3g}." + hint,
            RuntimeWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )


def _duplicate_rows(X: np.ndarray) -> tuple[int, int] | None:
    _, first, inverse, counts = np.unique(X, axis=0, return_index=True, return_inverse=True, return_counts=True)
    if np.all(counts == 1):
        return None
    group = int(np.flatnonzero(counts > 1)[0])
    rows = np.flatnonzero(inverse.ravel() == group)
    return int(rows[0]), int(rows[1])


def _refuse_duplicates_without_noise(X: np.ndarray, C: np.ndarray, sigma: float) -> None:
    """σ = 0 and two equal rows of X: C is singular there, the noise-free posterior undefined."""
    dup = _duplicate_rows(X) if sigma == 0.0 else None
    if dup is None:
        return
    i, j = dup
    if C[i, i] * C[j, j] - C[i, j] ** 2 <= 1e-12 * C[i, i] * C[j, j]:  # rows i and j of C coincide
        raise ValueError(
            f"X has duplicate rows ({i} and {j}) and sigma=0: the noise-free posterior is singular "
            "there; give sigma > 0 or remove the duplicates"
        )


#: an exact GP on 1-D inputs told the points X* of a full-covariance prediction to come evaluates its kernel once on X and
#: X* together where (n + m)² is at most this. There a kernel evaluation costs mostly its call (~0.1–0.2 ms in numpy), so
#: one call for K(X, X), K(X, X*), K(X*, X*) and k(x*, x*) beats four, though it computes K(X*, X) too. The posterior
#: draws' loop (`fit.predictive.draw_quantities`, the seeds' sum kernel, m = 121, `benchmarks/bench_draw_quantities.py`)
#: takes 0.71, 0.81 and 0.87 of the time apart at n = 25, 100 and 128 (62 001 pairs), and a prototype took the same at
#: n = 300 (177 241 pairs) (BENCHMARKS.md, session 32). Inputs of several columns are evaluated
#: apart: a kernel's work per pair is larger there (ARD Matérn 5/2 at d = 8, n = m = 128: 1.3× slower together), and
#: above `kernels.stationary.DIFFERENCE_COLUMNS` distances are centred on (and, far out, rescaled by) the points evaluated
#: together, so X* would change K(X, X) in its last bits
JOINT_MAX_PAIRS = 65_536


class _Blocks(NamedTuple):
    """The blocks of one kernel evaluation on X and X* stacked that a prediction at X* reads."""

    points: np.ndarray  # X* (`owned`: the caller's array may change)
    cross: np.ndarray  # K(X, X*)
    new: np.ndarray  # K(X*, X*)


class ExactGP(Conditioned):
    """The exact solver: C = K + σ²I factorised once by Cholesky (the package's rule, `_linalg.cholesky`).

    `chol`: L with C (+ jitter) = L Lᵀ. `alpha`: α = C⁻¹t, the dual weights of the mean
    m(x) = Σᵢ αᵢ k(xᵢ, x). Each prediction at m points costs O(n²m), never a refactorisation.
    `predict_at`: the points X* of a full-covariance prediction to come, if known: small problems on 1-D inputs evaluate the
    kernel on X and X* at once (JOINT_MAX_PAIRS), and that prediction and its draws reuse the blocks.
    """

    def __init__(self, kernel: Kernel, X: np.ndarray, t: np.ndarray, sigma: float, predict_at=None):
        self.kernel, self.X, self.targets, self.sigma = kernel, X, t, sigma
        kernel._check_dims(X.shape[1], None)  # (length scales against X's columns: `_values` below takes X as checked)
        K, self._blocks = self._gram(predict_at)  # X is checked here once; predictions reuse it unchecked
        C = K + sigma**2 * np.eye(len(X))  # C_N = K + β⁻¹I   (PRML 6.62)
        _refuse_duplicates_without_noise(X, C, sigma)
        self.chol, self.jitter = cholesky(C, "K + sigma^2 I", before_jitter=lambda: _refuse_non_psd(kernel, X, K), noise_var=sigma**2)
        _warn_if_offset_spoils(kernel, X, K, sigma)
        self.alpha = cho_solve(self.chol, t)  # α = C⁻¹t
        # log p(t) = −½ tᵀC⁻¹t − ½ log|C| − n/2 log 2π, with log|C| = 2 Σ log Lᵢᵢ
        with np.errstate(over="ignore", invalid="ignore"):  # (an overflow is refused by the public functions, by name)
            lml = -0.5 * t @ self.alpha - np.sum(np.log(np.diag(self.chol))) - 0.5 * len(X) * LOG_2PI
        self.log_marginal_likelihood = float(lml)

    @property
    def gram_kernel(self) -> Kernel:
        return self.kernel

    def _gram(self, predict_at) -> tuple:
        """(K(X, X), _Blocks or None): one evaluation on X and X* = `predict_at` stacked where that pays (1-D inputs,
        (n + m)² ≤ JOINT_MAX_PAIRS), else K(X, X) alone; also alone where the stacked evaluation overflows, so that an
        overflow at X* is reported by the prediction there."""
        if predict_at is not None:
            points = owned(as_inputs(predict_at, "predict_at"))
            same_columns(self.X, points, "X", "predict_at")
            n = len(self.X)
            if points.shape[1] == 1 and (n + len(points)) ** 2 <= JOINT_MAX_PAIRS:
                try:
                    K = self.kernel._values(np.vstack([self.X, points]))  # [[K(X, X), K(X, X*)], [K(X*, X), K(X*, X*)]]
                    # the blocks contiguous, as apart: a strided K(X, X*) takes another BLAS path, last bits apart
                    return K[:n, :n], _Blocks(points, np.ascontiguousarray(K[:n, n:]), np.ascontiguousarray(K[n:, n:]))
                except NonFiniteError:
                    pass  # (an overflow at X*: K(X, X) alone below, and the prediction at X* reports it)
        return self.kernel._values(self.X), None  # (X checked; the factorisation reads K's lower triangle only)

    def _blocks_at(self, Xnew) -> _Blocks | None:
        """The blocks of the evaluation at conditioning when Xnew are its points X*, else None."""
        blocks = self._blocks
        return blocks if blocks is not None and Xnew.shape == blocks.points.shape and np.array_equal(Xnew, blocks.points) else None

    def _latent(self, Xnew, full_cov):
        blocks = self._blocks_at(Xnew) if full_cov else None
        Ks = self.kernel._values(self.X, Xnew) if blocks is None else blocks.cross  # k(xᵢ, x*) for every training xᵢ, (n, m)
        mean = Ks.T @ self.alpha  # m(x*) = kᵀ C⁻¹ t   (PRML 6.66)
        V = solve_lower(self.chol, Ks)  # V = L⁻¹k, so kᵀC⁻¹k = VᵀV
        if not full_cov:  # k(x*, x*) − kᵀ C⁻¹ k, the diagonal only
            return mean, np.clip(self.kernel._values(Xnew, diag=True) - np.sum(V**2, axis=0), 0.0, None), None
        K_new = self.kernel._values(Xnew) if blocks is None else blocks.new
        cov = minus_gram(K_new, V)  # K** − kᵀ C⁻¹ k = K** − VᵀV   (PRML 6.67, c without β⁻¹)
        return mean, np.clip(np.diag(cov), 0.0, None), cov  # round-off can make a tiny variance negative; predict writes it back

    def _loo(self):
        return loo_gaussian(self.chol, self.targets, self.alpha)

    def prior_variance(self, Xnew) -> float:
        blocks = self._blocks_at(Xnew)  # Xnew: a prediction's, checked
        diagonal = self.kernel._values(Xnew, diag=True) if blocks is None else np.diagonal(blocks.new)
        return float(np.max(np.abs(diagonal), initial=0.0))

    def posterior(self, Xnew=None, include_noise: bool = False) -> "GPPosterior":
        """The full posterior at `Xnew` as `GPPosterior` (what `bayeskern.gp.posterior` returns)."""
        p = self.predict(Xnew, include_noise=include_noise, full_cov=True)
        return GPPosterior(
            p.mean, p.cov, p.var, self.log_marginal_likelihood, p.include_noise, p.Xnew, self.jitter, self.alpha, self.chol, self.targets
        )


_NUMERICAL_FAILURE = (
    "X, Xnew, y or sigma is too large or too small for float64 (K(X, X) + sigma² I cannot be factorised even with "
    "jitter, or the posterior overflows): scale or center X and y, or check the kernel's hyperparameters and sigma"
)


@numerical_failure(_NUMERICAL_FAILURE)
def condition(kernel: Kernel, X, y, sigma, approx=None) -> Conditioned:
    """A zero-mean GP with kernel k conditioned on t = f(X) + ε, ε ~ N(0, σ²I): C = K + σ²I factorised once.

    `sigma`: σ ≥ 0; σ = 0 is noise-free interpolation. Jitter is added only if the factorisation fails
    (a RuntimeWarning; `.jitter` says how much). Returns an `ExactGP` with `.log_marginal_likelihood`,
    `.jitter`, `.loo_log_predictive`, `.predict(Xnew, include_noise=False, full_cov=False)` and
    `.sample(Xnew, n, seed)`: predictions reuse the factorisation. `approx`: an approximation of
    `bayeskern.approx` (`HSGP(m, c)`; then σ > 0) conditioned instead, behind the same interface.
    """
    X, t = owned_data(X, y)  # (kept by the conditioned model: not the caller's arrays)
    kernel = check_kernel(kernel)
    if approx is not None:
        from bayeskern.approx import check_approx

        kernel.require_numeric()  # before the approximation reads the length scales as numbers
        return check_approx(approx, exact_allowed=True).condition(kernel, X, t, float(check_sigma(sigma, allow_zero=False, numeric=True)))
    return ExactGP(kernel, X, t, float(check_sigma(sigma, allow_zero=True, numeric=True)))


@numerical_failure(_NUMERICAL_FAILURE)
def posterior(kernel: Kernel, X, y, sigma, Xnew=None, include_noise: bool = False) -> GPPosterior:
    """The exact posterior of a zero-mean GP with kernel k, given t = f(X) + ε, ε ~ N(0, σ²I).

    `sigma`: σ ≥ 0; σ = 0 is noise-free interpolation. `Xnew`: where to predict (X if not given).
    `include_noise`: whether `cov`/`var` are for f(Xnew) (False) or for new observations (True).
    The same as `condition(kernel, X, y, sigma).posterior(Xnew, include_noise)`.
    """
    return condition(kernel, X, y, sigma).posterior(Xnew, include_noise)
