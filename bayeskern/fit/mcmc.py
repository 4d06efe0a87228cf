"""Full Bayes over the hyperparameters: NUTS (nutpie, or PyMC's own), per-observation LOO densities, posterior predictive."""

import contextlib
import importlib.util
import warnings

import numpy as np
import pymc as pm
import xarray as xr
from threadpoolctl import threadpool_limits

from bayeskern._compile import exact_arithmetic, untraced
from bayeskern._validation import PACKAGE_DIR, as_inputs, check_flag, check_integer, check_model, check_probability, int_seed, same_columns
from bayeskern.fit import _nutpie
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.predictive import draw_quantities
from bayeskern.fit.warning import FitWarning
from bayeskern.likelihood import find_likelihood

__all__ = ["SAMPLERS", "mcmc"]

SAMPLERS = ("nutpie", "pymc")


def mcmc(
    model=None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed=None,
    sampler: str = "nutpie",
    Xnew=None,
    thin: int = 1,
    progressbar: bool = False,
    compute_convergence_checks: bool = True,
    **sample_kwargs,
) -> xr.DataTree:
    """Sample the hyperparameters of a marginal Gaussian model with NUTS and return an ArviZ DataTree.

    `model`: a PyMC model (the context's if not given) whose observed variable comes from
    `bayeskern.gp.marginal_likelihood` or `bayeskern.blr.likelihood(collapsed=True)`.
    `sampler`: "nutpie" (default; falls back to "pymc" with a warning if nutpie is not installed) or
    "pymc". The same `seed` gives identical draws. Extra keyword arguments go to `pm.sample`. With nutpie (and no
    keyword but `target_accept`) the draws are `pm.sample`'s, from a log density compiled once per structure and cached
    on disk (`bayeskern.fit._nutpie`: 2–4 s where `pm.sample` compiles for ~12 s in every process).

    Groups: `posterior`, `sample_stats`, `observed_data` (from PyMC), `log_likelihood` and
    `posterior_predictive`. `log_likelihood[y]` (chain, draw, y_dim_0) is log p(tᵢ | t₋ᵢ, θ) — the exact
    leave-one-out predictive density at each draw (R&W 5.10–5.12). The observations of a GP are not
    independent given θ, so log p(tᵢ | θ) would not do: with these values ArviZ's PSIS-LOO (`az.loo`,
    `az.compare`) estimates p(tᵢ | t₋ᵢ) = ∫ p(tᵢ | t₋ᵢ, θ) p(θ | t₋ᵢ) dθ (Bürkner, Gabry & Vehtari 2021,
    non-factorised normal models). `posterior_predictive[y]` holds draws from p(tᵢ | t₋ᵢ, θ), for
    LOO-PIT. With `Xnew` (m, d): `f` and `y_new` (chain, draw_thinned, xnew), samples of f(Xnew) and of
    new observations (f plus noise) at every `thin`-th draw, with each draw's exact `f_mean` and
    `f_var`; `bayeskern.fit.predictive_bands` summarises them.

    `compute_convergence_checks` (as in `pm.sample`): run `bayeskern.fit.diagnose` on the draws and warn
    (FitWarning) naming what failed: R-hat > 1.01, a bulk or tail ESS below 100 per chain, divergences, the maximum
    tree depth hit, or a low E-BFMI.
    """
    model, seed = check_model(model), int_seed(seed)
    model = pm.modelcontext(model)
    obs, record = find_likelihood(model)
    draws = check_integer(draws, "draws", 1)
    tune = check_integer(tune, "tune", 0)
    chains = check_integer(chains, "chains", 1)
    thin = check_integer(thin, "thin", 1)
    compute_convergence_checks = check_flag(compute_convergence_checks, "compute_convergence_checks")
    clash = sorted({"random_seed", "model", "nuts_sampler", "draws", "tune", "chains"} & set(sample_kwargs))
    if clash:
        raise ValueError(f"pass {', '.join(clash)} as mcmc's own arguments (seed, model, sampler …), not as pm.sample keywords")
    if "target_accept" in sample_kwargs:  # NUTS's step-size adaptation aims at this mean acceptance probability
        sample_kwargs["target_accept"] = check_probability(sample_kwargs["target_accept"], "target_accept")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if Xnew is not None:
        Xnew = as_inputs(Xnew, "Xnew")
        same_columns(record.X, Xnew, "X", "Xnew")
    if sampler == "nutpie" and importlib.util.find_spec("nutpie") is None:
        warnings.warn("nutpie is not installed: sampling with PyMC's NUTS instead", FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
        sampler = "pymc"
    seed = int(np.random.default_rng().integers(2**31)) if seed is None else check_integer(seed, "seed", 0)
    for message in record.sampling_warnings():  # (an automatic HSGP basis capped below what the prior's length scales need)
        warnings.warn(message, FitWarning, skip_file_prefixes=(PACKAGE_DIR,))

    # nutpie runs the chains as threads of this process; letting each LAPACK call spawn its own BLAS
    # threads as well oversubscribes the cores (measured: sampling 3 × slower on 2 cores). The
    # sampler's functions are compiled without fastmath, so the draws do not depend on the compile cache
    with threadpool_limits(1) if sampler == "nutpie" else contextlib.nullcontext(), exact_arithmetic(), untraced():
        if sampler == "nutpie" and set(sample_kwargs) <= {"target_accept"}:  # pm.sample's draws, compiled once per structure
            dt = _nutpie.sample(model, draws, tune, chains, seed, progressbar, problem_size=record.size(), **sample_kwargs)
        else:
            dt = pm.sample(
                draws=draws, tune=tune, chains=chains, random_seed=seed, nuts_sampler=sampler, model=model,
                progressbar=progressbar, compute_convergence_checks=False, **sample_kwargs,
            )
    obs_dim = _observed_dim(dt, obs.name)
    obs_coords = dt["observed_data"].to_dataset()[obs_dim].values if "observed_data" in dt.children else None
    log_likelihood, predictive, jitter = draw_quantities(
        PlugIn(model, record), dt["posterior"].to_dataset(), obs.name, obs_dim, Xnew=Xnew, thin=thin, seed=seed,
        obs_coords=obs_coords,
    )
    dt["log_likelihood"] = xr.DataTree(log_likelihood)
    dt["posterior_predictive"] = xr.DataTree(predictive)
    dt.attrs.update({"bayeskern_sampler": sampler, "bayeskern_seed": seed, "bayeskern_max_jitter": jitter})
    if jitter > 0:
        warnings.warn(
            f"some posterior draws needed jitter (up to {jitter:.3g}) to factorise K + sigma^2 I for the "
            "leave-one-out densities and predictions",
            FitWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )
    if compute_convergence_checks:
        _check_convergence(model, dt)
    return dt


def _check_convergence(model, dt: xr.DataTree) -> None:
    """`diagnose` on the hyperparameters sampled, not a Deterministic of them (a constant one has no R-hat), as PyMC
    checks its free RVs; a FitWarning at `mcmc`'s caller naming what failed."""
    from bayeskern.fit.diagnostics import diagnose  # ArviZ, imported where a chain is summarised

    sampled = [rv.name for rv in model.free_RVs if rv.name in dt["posterior"].to_dataset()]
    groups = {"posterior": dt["posterior"].to_dataset()[sampled], "sample_stats": dt["sample_stats"].to_dataset()}
    verdict = diagnose(xr.DataTree.from_dict(groups), warn=False)
    if not verdict.passed:
        warnings.warn(str(verdict), FitWarning, skip_file_prefixes=(PACKAGE_DIR,))


def _observed_dim(dt: xr.DataTree, name: str) -> str:
    """The dimension name PyMC gave the observations in `observed_data` (e.g. y_dim_0)."""
    if "observed_data" in dt.children and name in dt["observed_data"].to_dataset():
        dims = dt["observed_data"].to_dataset()[name].dims
        if len(dims) == 1:
            return dims[0]
    return f"{name}_dim_0"
