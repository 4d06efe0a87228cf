"""How well approximations reproduce the exact: feature maps against a kernel (Gram errors, random Fourier features
against D), and an approximate GP (`bayeskern.approx`) against the exact GP on the user's own data."""

import warnings
from dataclasses import dataclass

import numpy as np

from bayeskern import blr, gp
from bayeskern._json import record_dict
from bayeskern._validation import as_inputs, as_targets, check_finite_result, check_integer, check_kernel, check_number, check_seed, check_sigma, same_columns
from bayeskern.approx import check_approx
from bayeskern.approx.hsgp import ShortBasisWarning
from bayeskern.features import RandomFourier, design_matrix
from bayeskern.kernels import RBF, Kernel

__all__ = ["ApproximationError", "FeatureError", "RFFConvergence", "approximation_error", "feature_error", "rff_convergence"]


@dataclass(frozen=True)
class FeatureError:
    """ΦΦᵀ against K on X: `max_abs_error`, `rel_frobenius_error` = ‖ΦΦᵀ − K‖_F / ‖K‖_F, `M` features.

    `passed`: φ is a feature map of k on X, `rel_frobenius_error` ≤ `rtol`.
    """

    max_abs_error: float
    rel_frobenius_error: float
    M: int
    passed: bool
    rtol: float

    def to_dict(self) -> dict:
        return record_dict(self)


def feature_error(phi, kernel: Kernel, X, rtol: float = 1e-8) -> FeatureError:
    """How far φ(x)ᵀφ(x′) is from k(x, x′) on the points X; passed when within `rtol` (relative, Frobenius)."""
    X, kernel = as_inputs(X, "X"), check_kernel(kernel)
    rtol = float(check_number(rtol, "rtol", positive=True, scalar=True))
    Phi = design_matrix(phi, X)
    K = kernel.evaluate(X)
    E = Phi @ Phi.T - K
    rel = float(np.linalg.norm(E) / np.linalg.norm(K))
    return FeatureError(float(np.max(np.abs(E))), rel, Phi.shape[1], bool(rel <= rtol), rtol)


@dataclass(frozen=True)
class RFFConvergence:
    """Random Fourier features against their number D, averaged over `seeds`.

    `kernel_error[i]`: mean over seeds of max |ΦΦᵀ − K| on X for D = `n_features[i]`. `mean_error[i]`: of
    max |m_RFF − m_GP| over Xnew, the BLR-with-RFF predictive mean against the exact GP's.
    `kernel_slope`, `mean_slope`: least-squares slopes of log error against log D (−½ expected).
    `passed`: both slopes within `slope_tolerance` of −½, the Monte Carlo rate.
    """

    n_features: np.ndarray
    kernel_error: np.ndarray
    mean_error: np.ndarray
    kernel_slope: float
    mean_slope: float
    passed: bool
    slope_tolerance: float

    def to_dict(self) -> dict:
        return record_dict(self)


def rff_convergence(
    X, y, sigma: float, Xnew, lengthscale: float = 1.0, n_features=(50, 200, 800, 3200), seeds=range(5), slope_tolerance: float = 0.25
) -> RFFConvergence:
    """Fit the GP with the RBF kernel exactly, and by BLR on D random Fourier features, for each D."""
    X = as_inputs(X, "X")
    y = as_targets(y, X.shape[0], "y")
    slope_tolerance = float(check_number(slope_tolerance, "slope_tolerance", positive=True, scalar=True))
    Xnew = as_inputs(Xnew, "Xnew")
    same_columns(X, Xnew, "X", "Xnew")
    check_sigma(sigma, allow_zero=False)  # the BLR side needs σ > 0
    if isinstance(n_features, str) or not np.iterable(n_features) or isinstance(seeds, str) or not np.iterable(seeds):
        raise ValueError("n_features and seeds must be sequences: feature counts D, and seeds of the random features")
    Ds = np.asarray([check_integer(D, "n_features", 1) for D in n_features], dtype=int)
    seeds = [check_seed(seed, "seeds") for seed in seeds]
    if len(Ds) < 2 or not seeds:
        raise ValueError("need at least two feature counts (n_features) and one seed (seeds)")
    exact_kernel = RBF(lengthscale)
    K = exact_kernel.evaluate(X)
    exact_mean = gp.posterior(exact_kernel, X, y, sigma=sigma, Xnew=Xnew).mean
    kernel_error, mean_error = [], []
    for D in Ds:
        k_err, m_err = [], []
        for seed in seeds:
            phi = RandomFourier(int(D), lengthscale, input_dim=X.shape[1], seed=seed)
            Phi = design_matrix(phi, X)
            k_err.append(np.max(np.abs(Phi @ Phi.T - K)))
            approx = design_matrix(phi, Xnew) @ blr.condition(phi, X, y, sigma=sigma, prior_cov=1.0).weights_mean  # Φ*m_N, w ~ N(0, I)
            m_err.append(np.max(np.abs(approx - exact_mean)))
        kernel_error.append(np.mean(k_err))
        mean_error.append(np.mean(m_err))
    kernel_error, mean_error = np.asarray(kernel_error), np.asarray(mean_error)
    slope = lambda e: float(np.polyfit(np.log(Ds), np.log(e), 1)[0])  # noqa: E731
    slopes = slope(kernel_error), slope(mean_error)
    passed = all(abs(v + 0.5) <= slope_tolerance for v in slopes)
    return RFFConvergence(Ds, kernel_error, mean_error, *slopes, passed, slope_tolerance)


@dataclass(frozen=True)
class ApproximationError:
    """An approximate GP against the exact GP, both conditioned on the same `n_points` data at the same hyperparameters.

    `mean_error`: max |m̃(x) − m(x)| / sd(y) over the prediction points. `var_error`: max |ṽ(x)/v(x) − 1|
    of the predictive variance of a new observation (f plus σ², so that it is bounded away from 0).
    `lml_error`: |log p̃(t) − log p(t)| / n_points, per data point. `passed`: each within its tolerance
    (`mean_tol`, `var_tol`, `lml_tol`). `approx`: what was audited, as text. For inducing points (VFE), also
    `trace_term` tr(K − Q)/(2σ²), what the bound subtracts for the variance the inducing points miss, and
    `nystrom_residual` tr(K − Q)/tr(K); None for other approximations.
    """

    mean_error: float
    var_error: float
    lml_error: float
    n_points: int
    n_predict: int
    passed: bool
    mean_tol: float
    var_tol: float
    lml_tol: float
    approx: str
    trace_term: float | None = None
    nystrom_residual: float | None = None

    def to_dict(self) -> dict:
        return record_dict(self)


#: the audit conditions the exact GP on at most this many points (O(AUDIT_POINTS³))
AUDIT_POINTS = 2000


def subsample_rows(n: int, size: int, seed) -> np.ndarray:
    """Row indices, in order: `size` of the n rows drawn without replacement by `seed`, or all of them when n ≤ size."""
    rng = np.random.default_rng(check_seed(seed))
    return np.sort(rng.choice(n, size, replace=False)) if n > size else np.arange(n)


def approximation_error(
    kernel: Kernel, approx, X, y, sigma, Xnew=None, subsample: int = AUDIT_POINTS, seed=0,
    mean_tol: float = 1e-2, var_tol: float = 0.05, lml_tol: float = 1e-3,
) -> ApproximationError:
    """How far `approx` (e.g. `bayeskern.approx.HSGP(m=120, c=1.5)`) is from the exact GP with `kernel` on this data.

    Both GPs are conditioned on a random subsample of `subsample` points (all of them when n ≤ subsample;
    the approximation keeps the box it has on all of X) and compared there and at `Xnew` (the subsample's
    inputs if not given): the exact side costs O(subsample³). Hyperparameters are numbers, e.g. an EB fit's.
    """
    X, kernel, approx = as_inputs(X, "X"), check_kernel(kernel), check_approx(approx)
    y = as_targets(y, X.shape[0], "y")
    sigma = float(check_sigma(sigma, allow_zero=False, numeric=True))
    subsample = check_integer(subsample, "subsample", 2)
    tolerances = [float(check_number(v, name, positive=True, scalar=True)) for v, name in ((mean_tol, "mean_tol"), (var_tol, "var_tol"), (lml_tol, "lml_tol"))]
    rows = subsample_rows(len(X), subsample, seed)
    Xs, ys = X[rows], y[rows]
    Xnew = Xs if Xnew is None else as_inputs(Xnew, "Xnew")
    same_columns(X, Xnew, "X", "Xnew")
    with warnings.catch_warnings():  # this check measures what PyMC's rule for an HSGP basis would only predict
        warnings.simplefilter("ignore", ShortBasisWarning)
        exact, approximate = gp.condition(kernel, Xs, ys, sigma), approx.condition(kernel, Xs, ys, sigma, box_of=X)
    e, a = exact.predict(Xnew, include_noise=True), approximate.predict(Xnew, include_noise=True)
    mean_error = float(np.max(np.abs(a.mean - e.mean)) / np.std(y))
    var_error = float(np.max(np.abs(a.var / e.var - 1.0)))
    lml_error = abs(approximate.log_marginal_likelihood - exact.log_marginal_likelihood) / len(rows)
    check_finite_result(np.array([mean_error, var_error, lml_error]), "the approximation audit's errors on y and sigma")
    passed = all(v <= tol for v, tol in zip((mean_error, var_error, lml_error), tolerances))
    inducing = [getattr(approximate, name, None) for name in ("trace_term", "nystrom_residual")]
    return ApproximationError(mean_error, var_error, lml_error, len(rows), len(Xnew), passed, *tolerances, repr(approx), *inducing)
