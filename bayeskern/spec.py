"""The model-spec format of models/*.toml: reading, validating, and building the PyMC models it describes.

A spec names the data, the model (a GP kernel or BLR feature maps, written in the Python API's own
vocabulary), the priors of its hyperparameters, the fits, the prediction grid, the checks and the
report options. Expressions are parsed with Python's `ast` against a whitelist — numbers, lists,
`+`, `*`, unary minus, names of declared priors, and calls of whitelisted constructors — never `eval`.
Every problem is a `SpecError` naming the file, the key and the reason on one line.
"""

import ast
import inspect
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from bayeskern import blr, datasets, features, gp, kernels

__all__ = ["PRIORS", "Spec", "SpecError", "load", "parse_expression", "parse_kernel"]

#: kernel constructors a spec may call: the public kernels of bayeskern.kernels
KERNELS = {n: getattr(kernels, n) for n in kernels.__all__ if n not in {"Kernel", "Sum", "Product", "Scaled", "FeatureKernel", "FisherKernel", "GenerativeModel"}}
#: feature-map constructors a spec may call
FEATURES = {n: getattr(features, n) for n in features.__all__ if n not in {"FeatureMap", "MercerFeatures"}}
#: prior distributions a spec may declare, by their PyMC names
PRIORS = {n: getattr(pm, n) for n in (
    "Normal", "HalfNormal", "LogNormal", "Gamma", "InverseGamma", "Exponential", "HalfCauchy",
    "HalfStudentT", "Uniform", "TruncatedNormal", "Beta", "Weibull",
)}

#: the longest list a spec expression may write (centres of a basis, ARD length scales)
MAX_LIST = 10_000

TOP_KEYS = {"name", "description", "seed", "data", "model", "priors", "fit", "predict", "checks", "report"}


class SpecError(ValueError):
    """A bad spec: names the file, the key and the reason, on one line."""

    def __init__(self, path, key: str, reason: str):
        self.path, self.key, self.reason = str(path), key, " ".join(str(reason).split())
        super().__init__(f"{self.path}: {key}: {self.reason}")


# ---------------------------------------------------------------------------------------------------
# expressions


def parse_expression(text: str, callables: dict, names: dict | None = None):
    """Evaluate a whitelisted expression: numbers, True/False, lists, +, *, unary minus, `names`, calls of `callables`.

    Raises ValueError with the reason (an unknown name, a construct that is not allowed, a
    constructor's own complaint).
    """
    tree = _parse_whitelisted(text, callables)
    return _evaluate(tree.body, callables, names or {})


# the only syntax an expression may use; everything else is refused before anything is evaluated
_ALLOWED_SYNTAX = (ast.Expression, ast.Constant, ast.UnaryOp, ast.USub, ast.List, ast.Tuple, ast.BinOp, ast.Add,
                   ast.Mult, ast.Name, ast.Call, ast.keyword, ast.Load)


def _parse_whitelisted(text: str, callables: dict) -> ast.Expression:
    """The parsed expression, or ValueError for bad syntax, a construct off the whitelist or an unknown callable."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not a valid expression: {err.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_SYNTAX) or isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            raise ValueError(f"not allowed in an expression: {ast.unparse(node)!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in callables):
            raise ValueError(f"unknown name {ast.unparse(node.func)!r}; known: {', '.join(sorted(callables))}")
    return tree


def parse_kernel(text: str, names: dict | None = None):
    """A kernel from an expression such as "2.0 * RBF(lengthscale=ell) + Constant(1.0)" (`ell` a prior name)."""
    k = parse_expression(text, KERNELS, names)
    if not isinstance(k, kernels.Kernel):
        raise ValueError(f"{text!r} is not a kernel")
    return k


def _evaluate(node, callables: dict, names: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):  # numbers, True and False
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _evaluate(node.operand, callables, names)
        if not isinstance(value, int | float):
            raise ValueError(f"unary minus applies to numbers only: {ast.unparse(node)!r}")
        return -value
    if isinstance(node, ast.List | ast.Tuple):
        if len(node.elts) > MAX_LIST:
            raise ValueError(f"a list may hold at most {MAX_LIST} values")
        return [_evaluate(e, callables, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left, callables, names), _evaluate(node.right, callables, names)
        if isinstance(left, list) or isinstance(right, list):  # no list repetition or concatenation
            raise ValueError(f"+ and * apply to numbers and kernels, not to lists: {ast.unparse(node)!r}")
        try:
            return left + right if isinstance(node.op, ast.Add) else left * right
        except TypeError:
            raise ValueError(f"cannot combine these: {ast.unparse(node)!r}") from None
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names)) or "none declared"
            raise ValueError(f"unknown name {node.id!r} (priors: {known})")
        return names[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # a known callable (_parse_whitelisted)
        args = [_evaluate(a, callables, names) for a in node.args]
        if any(k.arg is None for k in node.keywords):
            raise ValueError("**keyword unpacking is not allowed")
        kwargs = {k.arg: _evaluate(k.value, callables, names) for k in node.keywords}
        try:
            return callables[node.func.id](*args, **kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{node.func.id}: {err}") from None
    raise ValueError(f"not allowed in an expression: {ast.unparse(node)!r}")


def _names_in(text: str) -> set[str]:
    """The bare names an expression refers to (prior names), not the called constructors."""
    tree = ast.parse(text, mode="eval")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


# ---------------------------------------------------------------------------------------------------
# the validated spec


@dataclass(frozen=True)
class Spec:
    """A validated spec. `candidates`: the kernel (gp) or feature-map (blr) expressions; with more than one,
    each is fitted by empirical Bayes and the evidence decides which one is analysed in full."""

    path: Path
    name: str
    description: str
    seed: int
    data: dict
    kind: str
    candidates: tuple
    priors: dict
    sigma: object  # a number or a prior name
    prior_cov: object  # BLR: a number or a prior name; GP: None
    empirical_bayes: dict | None
    mcmc: dict | None
    grid: np.ndarray | None
    include_noise: bool
    checks: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)

    def load_data(self) -> datasets.Data:
        """The data of the spec (X (n, d), y (n,), column names); a missing file is a SpecError."""
        try:
            data = datasets.load(**self.data, base=self.path.parent)
        except FileNotFoundError as err:
            raise SpecError(self.path, "data.path", f"no such file: {err.filename}") from None
        except (ValueError, KeyError, ImportError) as err:
            raise SpecError(self.path, "data", str(err)) from None
        if self.grid is not None and data.X.shape[1] != 1:
            raise SpecError(self.path, "predict", f"a grid needs 1-D inputs, but the data have {data.X.shape[1]} columns "
                                                  "(leave [predict] out: the report then shows leave-one-out predictions)")
        return data

    def model(self, candidate: str, data: datasets.Data) -> pm.Model:
        """The PyMC model of one candidate on the data: priors, then the GP or BLR likelihood of `y`."""
        key = "model.kernel" if self.kind == "gp" else "model.features"
        used = _names_in(candidate) | {v for v in (self.sigma, self.prior_cov) if isinstance(v, str)}
        with pm.Model(coords={"obs": np.arange(len(data.y))}) as model:
            names = {name: _prior(self.path, name, self.priors[name]) for name in sorted(used & set(self.priors))}
            sigma = names[self.sigma] if isinstance(self.sigma, str) else self.sigma
            try:
                if self.kind == "gp":
                    gp.marginal_likelihood("y", X=data.X, y=data.y, kernel=parse_kernel(candidate, names), sigma=sigma, dims="obs")
                else:
                    phi = parse_expression(candidate, FEATURES, names)
                    prior_cov = names[self.prior_cov] if isinstance(self.prior_cov, str) else self.prior_cov
                    blr.likelihood("y", X=data.X, y=data.y, features=phi, prior_cov=prior_cov, sigma=sigma, collapsed=True, dims="obs")
            except ValueError as err:
                raise SpecError(self.path, key, f"{candidate!r}: {err}") from None
        _check_priors(self.path, model)
        return model


def _prior(path, name: str, text: str):
    """Declare the prior `name ~ text` in the current model, e.g. HalfNormal(sigma=2.0)."""
    def as_float(v):  # Python floats would become float32 constants in PyTensor; keep float64
        return np.float64(v) if isinstance(v, float | int) and not isinstance(v, bool) else v

    def make(dist):
        allowed = {p for p in inspect.signature(dist.dist).parameters if p not in ("args", "kwargs")} | {"shape"}

        def declare(*a, **kw):
            unknown = sorted(set(kw) - allowed)
            if unknown:
                raise ValueError(f"{dist.__name__} has no parameter {unknown[0]!r}; its parameters: {', '.join(sorted(allowed))}")
            return dist(name, *map(as_float, a), **{k: (v if k == "shape" else as_float(v)) for k, v in kw.items()})

        return declare

    try:
        return parse_expression(text, {n: make(d) for n, d in PRIORS.items()})
    except ValueError as err:
        raise SpecError(path, f"priors.{name}", str(err)) from None


def _check_priors(path, model: pm.Model) -> None:
    """Every prior has a finite log density at its initial value (PyMC does not check parameters when declaring)."""
    point = model.initial_point()
    values = {v.name: point[v.name] for v in model.value_vars}

    def logp_of(rvs):
        terms = [pt.sum(term) for term in model.logp(vars=rvs, jacobian=False, sum=False)]
        return pytensor.function(model.value_vars, terms, mode="FAST_COMPILE", on_unused_input="ignore")(**values)

    try:  # one compiled function for all priors; only on failure, one per prior to name the culprit
        results = list(zip(model.free_RVs, logp_of(model.free_RVs), strict=True))
    except ValueError:
        results = []
        for rv in model.free_RVs:
            try:
                results.append((rv, logp_of([rv])[0]))
            except ValueError as err:  # PyMC's parameter checks (ParameterValueError), e.g. "sigma > 0"
                raise SpecError(path, f"priors.{rv.name}", f"invalid parameters: {err}") from None
    for rv, value in results:
        if not np.isfinite(value):
            raise SpecError(path, f"priors.{rv.name}", "its log density is not finite at its initial value: are its parameters valid?")


# ---------------------------------------------------------------------------------------------------
# reading


def _get(table: dict, key: str, path, where: str, kind, default=...):
    if key not in table:
        if default is ...:
            raise SpecError(path, f"{where}{key}", "missing")
        return default
    value = table[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        want = {str: "a string", int: "an integer", bool: "true or false", dict: "a table", list: "a list",
                str | list: "a string or a list of strings", str | int | float: "a number or a prior's name"}.get(kind, "a number")
        raise SpecError(path, f"{where}{key}", f"must be {want}, got {value!r}")
    return value


def _known(table: dict, keys: set, path, where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise SpecError(path, f"{where}{unknown[0]}", f"unknown key; known: {', '.join(sorted(keys))}")


def _positive_int(table, key, path, where, default, minimum=1):
    value = _get(table, key, path, where, int, default)
    if value < minimum:
        raise SpecError(path, f"{where}{key}", f"must be at least {minimum}, got {value}")
    return value


def _check_syntax(text, path, key, callables, priors):
    """Parse an expression without building anything: only syntax, whitelist and names."""
    try:
        _parse_whitelisted(text, callables)
    except ValueError as err:
        raise SpecError(path, key, str(err)) from None
    missing = sorted(_names_in(text) - set(priors))
    if missing:
        raise SpecError(path, key, f"unknown name {missing[0]!r} (priors: {', '.join(sorted(priors)) or 'none declared'})")


def _data(raw: dict, path) -> dict:
    data = _get(raw, "data", path, "", dict)
    source = _get(data, "source", path, "data.", str)
    keys = datasets.SOURCE_KEYS.get(source)
    if keys is None:
        raise SpecError(path, "data.source", f"unknown source {source!r}; available: {', '.join(sorted(datasets.SOURCE_KEYS))}")
    _known(data, keys | {"source"}, path, "data.")
    types = {"n": int, "noise": int | float, "seed": int, "path": str, "x": list, "y": str, "standardize": bool}
    out = {"source": source}
    for key in sorted(keys & set(data)):
        out[key] = _get(data, key, path, "data.", types[key])
    if "x" in out and not (out["x"] and all(isinstance(c, str) for c in out["x"])):
        raise SpecError(path, "data.x", f"must be a non-empty list of column names, got {out['x']!r}")
    if out.get("n", 2) < 2:
        raise SpecError(path, "data.n", f"must be at least 2, got {out['n']}")
    if out.get("noise", 0) < 0:
        raise SpecError(path, "data.noise", f"must be non-negative, got {out['noise']}")
    return out


def _fit(raw: dict, path, n_candidates: int) -> tuple[dict | None, dict | None]:
    fit = _get(raw, "fit", path, "", dict, {"empirical_bayes": {}})
    _known(fit, {"empirical_bayes", "mcmc"}, path, "fit.")
    eb = _get(fit, "empirical_bayes", path, "fit.", dict, None)
    if eb is not None:
        _known(eb, {"restarts", "include_prior", "maxiter"}, path, "fit.empirical_bayes.")
        eb = {"restarts": _positive_int(eb, "restarts", path, "fit.empirical_bayes.", 5),
              "include_prior": _get(eb, "include_prior", path, "fit.empirical_bayes.", bool, False),
              "maxiter": _positive_int(eb, "maxiter", path, "fit.empirical_bayes.", 500)}
    mc = _get(fit, "mcmc", path, "fit.", dict, None)
    if mc is not None:
        w = "fit.mcmc."
        _known(mc, {"draws", "tune", "chains", "sampler", "thin", "target_accept"}, path, w)
        sampler = _get(mc, "sampler", path, w, str, "nutpie")
        if sampler not in ("nutpie", "pymc"):
            raise SpecError(path, f"{w}sampler", f"must be 'nutpie' or 'pymc', got {sampler!r}")
        target = float(_get(mc, "target_accept", path, w, int | float, 0.9))
        if not 0 < target < 1:
            raise SpecError(path, f"{w}target_accept", f"must be in (0, 1), got {target}")
        mc = {"draws": _positive_int(mc, "draws", path, w, 1000), "tune": _positive_int(mc, "tune", path, w, 1000, 0),
              "chains": _positive_int(mc, "chains", path, w, 4), "thin": _positive_int(mc, "thin", path, w, 1),
              "sampler": sampler, "target_accept": target}
    if eb is None and mc is None:
        raise SpecError(path, "fit", "needs empirical_bayes, mcmc or both")
    if n_candidates > 1 and eb is None:
        raise SpecError(path, "fit.empirical_bayes", "several candidates are compared by their evidence: empirical_bayes is needed")
    return eb, mc


def load(path) -> Spec:
    """Read and validate a spec; every problem is a SpecError naming the file and the key."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(path, "(file)", "no such file") from None
    except IsADirectoryError:
        raise SpecError(path, "(file)", "is a folder, not a spec file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SpecError(path, "(file)", f"not valid TOML: {err}") from None
    _known(raw, TOP_KEYS, path, "")
    name = _get(raw, "name", path, "", str, path.stem)
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise SpecError(path, "name", f"must be letters, digits, - or _, got {name!r}")
    seed = _get(raw, "seed", path, "", int, 0)
    data = _data(raw, path)

    priors = _get(raw, "priors", path, "", dict, {})
    for pname, text in priors.items():
        if not pname.isidentifier():
            raise SpecError(path, f"priors.{pname}", "a prior's name must be a Python identifier")
        if not isinstance(text, str):
            raise SpecError(path, f"priors.{pname}", f"must be a string such as \"HalfNormal(sigma=1.0)\", got {text!r}")
        _check_syntax(text, path, f"priors.{pname}", PRIORS, {})

    model = _get(raw, "model", path, "", dict)
    kind = _get(model, "kind", path, "model.", str)
    if kind not in ("gp", "blr"):
        raise SpecError(path, "model.kind", f"unknown kind {kind!r}; available: 'gp', 'blr'")
    what, callables = ("kernel", KERNELS) if kind == "gp" else ("features", FEATURES)
    _known(model, {"kind", what, "sigma"} | ({"prior_cov"} if kind == "blr" else set()), path, "model.")
    texts = _get(model, what, path, "model.", str | list)
    texts = [texts] if isinstance(texts, str) else texts
    if not texts:
        raise SpecError(path, f"model.{what}", "must name at least one candidate")
    for i, text in enumerate(texts):
        key = f"model.{what}" + (f"[{i}]" if len(texts) > 1 else "")
        if not isinstance(text, str):
            raise SpecError(path, key, f"must be a string, got {text!r}")
        _check_syntax(text, path, key, callables, priors)

    def number_or_prior(key, positive=True):
        value = _get(model, key, path, "model.", str | int | float)
        if isinstance(value, str):
            if value not in priors:
                raise SpecError(path, f"model.{key}", f"unknown name {value!r} (priors: {', '.join(sorted(priors)) or 'none declared'})")
            return value
        if positive and not value > 0:
            raise SpecError(path, f"model.{key}", f"must be positive, got {value}")
        return float(value)

    sigma = number_or_prior("sigma")
    prior_cov = number_or_prior("prior_cov") if kind == "blr" else None
    used = set().union(*(_names_in(t) for t in texts)) | {v for v in (sigma, prior_cov) if isinstance(v, str)}
    for pname in priors:
        if pname not in used:
            raise SpecError(path, f"priors.{pname}", "declared but not used by the model")
    if not used:
        raise SpecError(path, "priors", "the model has no hyperparameter with a prior, so nothing to fit: declare priors "
                                        "and use their names in [model] (for fixed hyperparameters use bayeskern.gp.posterior)")
    eb, mc = _fit(raw, path, len(texts))

    predict = _get(raw, "predict", path, "", dict, {})
    _known(predict, {"start", "stop", "num", "include_noise"}, path, "predict.")
    grid = None
    if {"start", "stop"} & set(predict):
        start = float(_get(predict, "start", path, "predict.", int | float))
        stop = float(_get(predict, "stop", path, "predict.", int | float))
        num = _get(predict, "num", path, "predict.", int, 101)
        if not (stop > start and num >= 2):
            raise SpecError(path, "predict", f"need start < stop and num ≥ 2, got {start}, {stop}, {num}")
        grid = np.linspace(start, stop, num)
    elif predict:
        raise SpecError(path, "predict", "needs start and stop (a grid of num points in [start, stop])")
    include_noise = _get(predict, "include_noise", path, "predict.", bool, False)

    checks = _get(raw, "checks", path, "", dict, {})
    _known(checks, {"kernel_trick", "psd"}, path, "checks.")
    psd = _get(checks, "psd", path, "checks.", bool, False)
    trick = _get(checks, "kernel_trick", path, "checks.", dict, None)
    if trick is not None:
        w = "checks.kernel_trick."
        _known(trick, {"features", "prior_cov", "sigma"}, path, w)
        if kind == "gp" and "features" not in trick:
            raise SpecError(path, f"{w}features", "missing: a GP model has no feature map of its own to audit")
        if "features" in trick:
            _check_syntax(_get(trick, "features", path, w, str), path, f"{w}features", FEATURES, {})
        for key in ("prior_cov", "sigma"):
            if key in trick and not _get(trick, key, path, w, int | float) > 0:
                raise SpecError(path, f"{w}{key}", f"must be positive, got {trick[key]}")
        trick = dict(trick)

    report = _get(raw, "report", path, "", dict, {})
    _known(report, {"prior_samples", "title"}, path, "report.")
    report = {"prior_samples": _positive_int(report, "prior_samples", path, "report.", 5, 0),
              "title": _get(report, "title", path, "report.", str, name)}
    return Spec(
        path=path, name=name, description=_get(raw, "description", path, "", str, ""), seed=seed, data=data,
        kind=kind, candidates=tuple(texts), priors=dict(priors), sigma=sigma, prior_cov=prior_cov,
        empirical_bayes=eb, mcmc=mc, grid=grid, include_noise=include_noise,
        checks={"psd": psd, "kernel_trick": trick}, report=report,
    )
