"""The seeds' bias–variance orders of the KDE, bias² ∝ h⁴ and variance ∝ 1/(n hᵖ), reproduced by simulation."""

from dataclasses import dataclass, fields

import numpy as np

from bayeskern._json import jsonable
import scipy.stats

from bayeskern._validation import check_integer, check_number
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
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


def kde_orders(x0: float = 0.5, hs_bias=None, hs_var=None, ns=None, n_fixed: int = 2000, h_fixed: float = 0.05,
               reps: int = 300, seed=0) -> KDEOrders:
    """Simulate the KDE at x₀ on N(0, 1) data and fit the slopes of bias² and variance (seed 001).

    Defaults choose where the asymptotic orders show: `hs_bias` = [0.05, 0.4] (6 values; the O(h⁶) term
    bends the slope by < 0.1), `hs_var` = [0.01, 0.08] (4 values; the −f(x₀)²/n part of the exact
    variance bends it by < 0.1 there), `ns` = 250..4000 (5 values; at fixed h the variance is exactly ∝ 1/n).
    `reps`: replicate data sets per (n, h). `seed`: for the replicates.
    """
    x0 = float(check_number(x0, "x0"))
    hs_bias = np.geomspace(0.05, 0.4, 6) if hs_bias is None else check_number(hs_bias, "hs_bias", positive=True)
    hs_var = np.geomspace(0.01, 0.08, 4) if hs_var is None else check_number(hs_var, "hs_var", positive=True)
    ns = np.array([250, 500, 1000, 2000, 4000]) if ns is None else np.asarray(ns, dtype=int)
    n_fixed, reps = check_integer(n_fixed, "n_fixed", 2), check_integer(reps, "reps", 2)
    h_fixed = float(check_number(h_fixed, "h_fixed", positive=True))
    rng = np.random.default_rng(seed)

    def expected(h):
        return scipy.stats.norm.pdf(x0, 0.0, np.sqrt(1.0 + h**2))  # E f̂(x₀) = ∫ φ_h(x₀ − u) φ(u) du

    def replicates(n, h):
        return np.array([KDE(rng.standard_normal(n), bandwidth=h).pdf([x0])[0] for _ in range(reps)])

    def slope(x, v):
        return float(np.polyfit(np.log(x), np.log(v), 1)[0])

    bias2 = (expected(hs_bias) - scipy.stats.norm.pdf(x0)) ** 2  # bias² = (E f̂(x₀) − f(x₀))² ≈ C h⁴
    sims = [replicates(n_fixed, h) for h in hs_var]
    var_h = np.array([f.var(ddof=1) for f in sims])  # Var f̂(x₀) ≈ f(x₀) ∫K² / (n h)
    z = np.array([(f.mean() - expected(h)) / (f.std(ddof=1) / np.sqrt(reps)) for f, h in zip(sims, hs_var, strict=True)])
    var_n = np.array([replicates(int(n), h_fixed).var(ddof=1) for n in ns])
    return KDEOrders(
        x0, hs_bias, bias2, slope(hs_bias, bias2), hs_var, var_h, slope(hs_var, var_h), z, ns, var_n, slope(ns, var_n),
        n_fixed, h_fixed, reps,
    )
