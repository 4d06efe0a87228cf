"""The kernel trick at the sampling level: a BLR model and its GP twin must give the same posterior."""

from dataclasses import dataclass

import arviz as az
import numpy as np
import scipy.stats
import xarray as xr

from bayeskern._json import record_dict
from bayeskern._validation import check_model, check_number, int_seed
from bayeskern.fit.mcmc import mcmc

__all__ = ["SamplingCheckResult", "kernel_trick_mcmc"]


@dataclass(frozen=True)
class SamplingCheckResult:
    """Two posteriors compared within Monte Carlo error.

    For each shared hyperparameter: `z` = (mean₁ − mean₂)/√(MCSE₁² + MCSE₂²), where the MCSE (ArviZ,
    from the effective sample size) accounts for autocorrelation — if the two posteriors are equal, z is
    approximately N(0, 1); and `ks_pvalue`, a two-sample Kolmogorov–Smirnov test on draws thinned to
    about one per effective sample (so that they are nearly independent), which also sees differences
    in spread and shape. `predictive_z`: the largest |z| over Xnew for the mixture mean of f.
    `passed`: every |z| ≤ z_max and every p ≥ p_min.
    """

    passed: bool
    z: dict
    ks_pvalue: dict
    predictive_z: float | None
    z_max: float
    p_min: float

    def to_dict(self) -> dict:
        return record_dict(self)


def _thinned(draws: np.ndarray, ess: float) -> np.ndarray:
    """Draws (chain, draw) of one scalar, thinned to about one per effective sample."""
    step = max(1, int(np.ceil(draws.size / max(ess, 1.0))))
    return draws[:, ::step].ravel()


def _mean_and_mcse(ds: xr.Dataset, name: str) -> tuple[np.ndarray, np.ndarray]:
    # ArviZ 1.3 is given a DataTree: handed a bare Dataset holding both "scale" and "sigma", az.mcse
    # and az.ess silently drop "sigma"
    tree = xr.DataTree.from_dict({"posterior": ds[[name]]})
    return np.asarray(ds[name].mean(("chain", "draw")).values), np.asarray(az.mcse(tree, method="mean")[name].values)


def _ess(ds: xr.Dataset, name: str) -> np.ndarray:
    return np.asarray(az.ess(xr.DataTree.from_dict({"posterior": ds[[name]]}))[name].values)


def kernel_trick_mcmc(blr_model, gp_model, shared, Xnew=None, z_max: float = 4.0, p_min: float = 1e-3, **mcmc_kwargs) -> SamplingCheckResult:
    """Sample both models with `bayeskern.fit.mcmc` and compare the posteriors of the `shared` names.

    `blr_model`: t ~ N(0, ΦΣΦᵀ + σ²I) from `bayeskern.blr.likelihood(collapsed=True)`; `gp_model`: the
    same with `bayeskern.gp.marginal_likelihood` and `FeatureKernel(φ, Σ)`; both with the same priors on
    `shared` (e.g. ("sigma", "scale")). With `Xnew`, the mixture means of f at Xnew are compared too.
    `z_max` = 4 makes a false alarm on one quantity about 6·10⁻⁵ likely under equality. The two models
    are sampled with seeds `seed` and `seed + 1` (independent runs).
    """
    models = {"blr_model": check_model(blr_model, "blr_model"), "gp_model": check_model(gp_model, "gp_model")}
    if isinstance(shared, str) or not np.iterable(shared) or not shared or not all(isinstance(n, str) for n in shared):
        raise ValueError(f"shared must be a non-empty list of variable names, got {shared!r}")
    for which, model in models.items():
        missing = [name for name in shared if name not in model.named_vars]
        if missing:
            raise ValueError(f"shared names {missing} that are not variables of {which}")
    z_max = float(check_number(z_max, "z_max", positive=True, scalar=True))
    p_min = float(check_number(p_min, "p_min", nonnegative=True, scalar=True))
    seed = int_seed(mcmc_kwargs.pop("seed", None))
    # independent runs (different seeds): the z and KS statistics assume independent samples
    runs = [mcmc(model, Xnew=Xnew, seed=seed + k, **mcmc_kwargs) for k, model in enumerate((blr_model, gp_model))]
    posteriors = [r["posterior"].to_dataset() for r in runs]
    z, pvalues = {}, {}
    for name in shared:
        if any(name not in p for p in posteriors):
            raise ValueError(f"{name!r} is not a free variable of both models")
        (m1, e1), (m2, e2) = (_mean_and_mcse(p, name) for p in posteriors)
        z[name] = float(np.max(np.abs(m1 - m2) / np.sqrt(e1**2 + e2**2)))
        draws = [np.asarray(p[name].values).reshape(p.sizes["chain"], p.sizes["draw"], -1) for p in posteriors]
        ess = [_ess(p, name).reshape(-1) for p in posteriors]
        # one KS test per component; the smallest p-value is reported
        pvalues[name] = min(
            float(scipy.stats.ks_2samp(*(_thinned(d[:, :, k], e[k]) for d, e in zip(draws, ess, strict=True))).pvalue)
            for k in range(draws[0].shape[2])
        )
    predictive_z = None
    if Xnew is not None:
        means = [r["posterior_predictive"].to_dataset()[["f_mean"]].rename(draw_thinned="draw") for r in runs]
        (m1, e1), (m2, e2) = (_mean_and_mcse(m, "f_mean") for m in means)
        predictive_z = float(np.max(np.abs(m1 - m2) / np.sqrt(e1**2 + e2**2)))
    passed = all(v <= z_max for v in z.values()) and all(p >= p_min for p in pvalues.values())
    passed = passed and (predictive_z is None or predictive_z <= z_max)
    return SamplingCheckResult(passed, z, pvalues, predictive_z, z_max, p_min)
