"""Gaussian kernel density estimation: pdf and logpdf in memory-bounded blocks, bandwidth rules, and sampling."""


import numpy as np

from bayeskern._json import jsonable

from bayeskern._linalg import LOG_2PI
from bayeskern._validation import check_integer, rng_from
from bayeskern.smoothing._blocks import (
    Bandwidth, Distances, Query, check_bandwidth, check_data, check_grid, map_row_blocks, silverman_bandwidth,
    scott_bandwidth, warn_at_grid_edge, weight_block,
)
from bayeskern.smoothing.profiles import smoothing_kernel

_GAUSSIAN = smoothing_kernel("gaussian")

__all__ = ["KDE", "BANDWIDTH_METHODS"]

#: the bandwidth rules `KDE` accepts by name
BANDWIDTH_METHODS = ("scott", "silverman", "loo")


class KDE:
    """f̂(x) = (1/n) Σᵢ φ_h(x − Xᵢ), φ_h the isotropic Gaussian density N(0, h²I) on ℝᵈ   (seed 001).

    `X`: the sample X₁..Xₙ (n, d), a 1-D array meaning d = 1. `bandwidth`: h, the standard deviation
    of the Gaussian kernel in every coordinate, on the raw scale of X (no rescaling by the data
    covariance) — or a rule: "scott" (None, the default) h = σ̂ n^{−1/(d+4)}, "silverman"
    h = σ̂ (n(d+2)/4)^{−1/(d+4)}, with σ̂² the mean of the column variances (ddof = 1), or "loo": the h
    that maximises the leave-one-out log likelihood Σᵢ log f̂₋ᵢ(Xᵢ) over `bandwidth_grid` (default
    h_silverman·[0.1, 3], 30 log-spaced values); an array of candidates means "loo" over those.

    scipy's `gaussian_kde` uses the kernel covariance factor²·Σ̂ (Σ̂ the data covariance); in 1-D our h
    equals scipy's with `bw_method=h / X.std(ddof=1)`, and our Scott and Silverman rules then give
    scipy's. In d > 1 the two agree when Σ̂ ∝ I.

    Any finite h > 0 works: h enters only through (x − Xᵢ)/h and log h (never h², 1/h² or hᵈ), and
    log f̂ is a log-sum-exp relative to the nearest Xᵢ, so it is finite and exact wherever it is a float64
    (a ValueError names Xnew where it is below −1.8e308, e.g. 1e200 from the data with h = 0.01). A
    rule needs a spread above round-off, σ̂ > 8ε·max|X|; X and Xnew entries must stay within ±2¹⁰²².

    Attributes: `X`, `n`, `d`, `bandwidth`, `bandwidth_method` ("given", "scott", "silverman" or
    "loo"), and for "loo" `bandwidth_grid` and `loo_log_likelihoods` (per candidate).
    """

    def __init__(self, X, bandwidth=None, bandwidth_grid=None):
        self.X = check_data(X)
        self.n, self.d = self.X.shape
        self.bandwidth_grid = self.loo_log_likelihoods = None
        self._dist = Distances(self.X)
        if bandwidth is None or isinstance(bandwidth, str):
            method = "scott" if bandwidth is None else bandwidth.lower()
            if method not in BANDWIDTH_METHODS:
                raise ValueError(f"bandwidth must be a positive number, an array of candidates or one of {BANDWIDTH_METHODS}, got {bandwidth!r}")
        elif np.ndim(bandwidth) == 1:
            if bandwidth_grid is not None:
                raise ValueError("give the candidate bandwidths either as bandwidth or as bandwidth_grid, not both")
            method, bandwidth_grid = "loo", check_grid(bandwidth)
        else:
            method = "given"
        if bandwidth_grid is not None and method != "loo":
            raise ValueError(f"bandwidth_grid is used only with bandwidth='loo', not with bandwidth={bandwidth!r}")
        n = self.n
        if method == "given":
            h = check_bandwidth(bandwidth)
        elif method == "scott":
            h = scott_bandwidth(self.X)
        elif method == "silverman":
            h = silverman_bandwidth(self.X)
        else:
            if n < 2:
                raise ValueError("the leave-one-out bandwidth needs at least 2 data points")
            if bandwidth_grid is None:
                grid = silverman_bandwidth(self.X) * np.geomspace(0.1, 3.0, 30)
            else:
                grid = check_grid(bandwidth_grid, "bandwidth_grid")
            scores = self._loo_log_likelihoods(grid)
            if not np.any(np.isfinite(scores)):
                name = "bandwidth" if np.ndim(bandwidth) == 1 else "bandwidth_grid"
                raise ValueError(
                    f"{name}: at every candidate (the largest {np.max(grid):.3g}) the leave-one-out log likelihood is "
                    "below the float64 range (the candidates are far smaller than the gaps between the data): give larger ones"
                )
            best = int(np.argmax(scores))
            warn_at_grid_edge(grid, best, "the leave-one-out bandwidth", " (duplicated points push it to 0)", scores)
            h, self.bandwidth_grid, self.loo_log_likelihoods = float(grid[best]), grid, scores
        self.bandwidth, self.bandwidth_method = float(h), method

    def __repr__(self) -> str:
        return f"KDE(n={self.n}, d={self.d}, bandwidth={self.bandwidth:.4g}, bandwidth_method={self.bandwidth_method!r})"

    # -- evaluation ----------------------------------------------------------------------------
    def _log_sums(self, q: Query, hs, loo: bool = False) -> np.ndarray:
        """log Σⱼ exp(−‖aᵢ − Xⱼ‖²/2h²) for each h in hs (len(hs), m), block by block.

        A row whose sum would underflow (a point far from every Xⱼ) is recomputed by log-sum-exp,
        log Σⱼ exp(eᵢⱼ) = Lᵢ + log Σⱼ exp(eᵢⱼ − Lᵢ), Lᵢ = maxⱼ eᵢⱼ, so its log density is finite instead of
        log 0 = −inf (it is −inf only where Lᵢ itself is below the float range). With `loo`, q holds X and
        the j = i term is left out.
        """
        m, n = len(q), self.n
        ones = np.ones((n, 1))
        out = np.empty((len(hs), m))
        for k, h in enumerate(hs):
            bw = Bandwidth(self._dist, float(h), _GAUSSIAN)

            def block(rows, bw=bw):
                S, L = weight_block(self._dist, q, rows, bw, ones, own=loo)
                with np.errstate(divide="ignore"):
                    return np.log(S[:, 0]) + L  # log Σⱼ exp(eᵢⱼ) = log Σⱼ exp(eᵢⱼ − Lᵢ) + Lᵢ   (log-sum-exp)

            out[k] = np.concatenate(map_row_blocks(block, m, n))
        return out

    def _log_norm(self, h: float, n: int) -> float:
        return -np.log(n) - self.d * (0.5 * LOG_2PI + np.log(h))  # log(1 / (n (2π)^{d/2} hᵈ)), hᵈ never formed

    def _logpdf(self, Xnew) -> np.ndarray:
        """log f̂ at the rows of Xnew, −inf where it is below the float range."""
        Xnew = check_data(self.X, Xnew=Xnew)[1]
        h = self.bandwidth
        # log f̂(x) = log Σᵢ exp(−‖x − Xᵢ‖²/2h²) − log(n (2π)^{d/2} hᵈ)
        return self._log_sums(self._dist.query(Xnew), [h])[0] + self._log_norm(h, self.n)

    def logpdf(self, Xnew) -> np.ndarray:
        """log f̂(x) at the rows of Xnew (m, d): (m,), by log-sum-exp (finite far from the data).

        A ValueError where log f̂ is below the float64 range (about −1.8e308: a point some 1e154
        bandwidths from every data point), where no finite number is correct (`pdf` is 0 there).
        """
        out = self._logpdf(Xnew)
        lost = np.flatnonzero(~np.isfinite(out))
        if lost.size:
            raise ValueError(
                f"log f̂ at {lost.size} row(s) of Xnew (the first at row {lost[0]}) is below the float64 range "
                f"(< −1.8e308): the point is more than ~1e154 bandwidths (bandwidth h = {self.bandwidth:.4g}) from every data point"
            )
        return out

    def pdf(self, Xnew) -> np.ndarray:
        """f̂(x) = (1/n) Σᵢ φ_h(x − Xᵢ) at the rows of Xnew (m, d): (m,); 0 where it underflows.

        A ValueError where f̂ exceeds the float64 range (h below ~1e−308: the peaks are taller than 1.8e308).
        """
        with np.errstate(over="ignore"):
            out = np.exp(self._logpdf(Xnew))
        if not np.all(np.isfinite(out)):
            raise ValueError(f"f̂ exceeds the float64 range at some rows of Xnew (bandwidth h = {self.bandwidth:.3g} makes "
                             "peaks taller than 1.8e308): use logpdf")
        return out

    __call__ = pdf

    def _loo_log_likelihoods(self, grid) -> np.ndarray:
        """Σᵢ log f̂₋ᵢ(Xᵢ), f̂₋ᵢ = (1/(n−1)) Σ_{j≠i} φ_h(· − Xⱼ), for each h in grid (−inf below the float range)."""
        log_sums = self._log_sums(self._dist.data_query(), grid, loo=True)
        return np.array([log_sums[k].sum() + self.n * self._log_norm(h, self.n - 1) for k, h in enumerate(grid)])

    def loo_log_likelihood(self, bandwidth=None) -> float:
        """Σᵢ log f̂₋ᵢ(Xᵢ) at h = `bandwidth` (this KDE's h if None): the score the "loo" rule maximises.

        A ValueError where it is below the float64 range (h so small against the gaps between the Xᵢ).
        """
        h = self.bandwidth if bandwidth is None else check_bandwidth(bandwidth)
        if self.n < 2:
            raise ValueError("the leave-one-out log likelihood needs at least 2 data points")
        out = float(self._loo_log_likelihoods([h])[0])
        if not np.isfinite(out):
            raise ValueError(f"the leave-one-out log likelihood at bandwidth {h:.3g} is below the float64 range "
                             "(< −1.8e308): h is far smaller than the gaps between the data points")
        return out

    # -- the generative model ------------------------------------------------------------------
    def sample(self, n: int, seed=None) -> np.ndarray:
        """n draws from f̂ (n, d) by the seeds' recipe: i ~ Uniform{1..N}, then x ~ N(Xᵢ, h²I)   (seed 001).

        `seed`: None, a non-negative int or a numpy Generator (whose stream goes on).
        """
        n = check_integer(n, "n", 1)
        rng = rng_from(seed)
        idx = rng.integers(0, self.n, size=n)  # ① an index uniformly from 1..N
        with np.errstate(over="ignore", invalid="ignore"):
            draws = self.X[idx] + self.bandwidth * rng.standard_normal((n, self.d))  # ② Gaussian, mean Xᵢ, variance h²
        if not np.all(np.isfinite(draws)):
            raise ValueError(f"draws overflow float64: bandwidth h = {self.bandwidth:.3g} (times a standard normal) plus "
                             "X exceeds 1.8e308; give a smaller bandwidth")
        return draws

    def to_dict(self) -> dict:
        return jsonable({
            "n": self.n, "d": self.d, "bandwidth": self.bandwidth, "bandwidth_method": self.bandwidth_method,
            "bandwidth_grid": self.bandwidth_grid, "loo_log_likelihoods": self.loo_log_likelihoods,
        })
