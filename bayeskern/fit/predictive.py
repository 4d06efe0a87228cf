"""Per-draw quantities of a marginal Gaussian model: exact LOO densities and the posterior predictive mixed over draws."""

import warnings

import numpy as np
import xarray as xr

from bayeskern._linalg import cholesky, loo_gaussian, psd_eigh
from bayeskern._marginal import MarginalGaussian
from bayeskern._validation import check_probability
from bayeskern.fit.plug_in import PlugIn, posterior_of
from bayeskern.kernels import FeatureKernel

__all__ = ["draw_quantities", "factor", "predictive_bands"]


def factor(r: MarginalGaussian, Xnew):
    """One factorisation of C for a numeric record: (L, jitter, predictive posterior at Xnew or None)."""
    if r.kind == "gp":
        post = posterior_of(r, Xnew=Xnew if Xnew is not None else r.X[:1])
        return post.chol, post.jitter, post if Xnew is not None else None
    C = FeatureKernel(r.features, r.prior_cov).evaluate(r.X) + r.sigma**2 * np.eye(len(r.X))  # C = ΦΣΦᵀ + σ²I
    L, jitter = cholesky(C, name="Phi Sigma Phi^T + sigma^2 I")
    return L, jitter, (posterior_of(r, Xnew=Xnew) if Xnew is not None else None)


def draw_quantities(plug_in: PlugIn, posterior: xr.Dataset, obs_name: str, obs_dim: str, Xnew=None, thin: int = 1, seed=None, obs_coords=None):
    """Walk the posterior draws once: the log_likelihood group (exact LOO densities, every draw), and,
    with `Xnew`, posterior predictive samples of f and y at Xnew (every `thin`-th draw).

    Returns (log_likelihood Dataset, posterior_predictive Dataset, max jitter used). The
    posterior_predictive also holds `obs_name`: draws from the leave-one-out predictive
    p(tᵢ | t₋ᵢ, θ) at each draw, which is what ArviZ's LOO-PIT needs for a model whose
    observations are not independent given θ.
    """
    rng = np.random.default_rng(seed)
    t = plug_in.record.y
    n = len(t)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    values = {name: np.asarray(posterior[name].values) for name in plug_in.names}
    kept = np.arange(0, draws, thin)
    log_lik = np.empty((chains, draws, n))
    loo_draws = np.empty((chains, draws, n))
    m = 0 if Xnew is None else len(Xnew)
    f = np.empty((chains, len(kept), m))
    y = np.empty((chains, len(kept), m))
    f_mean = np.empty((chains, len(kept), m))
    f_var = np.empty((chains, len(kept), m))
    max_jitter = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jitter is collected and reported once
        for c in range(chains):
            for d in range(draws):
                params = {name: v[c, d] for name, v in values.items()}
                keep = Xnew is not None and d % thin == 0
                r = plug_in.numeric(params)
                L, jitter, post = factor(r, Xnew if keep else None)
                max_jitter = max(max_jitter, jitter)
                mu, var, log_lik[c, d] = loo_gaussian(L, t)
                loo_draws[c, d] = mu + np.sqrt(var) * rng.standard_normal(n)
                if keep:
                    k = d // thin
                    sigma = r.sigma
                    f[c, k] = _sample(post.mean, post.cov, _prior_variance(r, Xnew), rng)  # f(Xnew) ~ N(m, K** − kᵀC⁻¹k)
                    y[c, k] = f[c, k] + sigma * rng.standard_normal(m)  # y = f + ε, ε ~ N(0, σ²)
                    f_mean[c, k], f_var[c, k] = post.mean, post.var

    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values, obs_dim: np.arange(n) if obs_coords is None else obs_coords}
    log_likelihood = xr.Dataset({obs_name: (("chain", "draw", obs_dim), log_lik)}, coords=coords)
    predictive = xr.Dataset({obs_name: (("chain", "draw", obs_dim), loo_draws)}, coords=coords)
    if Xnew is not None:
        Xnew = np.asarray(Xnew)
        pred = xr.Dataset(
            {
                "f": (("chain", "draw_thinned", "xnew"), f),
                "y_new": (("chain", "draw_thinned", "xnew"), y),
                "f_mean": (("chain", "draw_thinned", "xnew"), f_mean),
                "f_var": (("chain", "draw_thinned", "xnew"), f_var),
            },
            coords={
                "chain": posterior["chain"].values,
                "draw_thinned": posterior["draw"].values[kept],
                "xnew": np.arange(m),
                "Xnew": (("xnew", "input_dim"), Xnew),
            },
        )
        predictive = xr.merge([predictive, pred])
    return log_likelihood, predictive, max_jitter


def _prior_variance(r: MarginalGaussian, Xnew) -> float:
    """max k(x, x) over Xnew: the size of the terms whose difference is the predictive covariance K** − kᵀC⁻¹k."""
    kernel = r.kernel if r.kind == "gp" else FeatureKernel(r.features, r.prior_cov)  # k = φᵀΣφ for BLR
    return float(np.max(np.abs(kernel.evaluate(Xnew, diag=True))))


def _sample(mean: np.ndarray, cov: np.ndarray, prior_variance: float, rng) -> np.ndarray:
    """One draw of N(mean, cov) through cov = UΛUᵀ (no jitter; round-off negatives clipped to 0).

    cov = K** − kᵀC⁻¹k is exact only to round-off of the prior variance max k(x, x): when the data
    pin f down (a constant t, say) every eigenvalue of cov is that round-off, of either sign.
    """
    lam, U = psd_eigh(cov, "the predictive covariance", scale=prior_variance)
    return mean + U @ (np.sqrt(lam) * rng.standard_normal(len(mean)))


def predictive_bands(predictive: xr.Dataset, prob: float = 0.95) -> xr.Dataset:
    """Mean and central `prob` band at Xnew of f and of new observations y, mixed over the draws.

    `f_mean`: the exact mixture mean (the average of the per-draw posterior means); the bands are
    quantiles of the samples (Monte Carlo).
    """
    prob = check_probability(prob, "prob")
    if not isinstance(predictive, xr.Dataset) or "f" not in predictive:
        raise ValueError("the posterior predictive has no samples at Xnew: pass Xnew to bayeskern.fit.mcmc")
    dims = ("chain", "draw_thinned")
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    out = {"f_mean": predictive["f_mean"].mean(dims), "y_mean": predictive["f_mean"].mean(dims)}
    for name, key in (("f", "f"), ("y", "y_new")):
        q = predictive[key].quantile([lo, hi], dim=dims)
        out[f"{name}_lower"] = q.sel(quantile=lo, drop=True)
        out[f"{name}_upper"] = q.sel(quantile=hi, drop=True)
    return xr.Dataset(out, attrs={"prob": prob})
