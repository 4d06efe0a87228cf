"""Empirical Bayes against MCMC, side by side: hyperparameters, LOO, and the predictive distributions."""

from dataclasses import dataclass

import arviz as az
import numpy as np
import xarray as xr

from bayeskern._json import record_dict
from bayeskern._validation import check_probability
from bayeskern.fit.empirical_bayes import EmpiricalBayesResult

__all__ = ["EBvsMCMC", "compare_eb_mcmc"]


@dataclass(frozen=True)
class EBvsMCMC:
    """How far the plug-in (EB) answer is from the fully Bayesian one.

    `params`: name → {"eb", "eb_sd" (Laplace), "mean", "sd", "lower", "upper" (central `prob`
    interval of the posterior), "z" = (eb − mean)/sd, "eb_in_interval"}. `elpd_loo_eb`: Σᵢ log p(tᵢ | t₋ᵢ, θ̂)
    at the EB optimum (exact, but θ̂ was fitted to all of t, so it is optimistic). `elpd_loo_mcmc`,
    `elpd_loo_mcmc_se`: ArviZ's PSIS-LOO on the DataTree. With predictions at Xnew:
    `max_mean_gap_sd` = maxₓ |m_EB(x) − m_MCMC(x)| / sd_MCMC(x) for f, and `sd_ratio` =
    (min, median, max) of sd_EB(x)/sd_MCMC(x) — below 1 where plugging in θ̂ understates uncertainty — over the points
    where f is uncertain: `exact_points` counts those left out, where both sds are 0 (f known exactly, e.g. a linear
    kernel at x = 0); both None if every point is such.
    """

    params: dict
    elpd_loo_eb: float
    elpd_loo_mcmc: float
    elpd_loo_mcmc_se: float
    max_mean_gap_sd: float | None
    sd_ratio: tuple | None
    prob: float
    exact_points: int = 0

    def to_dict(self) -> dict:
        """The fields as JSON values (`_json.jsonable`: lists for arrays and tuples, None for NaN or ±inf)."""
        return record_dict(self)


def compare_eb_mcmc(eb: EmpiricalBayesResult, dt: xr.DataTree, prob: float = 0.95) -> EBvsMCMC:
    """Compare an `empirical_bayes` result with a `bayeskern.fit.mcmc` DataTree of the same model; `prob`: the central
    interval's mass, 0.95 as `predictive_bands` and the report (ArviZ 1's own default is 0.89)."""
    if not isinstance(eb, EmpiricalBayesResult):
        raise ValueError(f"eb must be the result of bayeskern.fit.empirical_bayes, got {type(eb).__name__}")
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children or "log_likelihood" not in dt.children:
        raise ValueError("dt must come from bayeskern.fit.mcmc (posterior and log_likelihood groups)")
    prob = check_probability(prob, "prob")
    posterior = dt["posterior"].to_dataset()
    missing = [name for name in eb.params if name not in posterior]
    if missing:
        raise ValueError(f"the DataTree has no draws of {', '.join(missing)}: is it the same model?")
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    params = {}
    for name, value in eb.params.items():
        draws = posterior[name]
        mean = draws.mean(("chain", "draw")).values
        sd = draws.std(("chain", "draw")).values
        lower, upper = draws.quantile([lo, hi], dim=("chain", "draw")).values
        params[name] = {
            "eb": value, "eb_sd": eb.laplace.sd[name], "mean": _plain(mean), "sd": _plain(sd),
            "lower": _plain(lower), "upper": _plain(upper), "z": _plain((np.asarray(value) - mean) / sd),
            "eb_in_interval": bool(np.all((lower <= value) & (value <= upper))),
        }
    elpd_eb = float(np.sum(eb.conditioned.loo_log_predictive))  # Σ log p(tᵢ | t₋ᵢ, θ̂), the model conditioned at the optimum
    loo = az.loo(dt)

    gap, ratio, exact = None, None, 0
    predictive = dt["posterior_predictive"].to_dataset() if "posterior_predictive" in dt.children else None
    if predictive is not None and "f_mean" in predictive:
        dims = ("chain", "draw_thinned")
        mix_mean = predictive["f_mean"].mean(dims).values
        # law of total variance: Var f = E[Var f | θ] + Var E[f | θ]
        mix_sd = np.sqrt(predictive["f_var"].mean(dims).values + predictive["f_mean"].var(dims).values)
        at_eb = eb.posterior(Xnew=predictive["Xnew"].values)
        uncertain = (at_eb.std > 0) | (mix_sd > 0)  # where both are 0, f is known exactly: nothing to compare
        exact = int(np.sum(~uncertain))
        if uncertain.any():
            gap = float(np.max(np.abs(at_eb.mean - mix_mean)[uncertain] / mix_sd[uncertain]))
            r = at_eb.std[uncertain] / mix_sd[uncertain]
            ratio = (float(r.min()), float(np.median(r)), float(r.max()))
    return EBvsMCMC(params, elpd_eb, float(loo.elpd), float(loo.se), gap, ratio, prob, exact)


def _plain(v):
    v = np.asarray(v)
    return float(v) if v.ndim == 0 else v
