"""Smoothing against Mercer kernels on the same data: Nadaraya–Watson beside kernel ridge, and how close they are."""

import warnings
from dataclasses import dataclass, replace

import numpy as np

from bayeskern._json import record_dict
from bayeskern.kernels import RBF, Kernel
from bayeskern.smoothing._blocks import SmoothingWarning, check_bandwidth, check_data, check_grid
from bayeskern.smoothing.local import NadarayaWatsonResult, default_bandwidth_grid, nadaraya_watson
from bayeskern.smoothing.profiles import smoothing_kernel
from bayeskern.smoothing.ridge import KernelRidgeResult, _predict, kernel_ridge

__all__ = ["SmootherComparison", "compare_smoothers"]


@dataclass(frozen=True)
class SmootherComparison:
    """A smoothing-kernel fit and a Mercer-kernel fit of the same data, and their difference at Xnew.

    `smoother`: the Nadaraya–Watson result; `mercer`: the kernel-ridge result (its `mean` includes the
    added-back ȳ). `rms_diff` = √mean(m̂_NW − m̂_KR)², `max_diff` = max|m̂_NW − m̂_KR| over Xnew;
    `rel_rms_diff`, `rel_max_diff`: the same divided by `y_scale`, the sample standard deviation of y
    (for a constant y: 0 if the curves agree, else +inf).
    `smoother_loo_mse`, `mercer_loo_mse`: each one's leave-one-out mean squared error on the data.
    `lengthscale`: ℓ of the RBF used (None if a kernel was given); `lam`: the kernel-ridge λ.
    `lengthscale_grid`, `lengthscale_loo_mse`: the ℓ searched and the best leave-one-out error of each.
    """

    smoother: NadarayaWatsonResult
    mercer: KernelRidgeResult
    rms_diff: float
    max_diff: float
    rel_rms_diff: float
    rel_max_diff: float
    y_scale: float
    smoother_loo_mse: float
    mercer_loo_mse: float
    lengthscale: float | None
    lam: float
    lengthscale_grid: np.ndarray | None
    lengthscale_loo_mse: np.ndarray | None

    def to_dict(self) -> dict:
        return record_dict(self)  # smoother and mercer by their own to_dict


def compare_smoothers(X, y, Xnew=None, *, kernel="gaussian", bandwidth=None, mercer_kernel: Kernel | None = None,
                      lengthscale=None, lam=None, cv="loo") -> SmootherComparison:
    """Fit Nadaraya–Watson and kernel ridge to (X, y) and report how far apart the two curves are at Xnew.

    The seeds: "Smoothing kernels: bandwidth h controls the amount of smoothing. Mercer kernels: norm
    ‖f‖_K controls the amount of smoothing. In practice these two methods give answers that are very
    similar." Both get their tuning parameters from the data by the same criterion, leave-one-out error.
    The smoother: `nadaraya_watson(X, y, Xnew, bandwidth, kernel)` (h by leave-one-out when `bandwidth`
    is None). The Mercer fit: `kernel_ridge(K, X, y − ȳ, lam, Xnew, cv=cv)` + ȳ (centred, since kernel
    ridge has no intercept), K = `mercer_kernel` if given, else the Gaussian Mercer kernel
    exp(−‖x − x′‖²/2ℓ²) = `RBF(lengthscale=ℓ)` with `lengthscale` ℓ: a number; None, the candidates
    `default_bandwidth_grid(X, 15)`·√(∫u₁²K(u)du) (the smoothing kernel's standard deviation, the same
    widths NW searches); or an array of candidates — for each ℓ, λ by `cv`, and the (ℓ, λ) with the
    smallest validation error wins. The kernel-ridge curve equals the GP posterior mean with σ² = λ
    (see `bayeskern.checks.ridge_duality`). `Xnew`: where the curves are compared (m, d); X if None.
    Cost: one eigendecomposition of the n × n kernel matrix per candidate ℓ (15 by default).
    """
    X, y = check_data(X, y)
    at = None if Xnew is None else check_data(X, Xnew=Xnew)[1]  # None: at X, where kernel ridge has `fitted`
    Xnew = X if at is None else at
    ell = ell_grid = ell_scores = None
    if mercer_kernel is None and lengthscale is not None:  # checked before either fit runs (and warns)
        ell, ell_grid = (check_bandwidth(lengthscale, "lengthscale"), None) if np.ndim(lengthscale) == 0 else (None, check_grid(lengthscale, "lengthscale"))
    nw = nadaraya_watson(X, y, Xnew, bandwidth, kernel)
    y_bar = float(np.mean(y))
    if mercer_kernel is not None:
        kr = kernel_ridge(mercer_kernel, X, y - y_bar, lam, at, cv=cv)
    elif ell is not None:
        kr = kernel_ridge(RBF(lengthscale=ell), X, y - y_bar, lam, at, cv=cv)
    else:
        if ell_grid is None:
            ell_grid = default_bandwidth_grid(X, 15) * np.sqrt(smoothing_kernel(kernel).variance(X.shape[1]))
        fits = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmoothingWarning)  # λ at a grid edge for a poor ℓ is expected
            for candidate in ell_grid:  # fitted at X only: the winner alone is predicted at Xnew
                fits.append(kernel_ridge(RBF(lengthscale=candidate), X, y - y_bar, lam, None, cv=cv))
        ell_scores = np.array([np.min(f.cv_scores) if f.cv_scores is not None else f.loo_mse for f in fits])
        best = int(np.argmin(ell_scores))
        ell, kr = float(ell_grid[best]), fits[best]
        if at is not None:  # m̂(x) = Σ αᵢ k(xᵢ, x)   (seed 001)
            kr = replace(kr, mean=_predict(RBF(lengthscale=ell), X, at, kr.alpha))
    kr = replace(kr, mean=kr.mean + y_bar, fitted=kr.fitted + y_bar)
    diff = nw.mean - kr.mean
    rms, mx = float(np.sqrt(np.mean(diff**2))), float(np.max(np.abs(diff)))
    scale = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
    rel_rms, rel_max = (rms / scale, mx / scale) if scale > 0 else (0.0 if rms == 0 else np.inf, 0.0 if mx == 0 else np.inf)
    return SmootherComparison(
        nw, kr, rms, mx, rel_rms, rel_max, scale, nw.loo_mse, kr.loo_mse, ell, kr.lam, ell_grid, ell_scores
    )
