"""One analysis from one spec: the data, each candidate model fitted, the chosen one by MCMC, the checks — as one record."""

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import xarray as xr

from bayeskern import blr, checks, cv, gp
from bayeskern._compile import draw
from bayeskern._validation import PACKAGE_DIR
from bayeskern.datasets import Data
from bayeskern.fit import empirical_bayes, mcmc, predictive_bands
from bayeskern.checks.approximation import AUDIT_POINTS, subsample_rows
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.warning import FitWarning
from bayeskern.likelihood import find_likelihood
from bayeskern.spec import FEATURES, Spec, parse_expression
from bayeskern.spec.expressions import parse_approx

__all__ = ["Analysis", "Candidate", "run_analysis"]


@dataclass
class Candidate:
    """One model of the spec: its expression, PyMC model, and empirical-Bayes fit (None without one)."""

    expression: str
    model: pm.Model
    eb: object = None

    @property
    def log_marginal_likelihood(self) -> float | None:
        return None if self.eb is None else self.eb.log_marginal_likelihood


@dataclass
class Analysis:
    """Everything a report shows. `selected`: the index of the candidate analysed in full (highest evidence).

    `point`: the hyperparameters used for point summaries — the EB optimum, or the posterior mean
    without EB. `grid_eb`: the exact posterior at `point` on the prediction grid (None without a
    grid). `loo_eb`: (mean, sd) of p(tᵢ | t₋ᵢ, θ̂) at every observation (R&W 5.10–5.12). `idata`: the MCMC
    DataTree; `bands`: its predictive bands on the grid; `loo_pit`: ArviZ's LOO-PIT values.
    `prior_draws`: (hyperparameters, sample functions on the grid) for the prior figure.
    `spectrum`: the eigenvalues of the Gram matrix at `point`, ascending. With [cv]: `cv_folds` the held-out
    rows of each fold and `cv` one `bayeskern.cv.KFoldResult` per candidate.
    """

    spec: Spec
    data: Data
    seed: int
    candidates: list
    selected: int
    point: dict
    grid_eb: object = None
    loo_eb: tuple | None = None
    idata: xr.DataTree | None = None
    diagnostics: object = None
    comparison: object = None
    loo: object = None
    bands: xr.Dataset | None = None
    loo_pit: np.ndarray | None = None
    prior_draws: list = field(default_factory=list)
    spectrum: np.ndarray | None = None
    checks: dict = field(default_factory=dict)
    kernel_trick_curves: dict | None = None
    cv_folds: list | None = None
    cv: list | None = None
    seconds: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    @property
    def chosen(self) -> Candidate:
        return self.candidates[self.selected]

    @property
    def grid(self) -> np.ndarray | None:
        """The prediction grid as the model sees it: the spec's, in the inputs' own units, standardised like them where
        the data were (`Data.standardisation`)."""
        scaled = self.data.standardisation
        return self.spec.grid if self.spec.grid is None or scaled is None else scaled.inputs(self.spec.grid[:, None])[:, 0]


def _quiet(say: Callable) -> Callable:
    return say if say is not None else (lambda message: None)


def run_analysis(spec: Spec, seed: int | None = None, say: Callable[[str], None] | None = None, progressbar: bool = False,
                 tasks: Callable | None = None, data: Data | None = None) -> Analysis:
    """Fit every candidate by empirical Bayes, the best one by MCMC, run the checks (and [cv]'s cross-validation).

    `seed` replaces the spec's seed; `say` receives a line per step; `progressbar` shows the sampler's. `tasks`:
    how the cross-validation fits are computed, `tasks(fn, [args, ...])` → results (`bayeskern.batch`; here by default).
    `data`: the spec's data when already loaded (`spec.load_data()`; a spec's task on a remote worker receives them).
    """
    say = _quiet(say)
    seed = spec.seed if seed is None else seed
    data = spec.load_data() if data is None else data
    candidates = [Candidate(text, spec.model(text, data)) for text in spec.candidates]  # a bad spec fails here, before any output
    say(f"{spec.name}: {data.description}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # refitting folds need nothing from the full-data fits: on a cluster they run while this process does the rest
        pending = _start_cv(spec, data, seed, say, tasks) if spec.cv is not None and spec.cv.refit else None
        seconds = _fit_candidates(spec, candidates, seed, say, caught)
        selected = 0 if len(candidates) == 1 else int(np.argmax([c.log_marginal_likelihood for c in candidates]))
        result = Analysis(spec, data, seed, candidates, selected, point={}, seconds=seconds)
        if spec.cv is not None and pending is None:
            pending = _start_cv(spec, data, seed, say, tasks, [c.eb.params for c in candidates])
        obs, record = find_likelihood(result.chosen.model)
        plug_in = result.chosen.eb.plug_in if result.chosen.eb is not None else PlugIn(result.chosen.model, record)
        Xgrid = None if result.grid is None else result.grid[:, None]
        if spec.mcmc is not None:
            _sample(result, obs.name, Xgrid, say, progressbar)
        _at_point(result, plug_in, Xgrid, say)
        if pending is not None:
            _collect_cv(result, pending, say)
    said = [f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught if issubclass(w.category, UserWarning | RuntimeWarning)]
    result.warnings = list(dict.fromkeys(said))  # each distinct warning once, in order
    return result


def _fit_candidates(spec: Spec, candidates: list, seed: int, say: Callable, caught: list) -> dict:
    """Empirical Bayes for every candidate (when the spec asks for it); its warnings name the candidate."""
    if spec.empirical_bayes is None:
        return {}
    for i, c in enumerate(candidates):
        started, before = time.perf_counter(), len(caught)
        say(f"empirical Bayes {i + 1}/{len(candidates)}: {c.expression} ({spec.empirical_bayes.restarts} starts) …")
        c.eb = empirical_bayes(c.model, seed=seed, **spec.empirical_bayes.as_kwargs())
        if len(candidates) > 1:  # say which candidate a warning is about
            for w in caught[before:]:
                w.message = f"{c.expression}: {w.message}"
        map_ii = f", MAP-II objective log p(t | θ̂) + log p(θ̂) = {c.eb.objective:.4f}" if c.eb.include_prior else ""
        say(f"  log p(t | θ̂) = {c.eb.log_marginal_likelihood:.4f}{map_ii}   ({time.perf_counter() - started:.1f} s)")
    return {"empirical_bayes": sum(c.eb.seconds for c in candidates)}


def _start_cv(spec: Spec, data: Data, seed: int, say: Callable, tasks: Callable | None, full_params: list | None = None) -> tuple:
    """Send off the K-fold cross-validation of every candidate (`bayeskern.cv`) through `tasks`
    (`bayeskern.batch.submit_tasks`; here, when collected, by default); (when, the function that collects it)."""
    from bayeskern.batch import submit_tasks

    n_tasks = len(spec.candidates) * (spec.cv.folds if spec.cv.refit else 1)
    say(f"cross-validation: {len(spec.candidates)} candidate(s) × {spec.cv.folds} folds"
        f"{', refitted by EB' if spec.cv.refit else ', hyperparameters from all the data'}: {n_tasks} task(s)"
        f"{' sent to the cluster' if tasks is not None else ''} …")
    tasks = tasks or (lambda fn, args: submit_tasks(fn, args, say=say))
    return time.perf_counter(), cv.cross_validate(spec, data, seed, tasks, full_params)


def _collect_cv(result: Analysis, pending: tuple, say: Callable) -> None:
    """The cross-validation's results into `result`; its seconds count from when its tasks were sent (on a cluster they
    overlap the rest of the analysis)."""
    started, collect = pending
    say("cross-validation: the fold fits …")
    result.cv_folds, result.cv = collect()
    for done in result.cv:
        say(f"  {done.candidate}: " + (f"elpd_kfold = {done.elpd:.4f} (se {done.se:.4f})" if done.error is None else f"failed: {done.error}"))
    result.seconds["cross_validation"] = time.perf_counter() - started


def _sample(result: Analysis, obs_name: str, Xgrid, say: Callable, progressbar: bool) -> None:
    """MCMC over the chosen candidate's hyperparameters, its diagnostics, PSIS-LOO, bands, and EB against it."""
    import arviz as az  # ArviZ (~1 s to import) only where a chain is summarised: a fit without MCMC needs none of it

    from bayeskern.fit import check_chains_moved, compare_eb_mcmc, diagnose

    settings, chosen = result.spec.mcmc, result.chosen
    say(f"MCMC ({settings.sampler}): {settings.chains} chains × {settings.tune} tuning + {settings.draws} draws …")
    started = time.perf_counter()
    dt = mcmc(chosen.model, seed=result.seed, Xnew=Xgrid, progressbar=progressbar, compute_convergence_checks=False, **settings.as_kwargs())
    result.seconds["mcmc"] = time.perf_counter() - started
    say(f"  done in {result.seconds['mcmc']:.1f} s{_mcmc_parts(dt, result.seconds['mcmc'])}")
    result.idata = dt
    check_chains_moved(dt)  # a chain stuck at one point: nothing to diagnose or report (ArviZ's LOO would fail on it)
    result.diagnostics = diagnose(dt)  # the check `mcmc` makes, made once: its FitWarning names what failed
    result.loo = az.loo(dt, pointwise=True)
    result.loo_pit = np.asarray(az.loo_pit(dt)[obs_name].values)  # PSIS-weighted P(ỹᵢ ≤ tᵢ | t₋ᵢ)
    if Xgrid is not None:
        result.bands = predictive_bands(dt["posterior_predictive"].to_dataset(), prob=0.95)
    if chosen.eb is not None:
        result.comparison = compare_eb_mcmc(chosen.eb, dt, prob=0.95)


def _mcmc_parts(dt, seconds: float) -> str:
    """Where an MCMC run's `seconds` went, where the sampler says (nutpie's: a first run of a model structure on a
    machine spends most of its time compiling, later processes load what it kept, a later model of the structure in
    the same process reuses it; "sampling" is nutpie's own time, its trace's conversion to a DataTree included);
    else nothing."""
    compiling, sampling = dt.attrs.get("bayeskern_compile_seconds"), dt["posterior"].attrs.get("sampling_time")
    if compiling is None or sampling is None:
        return ""
    rest = max(seconds - compiling - sampling, 0.0)
    return (f": compiling, loading or reusing the model {compiling:.1f} s, sampling {sampling:.1f} s, "
            f"predictions and pointwise log-likelihoods {rest:.1f} s")


def _at_point(result: Analysis, plug_in: PlugIn, Xgrid, say: Callable) -> None:
    """Point summaries at the EB optimum (or the posterior mean): LOO, the grid posterior, prior draws, the checks."""
    spec, chosen = result.spec, result.chosen
    if chosen.eb is not None:
        result.point = chosen.eb.params
    else:
        posterior = result.idata["posterior"].to_dataset()
        result.point = {name: posterior[name].mean(("chain", "draw")).values for name in plug_in.names}
    numeric = plug_in.numeric(result.point)
    conditioned = chosen.eb.conditioned if chosen.eb is not None else numeric.condition()
    mean, var, _ = conditioned.loo  # p(tᵢ | t₋ᵢ, θ̂)
    result.loo_eb = (mean, np.sqrt(var))
    if Xgrid is not None:
        result.grid_eb = conditioned.posterior(Xgrid, include_noise=spec.include_noise)
        result.prior_draws = _prior_draws(chosen.model, plug_in, result.point, Xgrid, spec.report.prior_samples, result.seed)
    gram, X_gram = conditioned.gram_kernel, _gram_points(result)
    if spec.checks.psd:  # Mercer's condition on the data, at the point
        result.checks["psd"] = checks.psd(gram, X_gram)
        result.spectrum = np.asarray(result.checks["psd"].eigenvalues)
    else:
        result.spectrum = np.linalg.eigvalsh(gram.evaluate(X_gram))
    if spec.approx is not None:
        say(f"approximation audit: {spec.approx} against the exact GP at the fitted point …")
        result.checks["approximation"] = audit = checks.approximation_error(
            numeric.kernel, numeric.approximation_as_fitted(parse_approx(spec.approx)), result.data.X, result.data.y, numeric.sigma, Xnew=Xgrid,
            seed=result.seed,
        )
        if not audit.passed:
            warnings.warn(_audit_failed(audit), FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
    if spec.checks.kernel_trick is not None:
        say("kernel-trick audit: BLR in weight space against the GP with k = φᵀΣφ …")
        result.checks["kernel_trick"], result.kernel_trick_curves = _kernel_trick(spec, result.data, numeric, Xgrid)


def _audit_failed(audit) -> str:
    """A failed approximation audit in one sentence: each error beyond its tolerance."""
    errors = (("mean error", audit.mean_error, audit.mean_tol, "·sd(y)"), ("predictive-variance error", audit.var_error, audit.var_tol, ""),
              ("log-likelihood error", audit.lml_error, audit.lml_tol, " per point"))
    over = [f"{name} {value:.3g}{unit} against the tolerance {tol:.3g}{unit}" for name, value, tol, unit in errors if value > tol]
    return (f"approximation audit: {audit.approx} is NOT within the tolerances of the exact GP at the fitted hyperparameters "
            f"({'; '.join(over)}), so its predictions and evidence are not the exact GP's")


def _gram_points(result: Analysis) -> np.ndarray:
    """The inputs the Gram matrix is checked on: all of X for an exact GP; with model.approx, the audit's subsample."""
    X = result.data.X
    return X if result.spec.approx is None else X[subsample_rows(len(X), AUDIT_POINTS, result.seed)]


def _prior_draws(model, plug_in: PlugIn, point: dict, Xgrid, n_functions: int, seed: int) -> list:
    """PRML figure 6.5: sample functions from the GP prior at the fitted point and at hyperparameters drawn from the priors."""
    if n_functions == 0:
        return []
    rvs = list(model.free_RVs)
    draws = draw(rvs, draws=5, random_seed=seed)
    settings = [point] + [{rv.name: np.asarray(d[j]) for rv, d in zip(rvs, draws, strict=True)} for j in range(5)]
    out = []
    for k, params in enumerate(settings):
        kernel = plug_in.numeric(params).gram_kernel()
        try:
            f = gp.prior_samples(kernel, Xgrid, n=n_functions, seed=seed + k)
        except ValueError:  # a prior draw whose kernel is not PSD on the grid: shown as an empty panel
            f = None
        out.append(({n: np.asarray(v).tolist() for n, v in params.items()}, f))
    return out


def _kernel_trick(spec: Spec, data: Data, numeric, Xgrid):
    """The audit: BLR with features φ and prior Σ against the GP, on the data and the grid.

    The GP side is always the model's own kernel at the fitted point (for a BLR model k = φᵀΣ̂φ of its own features),
    so the audit asks whether that kernel is φᵀΣφ for the spec's φ and Σ — by default, for a BLR model, its own φ and
    Σ̂: the kernel trick itself. (The spec's φ against its own φᵀΣφ would pass whatever the model.)
    """
    options = spec.checks.kernel_trick
    own = numeric.weight_space()  # (φ, Σ) of a BLR model; None for a GP
    phi = parse_expression(options.features, FEATURES) if options.features is not None else own[0]
    prior_cov = options.prior_cov if options.prior_cov is not None else own[1] if own is not None and options.features is None else 1.0
    sigma = options.sigma if options.sigma is not None else numeric.sigma
    kernel = numeric.gram_kernel()
    Xnew = data.X if Xgrid is None else Xgrid
    res = checks.kernel_trick(phi, prior_cov, data.X, data.y, sigma, Xnew=Xnew, kernel=kernel)
    weight = blr.condition(phi, data.X, data.y, sigma, prior_cov).predict(Xnew)
    function = gp.condition(kernel, data.X, data.y, sigma).predict(Xnew)
    curves = {"x": Xnew, "weight_mean": weight.mean, "weight_sd": weight.std, "function_mean": function.mean,
              "function_sd": function.std, "phi": repr(phi), "kernel": repr(kernel),
              "prior_cov": np.asarray(prior_cov).tolist(), "sigma": float(sigma)}
    return res, curves
