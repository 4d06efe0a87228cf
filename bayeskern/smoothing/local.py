"""Nadaraya–Watson kernel regression: local weighted averages, the bandwidth chosen by leave-one-out error."""

from dataclasses import dataclass

import numpy as np

from bayeskern._json import record_dict
from bayeskern._validation import check_flag, check_integer
from bayeskern.smoothing._blocks import (
    Bandwidth, Distances, Query, check_bandwidth, check_data, check_grid, map_row_blocks, power_of_two, scott_bandwidth,
    warn_at_grid_edge, weight_block,
)
from bayeskern.smoothing.profiles import SmoothingKernel, smoothing_kernel

__all__ = ["NadarayaWatsonResult", "default_bandwidth_grid", "nadaraya_watson", "smoothing_weights"]


@dataclass(frozen=True)
class NadarayaWatsonResult:
    """The Nadaraya–Watson fit m̂ at Xnew and how its bandwidth was chosen.

    `mean`: m̂(Xnew) (m,). `bandwidth`: h. `kernel`: the smoothing kernel's name. `loo_mse`: the
    leave-one-out mean squared error (1/n)Σᵢ (yᵢ − m̂₋ᵢ(xᵢ))² at h (None if not computed; `loo_score`
    is its former name); `loo_residuals`: the yᵢ − m̂₋ᵢ(xᵢ). `bandwidth_grid`, `loo_scores`: the candidates searched and
    their scores (None when h was given); a candidate with which some xᵢ has no other data point in
    its window scores +inf (compact kernels only).
    """

    mean: np.ndarray
    bandwidth: float
    kernel: str
    loo_mse: float | None
    loo_residuals: np.ndarray | None
    bandwidth_grid: np.ndarray | None
    loo_scores: np.ndarray | None

    @property
    def loo_score(self) -> float | None:
        """The former name of `loo_mse`, the leave-one-out mean squared error."""
        return self.loo_mse

    def to_dict(self) -> dict:
        return record_dict(self)


def default_bandwidth_grid(X, num: int = 30) -> np.ndarray:
    """Candidate bandwidths h₀·[0.05, 5] (log-spaced), h₀ = σ̂ n^{−1/(d+4)} the Scott-rule scale.

    σ̂² is the mean of the per-column sample variances (ddof = 1) of X (n, d).
    """
    return scott_bandwidth(check_data(X)) * np.geomspace(0.05, 5.0, check_integer(num, "num", 1))


def _weight_sums(dist: Distances, q: Query, Y: np.ndarray, hs, kern: SmoothingKernel, loo: bool):
    """Σⱼ wᵢⱼ Yⱼ and Σⱼ wᵢⱼ for every bandwidth in hs, block by block over the query rows q.

    wᵢⱼ = k(‖aᵢ − xⱼ‖²/h²) up to a factor common to row i (which cancels in the ratio): with the
    Gaussian, a row whose weights would underflow (a point far from every xⱼ) is recomputed with its
    largest weight scaled to 1, so no row is 0/0. With `loo`, q holds X itself and wᵢᵢ = 0.
    Returns sums (len(hs), m, k) and denominators (len(hs), m).
    """
    m, n = len(q), len(Y)
    V = np.hstack([Y, np.ones((n, 1))])  # [Y, 1]: one product gives Σ wY and Σ w
    sums = np.empty((len(hs), m, Y.shape[1]))
    dens = np.empty((len(hs), m))
    for k, h in enumerate(hs):
        bw = Bandwidth(dist, float(h), kern)
        S = np.concatenate(map_row_blocks(lambda rows, bw=bw: weight_block(dist, q, rows, bw, V, own=loo)[0], m, n))
        sums[k], dens[k] = S[:, :-1], S[:, -1]
    return sums, dens


def smoothing_weights(X, Xnew, bandwidth: float, kernel="gaussian") -> np.ndarray:
    """The equivalent kernel k(x, xₙ) = g(x − xₙ) / Σₘ g(x − xₘ) (seed 002, eq. 5) as an (m, n) matrix.

    `X`: the data xₙ (n, d). `Xnew`: the points x (m, d). `bandwidth`: h, g(u) = K(u/h). Each row sums
    to one (seed 002, eq. 7). Dense: for large n·m use `nadaraya_watson`, which never forms it.
    """
    X, Xnew = check_data(X, Xnew=Xnew)
    h, kern = check_bandwidth(bandwidth), smoothing_kernel(kernel)
    dist = Distances(X)
    q, bw = dist.query(Xnew), Bandwidth(dist, h, kern)
    W = np.concatenate(map_row_blocks(lambda rows: weight_block(dist, q, rows, bw)[0], len(q), len(X)))
    den = W.sum(axis=1)
    _check_neighbours(den, h, kern)
    return W / den[:, None]  # k(x, xₙ) = g(x − xₙ) / Σₘ g(x − xₘ)


def _check_neighbours(den: np.ndarray, h: float, kern: SmoothingKernel) -> None:
    empty = np.flatnonzero(den <= 0)
    if empty.size:
        raise ValueError(
            f"{empty.size} point(s) of Xnew (the first at row {empty[0]}) have no data point within bandwidth "
            f"{h:.4g} under the compact {kern.name} kernel, so m̂ is 0/0 there: give a larger bandwidth or use "
            "kernel='gaussian'"
        )


def _loo_scores(dist: Distances, y_scaled: np.ndarray, hs, kern: SmoothingKernel):
    """Leave-one-out residuals yᵢ − m̂₋ᵢ(xᵢ) (len(hs), n) and mean squared errors (len(hs),), in the units of y_scaled.

    A candidate with which some xᵢ has no other point in its window (compact kernels) scores +inf.
    """
    sums, dens = _weight_sums(dist, dist.data_query(), y_scaled[:, None], hs, kern, loo=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        resid = y_scaled[None, :] - sums[:, :, 0] / dens  # yᵢ − m̂₋ᵢ(xᵢ) for every candidate h
    return resid, np.where(np.all(dens > 0, axis=1), np.mean(resid**2, axis=1), np.inf)


def nadaraya_watson(X, y, Xnew=None, bandwidth=None, kernel="gaussian", *, loo: bool = True) -> NadarayaWatsonResult:
    """Nadaraya–Watson regression m̂(x) = Σᵢ K((x − xᵢ)/h) yᵢ / Σⱼ K((x − xⱼ)/h)   (seeds 002, 004).

    `X`: inputs xᵢ (n, d); `y`: targets yᵢ (n,); `Xnew`: where to evaluate m̂ (m, d), X if None.
    `bandwidth`: h > 0; None chooses h from `default_bandwidth_grid(X)` by leave-one-out error, an array
    chooses among those candidates: h = argmin (1/n)Σᵢ (yᵢ − m̂₋ᵢ(xᵢ))², m̂₋ᵢ the fit without (xᵢ, yᵢ)
    (first minimum on ties; a SmoothingWarning if it is the grid's smallest or largest value — on an
    evenly spaced design the leave-one-out error can keep falling below the spacing toward its h → 0 limit, where the
    Gaussian fit turns into averaging each point's nearest neighbours: the warning then says the data do not pin h
    down; give h, e.g. the spacing).
    `kernel`: a name from `SMOOTHING_KERNELS` (radial: K depends on ‖u‖; the Gaussian's h is its
    standard deviation, a compact kernel's h the radius of its window). `loo`: also report the
    leave-one-out score at a given h (an extra n × n pass; always done when h is chosen); where some xᵢ
    has no other point in its window (compact kernels) the score is +inf and that residual NaN.

    Any finite h > 0 and any finite X, y, Xnew: distances are taken in centred coordinates scaled by
    powers of two, and h enters as (2ᵏ/h)², so nothing overflows. Compact kernels: a point of Xnew with
    no xᵢ within distance h raises a ValueError (no silent NaN, no fallback). The Gaussian never does:
    where all weights underflow they are recomputed relative to the nearest xᵢ (log-sum-exp), so m̂
    tends to that point's y far from the data. m̂ always lies in [min y, max y].
    Evaluated in row blocks of at most `BLOCK_BYTES` (on `THREADS` threads), so memory stays bounded
    for large n·m.
    """
    X, y = check_data(X, y)
    Xnew = X if Xnew is None else check_data(X, Xnew=Xnew)[1]
    loo = check_flag(loo, "loo")
    kern = smoothing_kernel(kernel)
    dist = Distances(X)
    k = int(power_of_two(np.max(np.abs(y))))
    y_scaled = np.ldexp(y, -k)  # y/2ᵏ, |y/2ᵏ| < 1: Σ wᵢyᵢ cannot overflow
    grid = scores = loo_mse = loo_resid = None
    if bandwidth is None or np.ndim(bandwidth) == 1:
        grid = default_bandwidth_grid(X) if bandwidth is None else check_grid(bandwidth)
        if len(X) < 2:
            raise ValueError("choosing the bandwidth by leave-one-out needs at least 2 data points")
        resid, scaled_scores = _loo_scores(dist, y_scaled, grid, kern)
        if not np.any(np.isfinite(scaled_scores)):
            raise ValueError(
                f"no candidate bandwidth leaves every xᵢ a neighbour under the compact {kern.name} kernel: "
                "give larger candidates or use kernel='gaussian'"
            )
        best = int(np.argmin(scaled_scores))  # first minimum on ties
        warn_at_grid_edge(grid, best, "the leave-one-out bandwidth", scores=scaled_scores)
        h, resid, scaled_score = float(grid[best]), resid[best], scaled_scores[best]
        scores = _unscale_mse(scaled_scores, k)
    else:
        h = check_bandwidth(bandwidth)
        resid = scaled_score = None
        if loo and len(X) > 1:
            resid, scaled_score = (a[0] for a in _loo_scores(dist, y_scaled, [h], kern))
    if resid is not None:
        with np.errstate(over="ignore"):
            loo_resid, loo_mse = np.ldexp(resid, k), float(_unscale_mse(scaled_score, k))
        if np.isfinite(scaled_score) and not np.isfinite(loo_mse):
            raise ValueError(f"y is too large (max |y| = {np.max(np.abs(y)):.3g}): its mean squared leave-one-out error "
                             "overflows float64; rescale y")
    sums, dens = _weight_sums(dist, dist.query(Xnew), y_scaled[:, None], [h], kern, loo=False)
    _check_neighbours(dens[0], h, kern)
    ratio = sums[0, :, 0] / dens[0]  # m̂(x)/2ᵏ = Σᵢ k_h(x − xᵢ) yᵢ/2ᵏ / Σⱼ k_h(x − xⱼ)   (seed 002, eq. 4)
    mean = np.clip(np.ldexp(ratio, k), y.min(), y.max())  # a weighted mean of the yᵢ: clipped against round-off
    return NadarayaWatsonResult(mean, h, kern.name, loo_mse, loo_resid, grid, scores)


def _unscale_mse(scaled, k: int):
    """Mean squared errors of y from those of y/2ᵏ: times 4ᵏ (inf where that overflows)."""
    with np.errstate(over="ignore"):
        return np.ldexp(scaled, 2 * k)
