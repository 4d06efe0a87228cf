"""Per-draw quantities of a marginal Gaussian model: exact LOO densities and the posterior predictive mixed over draws."""

import re
import warnings

import numpy as np
import xarray as xr

from bayeskern._blas import blas_for_size, numpy_blas_on_one_thread
from bayeskern._linalg import JitterWarning
from bayeskern._validation import PACKAGE_DIR, check_probability
from bayeskern.fit._plug_in import PlugIn

__all__ = ["draw_quantities", "predictive_bands"]


def draw_quantities(plug_in: PlugIn, posterior: xr.Dataset, obs_name: str, obs_dim: str, Xnew=None, thin: int = 1, seed=None, obs_coords=None):
    """Walk the posterior draws once, conditioning the model at each: the log_likelihood group (exact LOO
    densities, every draw), and, with `Xnew`, posterior predictive samples of f and y at Xnew (every
    `thin`-th draw).

    Returns (log_likelihood Dataset, posterior_predictive Dataset, max jitter used). The
    posterior_predictive also holds `obs_name`: draws from the leave-one-out predictive
    p(tᵢ | t₋ᵢ, θ) at each draw, which is what ArviZ's LOO-PIT needs for a model whose
    observations are not independent given θ. Each draw costs what its solver costs (O(nM²) for a
    feature map: no n × n matrix).
    """
    rng = np.random.default_rng(seed)
    n, m = len(plug_in.record.y), 0 if Xnew is None else len(Xnew)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    values = {name: np.asarray(posterior[name].values) for name in plug_in.names}
    kept = np.arange(0, draws, thin)
    log_lik, loo_draws = np.empty((chains, draws, n)), np.empty((chains, draws, n))
    f, y, f_mean, f_var = (np.empty((chains, len(kept), m)) for _ in range(4))
    max_jitter = 0.0
    # small matrices: every BLAS pool on one thread (immune to busy cores); else numpy's, whose threads compete with SciPy's
    with warnings.catch_warnings(record=True) as said, blas_for_size(max(plug_in.record.size(), m), larger=numpy_blas_on_one_thread):
        warnings.simplefilter("always")  # jitter is collected (max_jitter) and reported once by the caller; others below
        for c in range(chains):
            for d in range(draws):
                predicts = Xnew is not None and d % thin == 0
                model = plug_in.condition({name: v[c, d] for name, v in values.items()}, Xnew if predicts else None)
                max_jitter = max(max_jitter, model.jitter)
                mu, var, log_lik[c, d] = model.loo
                loo_draws[c, d] = mu + np.sqrt(var) * rng.standard_normal(n)
                if predicts:
                    k = d // thin
                    prediction = model.predict(Xnew, full_cov=True)  # one prediction a draw: mean, var and the draw
                    f[c, k] = model.draws_from(prediction, 1, rng)[0]  # f(Xnew) ~ N(m, K** − kᵀC⁻¹k)
                    y[c, k] = f[c, k] + model.sigma * rng.standard_normal(m)  # y = f + ε, ε ~ N(0, σ²)
                    f_mean[c, k], f_var[c, k] = prediction.mean, prediction.var
    _say_once_each(said, chains * draws)
    log_likelihood, predictive = _as_datasets(posterior, obs_name, obs_dim, obs_coords, kept, Xnew, log_lik, loo_draws, (f, y, f_mean, f_var))
    return log_likelihood, predictive, max_jitter


#: a number in a warning's text (per-draw values: "lowers the VFE bound by 21.9 nats", "σ² = 0.0012")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _say_once_each(said: list, draws: int) -> None:
    """The warnings the draws' walk recorded, but jitter (collected as max_jitter, said once by the caller): each kind —
    its category and its text with the numbers masked — once, at the caller's line, the first draw's numbers, with how
    many draws said it (not once a draw: 4000 for 4 × 1000, nor silenced, as Xnew outside an HSGP's box was)."""
    kinds: dict = {}
    for w in said:
        if not issubclass(w.category, JitterWarning):
            kinds.setdefault((w.category, _NUMBER.sub("#", str(w.message))), []).append(str(w.message))
    for (category, _), messages in kinds.items():
        many = f" (said at {len(messages)} of {draws} posterior draws; the first's numbers)" if len(messages) > 1 else ""
        warnings.warn(messages[0] + many, category, skip_file_prefixes=(PACKAGE_DIR,))


def _as_datasets(posterior, obs_name, obs_dim, obs_coords, kept, Xnew, log_lik, loo_draws, at_xnew):
    """(log_likelihood, posterior_predictive) Datasets with ArviZ's dims and coords."""
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values,
              obs_dim: np.arange(log_lik.shape[-1]) if obs_coords is None else obs_coords}
    log_likelihood = xr.Dataset({obs_name: (("chain", "draw", obs_dim), log_lik)}, coords=coords)
    predictive = xr.Dataset({obs_name: (("chain", "draw", obs_dim), loo_draws)}, coords=coords)
    if Xnew is not None:
        dims = ("chain", "draw_thinned", "xnew")
        coords = {"chain": posterior["chain"].values, "draw_thinned": posterior["draw"].values[kept],
                  "xnew": np.arange(len(Xnew)), "Xnew": (("xnew", "input_dim"), np.asarray(Xnew))}
        names = ("f", "y_new", "f_mean", "f_var")
        predictive = xr.merge([predictive, xr.Dataset({k: (dims, v) for k, v in zip(names, at_xnew, strict=True)}, coords=coords)])
    return log_likelihood, predictive


def predictive_bands(predictive: xr.Dataset | xr.DataTree, prob: float = 0.95) -> xr.Dataset:
    """Mean and central `prob` band at Xnew of f and of new observations y, mixed over the draws.

    `predictive`: `bk.fit.mcmc`'s posterior_predictive group, as a Dataset or as the DataTree node itself (or the whole
    DataTree). `f_mean`: the exact mixture mean (the average of the per-draw posterior means); the bands are
    quantiles of the samples (Monte Carlo).
    """
    prob = check_probability(prob, "prob")
    if isinstance(predictive, xr.DataTree):
        node = predictive["posterior_predictive"] if "posterior_predictive" in predictive.children else predictive
        predictive = node.to_dataset()
    if not isinstance(predictive, xr.Dataset):
        raise ValueError(f"predictive must be bk.fit.mcmc's posterior_predictive (a Dataset or DataTree), got {type(predictive).__name__}")
    if "f" not in predictive:
        raise ValueError("the posterior predictive has no samples at Xnew: pass Xnew to bayeskern.fit.mcmc")
    dims = ("chain", "draw_thinned")
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    out = {"f_mean": predictive["f_mean"].mean(dims), "y_mean": predictive["f_mean"].mean(dims)}
    for name, key in (("f", "f"), ("y", "y_new")):
        q = predictive[key].quantile([lo, hi], dim=dims)
        out[f"{name}_lower"] = q.sel(quantile=lo, drop=True)
        out[f"{name}_upper"] = q.sel(quantile=hi, drop=True)
    return xr.Dataset(out, attrs={"prob": prob})
