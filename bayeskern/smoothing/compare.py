"""Smoothing against Mercer kernels on the same data: Nadaraya–Watson beside kernel ridge, and how close they are."""

from dataclasses import dataclass, fields

import numpy as np

from bayeskern.kernels import RBF, Kernel
from bayeskern.smoothing._blocks import check_data, plain
from bayeskern.smoothing.local import NadarayaWatsonResult, nadaraya_watson
from bayeskern.smoothing.profiles import smoothing_kernel
from bayeskern.smoothing.ridge import KernelRidgeResult, kernel_ridge

__all__ = ["SmootherComparison", "compare_smoothers"]


@dataclass(frozen=True)
class SmootherComparison:
    """A smoothing-kernel fit and a Mercer-kernel fit of the same data, and their difference at Xnew.

    `smoother`: the Nadaraya–Watson result; `mercer`: the kernel-ridge result (its `mean` includes the
    added-back ȳ). `rms_diff` = √mean(m̂_NW − m̂_KR)², `max_diff` = max|m̂_NW − m̂_KR| over Xnew;
    `rel_rms_diff`, `rel_max_diff`: the same divided by `y_scale`, the sample standard deviation of y.
    `smoother_loo_mse`, `mercer_loo_mse`: each one's leave-one-out mean squared error on the data.
    `lengthscale`: ℓ of the RBF used (None if a kernel was given); `lam`: the kernel-ridge λ.
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

    def to_dict(self) -> dict:
        return {f.name: (getattr(self, f.name).to_dict() if f.name in ("smoother", "mercer") else plain(getattr(self, f.name)))
                for f in fields(self)}


def compare_smoothers(X, y, Xnew=None, *, kernel="gaussian", bandwidth=None, mercer_kernel: Kernel | None = None,
                      lam=None, cv="loo") -> SmootherComparison:
    """Fit Nadaraya–Watson and kernel ridge to (X, y) and report how far apart the two curves are at Xnew.

    The seeds: "Smoothing kernels: bandwidth h controls the amount of smoothing. Mercer kernels: norm
    ‖f‖_K controls the amount of smoothing. In practice these two methods give answers that are very
    similar." The smoother: `nadaraya_watson(X, y, Xnew, bandwidth, kernel)` (h by leave-one-out when
    `bandwidth` is None). The Mercer fit: `kernel_ridge(mercer_kernel, X, y − ȳ, lam, Xnew, cv=cv)` + ȳ
    (centred, since kernel ridge has no intercept), with by default the Gaussian Mercer kernel
    `RBF(lengthscale=ℓ)`, ℓ = h·√(∫u₁²K(u)du) — the window's standard deviation, h itself for the
    Gaussian (the seeds fix the bandwidth and let λ do the smoothing) — and λ by leave-one-out. The
    kernel-ridge curve equals the GP posterior mean with σ² = λ (see `bayeskern.checks.ridge_duality`).
    `Xnew`: where the curves are compared (m, d); X if None.
    """
    X, y = check_data(X, y)
    Xnew = X if Xnew is None else check_data(X, Xnew=Xnew)[1]
    nw = nadaraya_watson(X, y, Xnew, bandwidth, kernel)
    lengthscale = None
    if mercer_kernel is None:
        lengthscale = nw.bandwidth * np.sqrt(smoothing_kernel(kernel).variance(X.shape[1]))
        mercer_kernel = RBF(lengthscale=lengthscale)
    y_bar = float(np.mean(y))
    kr = kernel_ridge(mercer_kernel, X, y - y_bar, lam, Xnew, cv=cv)
    kr = KernelRidgeResult(**{**{f.name: getattr(kr, f.name) for f in fields(kr)}, "mean": kr.mean + y_bar, "fitted": kr.fitted + y_bar})
    diff = nw.mean - kr.mean
    rms, mx = float(np.sqrt(np.mean(diff**2))), float(np.max(np.abs(diff)))
    scale = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
    scale_div = scale if scale > 0 else np.nan
    return SmootherComparison(nw, kr, rms, mx, rms / scale_div, mx / scale_div, scale, nw.loo_score, kr.loo_mse, lengthscale, kr.lam)
