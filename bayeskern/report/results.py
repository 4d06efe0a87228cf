"""The report's data: summary.json (plain numbers and verdicts) and results.nc (the DataTree of every array)."""

import platform
from importlib.metadata import version

import numpy as np
import xarray as xr

from bayeskern._json import jsonable
from bayeskern._linalg import PSD_ROUNDOFF, TINY, psd_tolerance
from bayeskern.cv import compare

__all__ = ["jsonable", "results_tree", "summary"]


def summary(a, files: list[str]) -> dict:
    """Hyperparameters, log marginal likelihood, diagnostics with their verdict, check results, and provenance."""
    spec = a.spec
    out = {
        "name": spec.name,
        "description": spec.description,
        "spec": str(spec.path),
        "seed": a.seed,
        "data": {**spec.data.as_kwargs(), "n": int(len(a.data.y)), "inputs": list(a.data.x_names), "target": a.data.y_name,
                 "description": a.data.description,
                 "standardisation": None if a.data.standardisation is None else a.data.standardisation.as_dict()},
        "model": {"kind": spec.kind, "candidates": list(spec.candidates), "priors": spec.priors, "sigma": spec.sigma,
                  "prior_cov": spec.prior_cov},
        "candidates": [{"expression": c.expression, "log_marginal_likelihood": c.log_marginal_likelihood,
                        "converged": None if c.eb is None else c.eb.converged} for c in a.candidates],
        "selected": {"index": a.selected, "expression": a.chosen.expression,
                     "point": {n: np.asarray(v).tolist() for n, v in a.point.items()},
                     "point_is": "empirical Bayes optimum" if a.chosen.eb is not None else "posterior mean"},
        "empirical_bayes": None if a.chosen.eb is None else {**spec.empirical_bayes.as_kwargs(), **a.chosen.eb.to_dict()},
        "mcmc": None,
        "eb_vs_mcmc": None if a.comparison is None else a.comparison.to_dict(),
        "checks": {name: result.to_dict() | _audited(name, a) for name, result in a.checks.items()},
        "cross_validation": None if a.cv is None else {
            "folds": spec.cv.folds, "shuffle": spec.cv.shuffle, "seed": spec.cv.seed, "refit": spec.cv.refit,
            "fold_sizes": [len(f) for f in a.cv_folds], "table": compare(a.cv)},
        "gram_spectrum": None if a.spectrum is None else {
            "min": float(a.spectrum[0]), "max": float(a.spectrum[-1]),
            "roundoff": max(psd_tolerance(a.spectrum) / PSD_ROUNDOFF, TINY)},  # n·ε·max|λ|, checks.psd's round-off scale
        "warnings": a.warnings,
        "seconds": a.seconds,
        "files": sorted(files),
        "versions": {"python": platform.python_version(),
                     **{p: version(p) for p in ("bayeskern", "pymc", "pytensor", "arviz", "numpy", "scipy", "xarray")}},
    }
    if a.idata is not None:
        out["mcmc"] = {**spec.mcmc.as_kwargs(), "diagnostics": a.diagnostics.to_dict(), "verdict": str(a.diagnostics),
                       "loo": {"elpd": float(a.loo.elpd), "se": float(a.loo.se), "p": float(a.loo.p)},
                       "posterior_mean": {n: v.mean(("chain", "draw")).values.tolist()
                                          for n, v in a.idata["posterior"].to_dataset().data_vars.items()}}
    return jsonable(out)


def _audited(name: str, a) -> dict:
    """What the kernel-trick audit compared (its weight side's φ, Σ, σ and the model's kernel), beside its verdict."""
    c = a.kernel_trick_curves
    if name != "kernel_trick" or c is None:
        return {}
    return {"features": c["phi"], "prior_cov": c["prior_cov"], "sigma": c["sigma"], "kernel": c["kernel"]}


def results_tree(a) -> xr.DataTree:
    """The MCMC DataTree (if any) with groups added: `data`, `candidates`, `empirical_bayes`, `predictions`, `checks`, `loo`
    (with MCMC: PSIS-LOO's pointwise elpd and Pareto k̂), `cross_validation` (with [cv]: each candidate's held-out log predictive density per observation, NaN for a failed
    candidate, its elpd_kfold and se, and the fold of each observation)."""
    dt = a.idata.copy() if a.idata is not None else xr.DataTree()
    dt.attrs = {**dt.attrs, "bayeskern_spec": a.spec.name, "bayeskern_seed": int(a.seed)}
    obs = np.arange(len(a.data.y))
    dt["data"] = xr.DataTree(xr.Dataset(
        {"X": (("obs", "input"), a.data.X), "y": ("obs", a.data.y)},
        coords={"obs": obs, "input": list(a.data.x_names)}, attrs={"description": a.data.description, **(a.data.standardisation.as_dict() if a.data.standardisation else {})}))
    lml = [np.nan if c.log_marginal_likelihood is None else c.log_marginal_likelihood for c in a.candidates]
    dt["candidates"] = xr.DataTree(xr.Dataset(
        {"log_marginal_likelihood": ("candidate", np.asarray(lml, float))},
        coords={"candidate": [c.expression for c in a.candidates]}, attrs={"selected": int(a.selected)}))
    if a.chosen.eb is not None:
        eb = a.chosen.eb
        params = {n: xr.DataArray(np.asarray(v, float), dims=[f"{n}_dim_{i}" for i in range(np.ndim(v))]) for n, v in eb.params.items()}
        dt["empirical_bayes"] = xr.DataTree(xr.Dataset(params, attrs={
            "log_marginal_likelihood": eb.log_marginal_likelihood, "converged": int(eb.converged),
            "grad_norm": eb.grad_norm, "jitter": eb.jitter}))
    mean, sd = a.loo_eb
    preds = {"loo_mean": ("obs", mean), "loo_sd": ("obs", sd)}
    coords = {"obs": obs}
    if a.grid_eb is not None:
        coords["x"] = a.grid
        preds |= {"mean": ("x", a.grid_eb.mean), "sd": ("x", a.grid_eb.std)}
        if a.bands is not None:
            preds |= {f"mcmc_{k}": ("x", v.values) for k, v in a.bands.data_vars.items()}
    dt["predictions"] = xr.DataTree(xr.Dataset(preds, coords=coords, attrs={"include_noise": int(a.spec.include_noise)}))
    checks = {}
    if a.spectrum is not None:
        checks["gram_eigenvalues"] = ("eigenvalue", a.spectrum)
    if a.loo_pit is not None:
        checks["loo_pit"] = ("obs", a.loo_pit)
    if checks:
        dt["checks"] = xr.DataTree(xr.Dataset(checks, coords={"obs": obs} if a.loo_pit is not None else {}))
    if a.loo is not None:
        dt["loo"] = xr.DataTree(xr.Dataset(  # PSIS-LOO of the MCMC run, per observation
            {"elpd_loo_i": ("obs", np.asarray(a.loo.elpd_i.values, float)), "pareto_k": ("obs", np.asarray(a.loo.pareto_k.values, float))},
            coords={"obs": obs}, attrs={"elpd_loo": float(a.loo.elpd), "se": float(a.loo.se), "p_loo": float(a.loo.p), "good_k": float(a.loo.good_k)}))
    if a.cv is not None:
        dt["cross_validation"] = xr.DataTree(_cross_validation(a, obs))
    return dt


def _cross_validation(a, obs: np.ndarray) -> xr.Dataset:
    """The K-fold results as arrays (summary.json holds the same numbers as its ranked table)."""
    pointwise = np.full((len(a.cv), len(obs)), np.nan)
    for i, result in enumerate(a.cv):
        if result.pointwise is not None:
            pointwise[i] = result.pointwise
    fold = np.empty(len(obs), dtype=np.int64)
    for k, rows in enumerate(a.cv_folds):
        fold[rows] = k
    elpd, se = ([np.nan if v is None else v for v in (getattr(r, name) for r in a.cv)] for name in ("elpd", "se"))
    spec = a.spec.cv
    return xr.Dataset(
        {"pointwise_elpd": (("candidate", "obs"), pointwise), "elpd_kfold": ("candidate", np.asarray(elpd, float)),
         "elpd_kfold_se": ("candidate", np.asarray(se, float)), "fold": ("obs", fold)},
        coords={"candidate": [r.candidate for r in a.cv], "obs": obs},
        attrs={"folds": spec.folds, "shuffle": int(spec.shuffle), "seed": spec.seed, "refit": int(spec.refit)})
