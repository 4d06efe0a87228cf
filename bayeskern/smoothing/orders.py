"""The seeds' bias–variance orders of the KDE, bias² ∝ h⁴ and variance ∝ 1/(n hᵖ), reproduced by simulation."""

from dataclasses import dataclass

import numpy as np

from bayeskern._json import record_dict
from bayeskern._validation import check_integer, check_number, rng_from
from bayeskern.smoothing._blocks import check_bandwidth, reject_complex
from bayeskern.smoothing.density import KDE

__all__ = ["KDEOrders", "kde_orders"]


@dataclass(frozen=True)
class KDEOrders:
    """Fitted log–log slopes of the KDE's bias² and variance at x₀ for data from N(0, 1) (p = 1).

    `bias2_slope`: slope of log bias² against log h over `hs_bias` (the seeds: 4). The bias is exact,
    bias(h) = E f̂(x₀) − f(x₀) with E f̂(x₀) = N(x₀; 0, 1 + h²), the Gaussian convolution — Monte Carlo
    noise would swamp a bias of order h² at small h — and `mc_mean_z` checks the simulation against it:
    (mean of the replicates − E f̂(x₀)) / standard error, for each h in `hs_var`.
    `var_h_slope`: slope of log Var f̂(x₀) against log h over `hs_var` at n = `n_fixed` (the seeds: −p = −1);
    `var_n_slope`: against log n over `ns` at h = `h_fixed` (−1). Variances are over `reps` replicate data
    sets; `bias2`, `var_h`, `var_n` hold the values behind each fit.
    """

    x0: float
    hs_bias: np.ndarray
    bias2: np.ndarray
    bias2_slope: float
    hs_var: np.ndarray
    var_h: np.ndarray
    var_h_slope: float
    mc_mean_z: np.ndarray
    ns: np.ndarray
    var_n: np.ndarray
    var_n_slope: float
    n_fixed: int
    h_fixed: float
    reps: int

    def to_dict(self) -> dict:
        return record_dict(self)


def kde_orders(x0: float = 0.5, hs_bias=None, hs_var=None, ns=None, n_fixed: int = 2000, h_fixed: float = 0.05,
               reps: int = 300, seed=0) -> KDEOrders:
    """Simulate the KDE at x₀ on N(0, 1) data and fit the slopes of bias² and variance (seed 001).

    Defaults choose where the asymptotic orders show: `hs_bias` = [0.05, 0.4] (6 values; the O(h⁶) term
    bends the slope by < 0.1), `hs_var` = [0.01, 0.08] (4 values; the −f(x₀)²/n part of the exact
    variance bends it by < 0.1 there), `ns` = 250..4000 (5 values; at fixed h the variance is exactly ∝ 1/n).
    `reps`: replicate data sets per (n, h). `seed`: for the replicates (None, an int ≥ 0 or a numpy Generator).
    A ValueError names the argument where a quantity to fit is 0 or not finite (h so small or large that
    f̂(x₀) no longer varies, or the bias underflows).
    """
    for value, name in ((x0, "x0"), (hs_bias, "hs_bias"), (hs_var, "hs_var"), (h_fixed, "h_fixed")):
        reject_complex(value, name)
    x0 = float(check_number(x0, "x0", scalar=True))
    hs_bias = np.geomspace(0.05, 0.4, 6) if hs_bias is None else _grid(hs_bias, "hs_bias")
    hs_var = np.geomspace(0.01, 0.08, 4) if hs_var is None else _grid(hs_var, "hs_var")
    ns = np.array([250, 500, 1000, 2000, 4000]) if ns is None else _sizes(ns)
    n_fixed, reps = check_integer(n_fixed, "n_fixed", 2), check_integer(reps, "reps", 2)
    h_fixed = check_bandwidth(h_fixed, "h_fixed")
    rng = rng_from(seed)
    import scipy.stats  # here, not at module level: it costs 0.4 s of `import bayeskern`

    def expected(h):
        return scipy.stats.norm.pdf(x0, 0.0, np.sqrt(1.0 + h**2))  # E f̂(x₀) = ∫ φ_h(x₀ − u) φ(u) du

    def replicates(n, h):
        return np.array([KDE(rng.standard_normal(n), bandwidth=h).pdf([x0])[0] for _ in range(reps)])

    bias2 = (expected(hs_bias) - scipy.stats.norm.pdf(x0)) ** 2  # bias² = (E f̂(x₀) − f(x₀))² ≈ C h⁴
    bias2_slope = _slope(hs_bias, bias2, "hs_bias", x0)
    sims = [replicates(n_fixed, h) for h in hs_var]
    var_h = np.array([f.var(ddof=1) for f in sims])  # Var f̂(x₀) ≈ f(x₀) ∫K² / (n h)
    var_h_slope = _slope(hs_var, var_h, "hs_var", x0)
    z = np.array([(f.mean() - expected(h)) / (f.std(ddof=1) / np.sqrt(reps)) for f, h in zip(sims, hs_var, strict=True)])
    var_n = np.array([replicates(int(n), h_fixed).var(ddof=1) for n in ns])
    var_n_slope = _slope(ns, var_n, "ns (with h_fixed)", x0)
    return KDEOrders(
        x0, hs_bias, bias2, bias2_slope, hs_var, var_h, var_h_slope, z, ns, var_n, var_n_slope,
        n_fixed, h_fixed, reps,
    )


def _grid(values, name: str) -> np.ndarray:
    """At least two positive finite values, 1-D."""
    a = check_number(values, name, positive=True)
    if a.ndim != 1 or a.size < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 positive values (a slope is fitted), got shape {a.shape}")
    return a


def _sizes(ns) -> np.ndarray:
    """At least two sample sizes, each an integer ≥ 2."""
    a = np.asarray(ns)
    if a.ndim != 1 or a.size < 2 or a.dtype.kind not in "iu" or np.any(a < 2):
        raise ValueError(f"ns must be a 1-D array of at least 2 integer sample sizes ≥ 2, got {ns!r}")
    return a.astype(np.int64)


def _slope(x: np.ndarray, v: np.ndarray, name: str, x0: float) -> float:
    """The least-squares slope of log v against log x; a ValueError naming `name` where some v is 0 or not finite."""
    bad = ~(np.isfinite(v) & (v > 0))
    if bad.any():
        raise ValueError(
            f"{name}: at {x[np.flatnonzero(bad)[0]]:.3g} the quantity whose log–log slope is fitted is {v[bad][0]:.3g} "
            f"(it must be positive and finite; x0 = {x0:.3g}): choose values where the KDE at x0 varies"
        )
    return float(np.polyfit(np.log(x), np.log(v), 1)[0])
