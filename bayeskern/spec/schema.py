"""The TOML schema of a spec: one typed, frozen record per section, each read and validated by its own reader."""

import ast
import keyword
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from bayeskern import datasets
from bayeskern._validation import check_seed
from bayeskern.spec.expressions import FEATURES, KERNELS, PRIORS, _finite, _names_in, _parse_whitelisted, _short, parse_approx, parse_expression
from bayeskern.spec.limits import (MAX_CANDIDATES, MAX_CHAINS, MAX_DRAWS, MAX_FILE, MAX_GRID, MAX_ITER, MAX_N, MAX_N_APPROX, MAX_NAME,
                                   MAX_PRIOR_SAMPLES, MAX_RESTARTS, MAX_SEED, MIN_CHAINS, MIN_DRAWS)

__all__ = ["TOP_KEYS", "CVSection", "ChecksSection", "DataSection", "EmpiricalBayesSettings", "KernelTrickOptions", "MCMCSettings",
           "ModelSection", "PredictSection", "ReportSection", "SpecError", "check_spec_seed"]

TOP_KEYS = {"name", "description", "seed", "data", "model", "priors", "fit", "predict", "checks", "report", "cv"}


class SpecError(ValueError):
    """A bad spec: names the file, the key and the reason, on one line."""

    def __init__(self, path, key: str, reason: str):
        self.path, self.key, self.reason = str(path), key, " ".join(str(reason).split())
        super().__init__(f"{self.path}: {key}: {self.reason}")


# ---------------------------------------------------------------------------------------------------
# the sections


@dataclass(frozen=True)
class DataSection:
    """[data]: the source and the keys the spec gives for it (None: not given, the source's default)."""

    source: str
    noise: int | float | None = None
    path: str | None = None
    standardize: bool | None = None
    x: tuple[str, ...] | None = None
    y: str | None = None
    n: int | None = None
    seed: int | None = None

    def as_kwargs(self) -> dict:
        """The keys given, as `datasets.load` takes them (and summary.json lists them): source, the others, n, seed."""
        return {f.name: list(v) if isinstance(v, tuple) else v for f in fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class ModelSection:
    """[model]: the kind ('gp' or 'blr'), the candidate expressions, σ and (BLR) Σ, each a number or a prior's name,
    and (GP) the approximation's expression, e.g. "HSGP(m=200, c=1.5)" (None: the exact GP)."""

    kind: str
    candidates: tuple[str, ...]
    sigma: float | str
    prior_cov: float | str | None
    approx: str | None = None


class _Settings:
    """A section whose fields are a fitter's keyword arguments."""

    def as_kwargs(self) -> dict:
        """The settings by name, for `fitter(model, seed=…, **settings.as_kwargs())`."""
        return asdict(self)


@dataclass(frozen=True)
class EmpiricalBayesSettings(_Settings):
    """[fit.empirical_bayes]: the keyword arguments of `bayeskern.fit.empirical_bayes`."""

    restarts: int
    include_prior: bool
    maxiter: int


@dataclass(frozen=True)
class MCMCSettings(_Settings):
    """[fit.mcmc]: the keyword arguments of `bayeskern.fit.mcmc`."""

    draws: int
    tune: int
    chains: int
    thin: int
    sampler: str
    target_accept: float


@dataclass(frozen=True)
class PredictSection:
    """[predict]: the grid (None without one) and whether predictions include the observation noise."""

    grid: np.ndarray | None
    include_noise: bool


@dataclass(frozen=True)
class KernelTrickOptions:
    """[checks.kernel_trick]: the audit's feature map, Σ and σ, as given (None: not given, the model's own)."""

    features: str | None = None
    prior_cov: int | float | None = None
    sigma: int | float | None = None


@dataclass(frozen=True)
class ChecksSection:
    """[checks]: the PSD check of the Gram matrix, and the kernel-trick audit (None without one)."""

    psd: bool = False
    kernel_trick: KernelTrickOptions | None = None


@dataclass(frozen=True)
class CVSection:
    """[cv]: K-fold cross-validation of every candidate (`bayeskern.cv`): K, contiguous or shuffled folds (by `seed`),
    and whether each fold refits the hyperparameters (else they stay at the EB optimum on all the data)."""

    folds: int
    seed: int
    shuffle: bool
    refit: bool


@dataclass(frozen=True)
class ReportSection:
    """[report]: sample functions per panel of the prior figure, and the report's title."""

    prior_samples: int
    title: str


# ---------------------------------------------------------------------------------------------------
# values


def _get(table: dict, key: str, path, where: str, kind, default=...):
    """table[key] if it is of type `kind`; `default` if it is missing (a SpecError without one)."""
    if key not in table:
        if default is ...:
            raise SpecError(path, f"{where}{key}", "missing")
        return default
    value = table[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        want = {str: "a string", int: "an integer", bool: "true or false", dict: "a table", list: "a list",
                str | list: "a string or a list of strings", str | int | float: "a number or a prior's name"}.get(kind, "a number")
        raise SpecError(path, f"{where}{key}", f"must be {want}, got {_short(repr(value))}")
    if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(0.0, kind) and not _finite(value):
        raise SpecError(path, f"{where}{key}", f"must be a finite number (|x| < 1.8e308), got {_short(value, 40)}")  # TOML has inf and nan
    return value


def _known(table: dict, keys: set, path, where: str) -> None:
    """A SpecError naming the first key of `table` that is not one of `keys`."""
    unknown = sorted(set(table) - keys)
    if unknown:
        raise SpecError(path, f"{where}{_short(unknown[0], 40)}", f"unknown key; known: {', '.join(sorted(keys))}")


def _whole(table, key, path, where, default, minimum, maximum, why="", low=""):
    """An integer setting in [minimum, maximum]; `why` explains the maximum, `low` the minimum."""
    value = _get(table, key, path, where, int, default)
    if value < minimum:
        raise SpecError(path, f"{where}{key}", f"must be at least {minimum}{low}, got {value}")
    if value > maximum:
        raise SpecError(path, f"{where}{key}", f"must be at most {maximum:,}{why}, got {_short(value, 40)}")
    return value


def check_spec_seed(value, name: str = "seed") -> int:
    """A seed of a spec or of `--seed`: a whole number in [0, MAX_SEED] (results.nc stores it as a 64-bit integer)."""
    try:
        check_seed(value, name)
        if value is None or not 0 <= value <= MAX_SEED:
            raise ValueError
    except ValueError:
        raise ValueError(f"{name} must be a whole number in [0, 2**63 - 1], got {_short(value, 40)}") from None
    return int(value)


def _seed(table, key, path, where) -> int:
    """A seed setting (0 when missing)."""
    value = _get(table, key, path, where, int, 0)
    try:
        return check_spec_seed(value, key)
    except ValueError:
        raise SpecError(path, f"{where}{key}", f"must be a whole number in [0, 2**63 - 1], got {_short(value, 40)}") from None


def _check_syntax(text, path, key, callables, priors):
    """Parse an expression without building anything: only syntax, whitelist and names."""
    try:
        _parse_whitelisted(text, callables)
    except ValueError as err:
        raise SpecError(path, key, str(err)) from None
    missing = sorted(_names_in(text) - set(priors))
    if missing:
        raise SpecError(path, key, f"unknown name {missing[0]!r} (priors: {', '.join(sorted(priors)) or 'none declared'})")


# ---------------------------------------------------------------------------------------------------
# the readers, one per section


def read_toml(path: Path) -> dict:
    """The TOML table of a spec file, with known top-level keys only; a SpecError for a file that is missing,
    unreadable, too large or not TOML."""
    raw = _toml(path)
    _known(raw, TOP_KEYS, path, "")
    return raw


def _toml(path: Path) -> dict:
    """The TOML table of a file; a SpecError for a file that is missing, unreadable, too large or not TOML."""
    try:
        if path.is_file() and path.stat().st_size > MAX_FILE:
            raise SpecError(path, "(file)", f"larger than {MAX_FILE / 1e6:.0f} MB: not a spec")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(path, "(file)", "no such file") from None
    except IsADirectoryError:
        raise SpecError(path, "(file)", "is a folder, not a spec file") from None
    except OSError as err:
        raise SpecError(path, "(file)", f"cannot be read: {err.strerror or err}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SpecError(path, "(file)", f"not valid TOML: {_short(err, 200)}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise SpecError(path, "(file)", "not valid TOML: nested too deeply") from None


def read_name(raw: dict, path: Path) -> str:
    """The spec's name (the file's stem when missing): it names the report folder."""
    name = _get(raw, "name", path, "", str, path.stem)
    if not name or len(name) > MAX_NAME or not all(c.isalnum() or c in "-_" for c in name):
        raise SpecError(path, "name", f"must be 1 to {MAX_NAME} letters, digits, - or _ (it names the report folder), got {_short(repr(name))}")
    return name


def read_seed(raw: dict, path) -> int:
    """The spec's seed (0 when missing)."""
    return _seed(raw, "seed", path, "")


def read_description(raw: dict, path) -> str:
    """The spec's description ("" when missing)."""
    return _get(raw, "description", path, "", str, "")


def read_data(raw: dict, path) -> DataSection:
    """[data]: a known source and the keys it takes, of the right types."""
    data = _get(raw, "data", path, "", dict)
    source = _get(data, "source", path, "data.", str)
    keys = datasets.SOURCE_KEYS.get(source)
    if keys is None:
        raise SpecError(path, "data.source", f"unknown source {source!r}; available: {', '.join(sorted(datasets.SOURCE_KEYS))}")
    _known(data, keys | {"source"}, path, "data.")
    types = {"n": int, "noise": int | float, "path": str, "x": list, "y": str, "standardize": bool}
    out = {"source": source}
    for key in sorted(keys & set(data) - {"n", "seed"}):
        out[key] = _get(data, key, path, "data.", types[key])
    if "n" in data:
        out["n"] = _whole(data, "n", path, "data.", None, 2, MAX_N_APPROX, " (with model.approx; an exact GP takes at most "
                          f"{MAX_N:,})")
    if "seed" in data:
        out["seed"] = _seed(data, "seed", path, "data.")
    if "x" in out and not (out["x"] and all(isinstance(c, str) for c in out["x"])):
        raise SpecError(path, "data.x", f"must be a non-empty list of column names, got {_short(repr(out['x']))}")
    if out.get("noise", 0) < 0:
        raise SpecError(path, "data.noise", f"must be non-negative, got {out['noise']}")
    if "x" in out:
        out["x"] = tuple(out["x"])
    return DataSection(**out)


def read_priors(raw: dict, path) -> dict:
    """[priors]: name → expression of one PyMC distribution, checked for syntax (they are built with the model)."""
    priors = _get(raw, "priors", path, "", dict, {})
    for pname, text in priors.items():
        if not pname.isidentifier() or keyword.iskeyword(pname):
            raise SpecError(path, f"priors.{_short(pname, 40)}", "a prior's name must be a Python identifier, and not a keyword such as "
                            "lambda (an expression could not use it)")
        if not isinstance(text, str):
            raise SpecError(path, f"priors.{pname}", f"must be a string such as \"HalfNormal(sigma=1.0)\", got {_short(repr(text))}")
        _check_syntax(text, path, f"priors.{pname}", PRIORS, {})
    return dict(priors)


def read_model(raw: dict, path, priors: dict) -> ModelSection:
    """[model]: the kind, the candidate expressions, sigma and prior_cov; every declared prior must be used."""
    model = _get(raw, "model", path, "", dict)
    kind = _get(model, "kind", path, "model.", str)
    if kind not in ("gp", "blr"):
        raise SpecError(path, "model.kind", f"unknown kind {_short(repr(kind))}; available: 'gp', 'blr'")
    what, callables = ("kernel", KERNELS) if kind == "gp" else ("features", FEATURES)
    _known(model, {"kind", what, "sigma"} | ({"prior_cov"} if kind == "blr" else {"approx"}), path, "model.")
    texts = _get(model, what, path, "model.", str | list)
    texts = [texts] if isinstance(texts, str) else texts
    if not texts or len(texts) > MAX_CANDIDATES:
        raise SpecError(path, f"model.{what}", f"must name 1 to {MAX_CANDIDATES} candidates, got {len(texts)}")
    trees = []  # each candidate's parse tree, as text
    for i, text in enumerate(texts):
        key = f"model.{what}" + (f"[{i}]" if len(texts) > 1 else "")
        if not isinstance(text, str):
            raise SpecError(path, key, f"must be a string, got {_short(repr(text))}")
        _check_syntax(text, path, key, callables, priors)
        trees.append(ast.dump(ast.parse(text, mode="eval")))
        first = trees.index(trees[-1])
        if first < i:  # the same expression twice, however spaced: the same model, compared with itself
            raise SpecError(path, key, f"repeats candidate {first} ({_short(text)!r})")
    sigma = _number_or_prior(model, "sigma", path, priors)
    prior_cov = _number_or_prior(model, "prior_cov", path, priors) if kind == "blr" else None
    used = set().union(*(_names_in(t) for t in texts)) | {v for v in (sigma, prior_cov) if isinstance(v, str)}
    for pname in priors:
        if pname not in used:
            raise SpecError(path, f"priors.{pname}", "declared but not used by the model")
    if not used:
        raise SpecError(path, "priors", "the model has no hyperparameter with a prior, so nothing to fit: declare priors "
                                        "and use their names in [model] (for fixed hyperparameters use bayeskern.gp.posterior)")
    approx = _get(model, "approx", path, "model.", str, None)
    if approx is not None:
        try:
            parse_approx(approx)
        except ValueError as err:
            raise SpecError(path, "model.approx", f"{_short(repr(approx))}: {err}") from None
    return ModelSection(kind, tuple(texts), sigma, prior_cov, approx)


def _number_or_prior(model: dict, key: str, path, priors: dict):
    """model.sigma or model.prior_cov: a positive number, or the name of a declared prior."""
    value = _get(model, key, path, "model.", str | int | float)
    if isinstance(value, str):
        if value not in priors:
            raise SpecError(path, f"model.{key}", f"unknown name {_short(repr(value))} (priors: {', '.join(sorted(priors)) or 'none declared'})")
        return value
    if not value > 0:
        raise SpecError(path, f"model.{key}", f"must be positive, got {value}")
    return float(value)


def read_fit(raw: dict, path, n_candidates: int) -> tuple[EmpiricalBayesSettings | None, MCMCSettings | None]:
    """[fit]: the empirical-Bayes and MCMC settings (None for a fit not asked for); at least one of them."""
    fit = _get(raw, "fit", path, "", dict, {"empirical_bayes": {}})
    _known(fit, {"empirical_bayes", "mcmc"}, path, "fit.")
    eb = _get(fit, "empirical_bayes", path, "fit.", dict, None)
    eb = None if eb is None else _empirical_bayes(eb, path)
    mc = _get(fit, "mcmc", path, "fit.", dict, None)
    mc = None if mc is None else _mcmc(mc, path)
    if eb is None and mc is None:
        raise SpecError(path, "fit", "needs empirical_bayes, mcmc or both")
    if n_candidates > 1 and eb is None:
        raise SpecError(path, "fit.empirical_bayes", "several candidates are compared by their evidence: empirical_bayes is needed")
    return eb, mc


def _empirical_bayes(eb: dict, path) -> EmpiricalBayesSettings:
    """[fit.empirical_bayes], with its defaults."""
    _known(eb, {"restarts", "include_prior", "maxiter"}, path, "fit.empirical_bayes.")
    w = "fit.empirical_bayes."
    return EmpiricalBayesSettings(restarts=_whole(eb, "restarts", path, w, 5, 1, MAX_RESTARTS),
                                  include_prior=_get(eb, "include_prior", path, w, bool, False),
                                  maxiter=_whole(eb, "maxiter", path, w, 500, 1, MAX_ITER))


def _mcmc(mc: dict, path) -> MCMCSettings:
    """[fit.mcmc], with its defaults."""
    w = "fit.mcmc."
    _known(mc, {"draws", "tune", "chains", "sampler", "thin", "target_accept"}, path, w)
    sampler = _get(mc, "sampler", path, w, str, "nutpie")
    if sampler not in ("nutpie", "pymc"):
        raise SpecError(path, f"{w}sampler", f"must be 'nutpie' or 'pymc', got {sampler!r}")
    target = float(_get(mc, "target_accept", path, w, int | float, 0.9))
    if not 0 < target < 1:
        raise SpecError(path, f"{w}target_accept", f"must be in (0, 1), got {target}")
    draws = _whole(mc, "draws", path, w, 1000, MIN_DRAWS, MAX_DRAWS, low=" (fewer leave PSIS-LOO's tail fit and the tail ESS too few draws)")
    tune = _whole(mc, "tune", path, w, 1000, 0, MAX_DRAWS)
    chains = _whole(mc, "chains", path, w, 4, MIN_CHAINS, MAX_CHAINS, low=" (R-hat and the rank plot compare chains)")
    thin = _whole(mc, "thin", path, w, 1, 1, draws, " (the draws)")
    return MCMCSettings(draws=draws, tune=tune, chains=chains, thin=thin, sampler=sampler, target_accept=target)


def read_predict(raw: dict, path) -> PredictSection:
    """[predict]: the grid (None without one) and include_noise."""
    predict = _get(raw, "predict", path, "", dict, {})
    _known(predict, {"start", "stop", "num", "include_noise"}, path, "predict.")
    grid = None
    if {"start", "stop"} & set(predict):
        start = float(_get(predict, "start", path, "predict.", int | float))
        stop = float(_get(predict, "stop", path, "predict.", int | float))
        num = _whole(predict, "num", path, "predict.", 101, 2, MAX_GRID, " (the grid's posterior covariance and prior samples are num × num)")
        if not stop > start:
            raise SpecError(path, "predict", f"need start < stop, got {start}, {stop}")
        with np.errstate(all="ignore"):
            grid = np.linspace(start, stop, num)
        if not np.all(np.isfinite(grid)):
            raise SpecError(path, "predict", f"the grid from {start} to {stop} overflows float64")
    elif predict:
        raise SpecError(path, "predict", "needs start and stop (a grid of num points in [start, stop])")
    return PredictSection(grid, _get(predict, "include_noise", path, "predict.", bool, False))


def read_checks(raw: dict, path, kind: str) -> ChecksSection:
    """[checks]: psd (true/false) and the kernel-trick audit's options (None without one)."""
    checks = _get(raw, "checks", path, "", dict, {})
    _known(checks, {"kernel_trick", "psd"}, path, "checks.")
    psd = _get(checks, "psd", path, "checks.", bool, False)
    trick = _get(checks, "kernel_trick", path, "checks.", dict, None)
    return ChecksSection(psd=psd, kernel_trick=None if trick is None else _kernel_trick(trick, path, kind))


def _kernel_trick(trick: dict, path, kind: str) -> KernelTrickOptions:
    """[checks.kernel_trick]: the features (needed for a GP model) parse and build, Σ and σ positive."""
    w = "checks.kernel_trick."
    _known(trick, {"features", "prior_cov", "sigma"}, path, w)
    if kind == "gp" and "features" not in trick:
        raise SpecError(path, f"{w}features", "missing: a GP model has no feature map of its own to audit")
    if "features" in trick:
        _check_syntax(_get(trick, "features", path, w, str), path, f"{w}features", FEATURES, {})
        try:  # built here to check them, so that a constructor's complaint comes before any fitting
            parse_expression(trick["features"], FEATURES)
        except ValueError as err:
            raise SpecError(path, f"{w}features", str(err)) from None
    for key in ("prior_cov", "sigma"):
        if key in trick and not _get(trick, key, path, w, int | float) > 0:
            raise SpecError(path, f"{w}{key}", f"must be positive, got {trick[key]}")
    return KernelTrickOptions(**trick)


def read_report(raw: dict, path, name: str) -> ReportSection:
    """[report]: prior_samples and the title (the spec's name when missing)."""
    report = _get(raw, "report", path, "", dict, {})
    _known(report, {"prior_samples", "title"}, path, "report.")
    return ReportSection(prior_samples=_whole(report, "prior_samples", path, "report.", 5, 0, MAX_PRIOR_SAMPLES, " (sample functions per panel)"),
                         title=_get(report, "title", path, "report.", str, name))


def read_cv(raw: dict, path, eb: EmpiricalBayesSettings | None) -> CVSection | None:
    """[cv]: folds (≥ 2; at most n, checked with the data), seed, shuffle, refit; None without the section. Needs empirical Bayes."""
    cv = _get(raw, "cv", path, "", dict, None)
    if cv is None:
        return None
    _known(cv, {"folds", "seed", "shuffle", "refit"}, path, "cv.")
    if eb is None:
        raise SpecError(path, "cv", "cross-validation fits each training split by empirical Bayes: [fit.empirical_bayes] is needed")
    return CVSection(folds=_whole(cv, "folds", path, "cv.", ..., 2, MAX_N_APPROX, " (folds hold at least one row)"),
                     seed=_seed(cv, "seed", path, "cv."), shuffle=_get(cv, "shuffle", path, "cv.", bool, False),
                     refit=_get(cv, "refit", path, "cv.", bool, True))
