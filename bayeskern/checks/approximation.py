"""How well finite feature maps reproduce a kernel: Gram-matrix errors, and random Fourier features against D."""

from dataclasses import dataclass

import numpy as np

from bayeskern import blr, gp
from bayeskern._json import record_dict
from bayeskern._validation import as_inputs, as_targets, check_integer, check_kernel, check_number, check_seed, check_sigma, same_columns
from bayeskern.features import RandomFourier, design_matrix
from bayeskern.kernels import RBF, Kernel

__all__ = ["FeatureError", "RFFConvergence", "feature_error", "rff_convergence"]


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
            approx = blr.posterior(phi, X, y, sigma=sigma, prior_cov=1.0, Xnew=Xnew).mean  # w ~ N(0, I)
            m_err.append(np.max(np.abs(approx - exact_mean)))
        kernel_error.append(np.mean(k_err))
        mean_error.append(np.mean(m_err))
    kernel_error, mean_error = np.asarray(kernel_error), np.asarray(mean_error)
    slope = lambda e: float(np.polyfit(np.log(Ds), np.log(e), 1)[0])  # noqa: E731
    slopes = slope(kernel_error), slope(mean_error)
    passed = all(abs(v + 0.5) <= slope_tolerance for v in slopes)
    return RFFConvergence(Ds, kernel_error, mean_error, *slopes, passed, slope_tolerance)
