"""What a spec builds: its data checked against the spec, and the PyMC model of a candidate, checked at its initial point."""

import inspect
import math
import threading
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayeskern import blr, checks, datasets, features, gp
from bayeskern._compile import numpy_function
from bayeskern._validation import _refuse_prior_below_zero
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit._initial_point import point_draws
from bayeskern.likelihood import find_likelihood
from bayeskern.spec.expressions import FEATURES, PRIORS, _names_in, _short, parse_approx, parse_expression, parse_kernel
from bayeskern.spec.limits import MAX_N, MAX_N_APPROX, MAX_SIZE, MAX_STORED
from bayeskern.spec.schema import SpecError

if TYPE_CHECKING:
    from bayeskern.spec import Spec

__all__ = ["build_model", "load_data"]


# ---------------------------------------------------------------------------------------------------
# the data


def load_data(spec: "Spec") -> datasets.Data:
    """The data of `spec`, checked against the rest of it (see `Spec.load_data`)."""
    data = _read_data(spec)
    _check_data(spec, data)
    return data


def _read_data(spec: "Spec") -> datasets.Data:
    """The data from their source; a SpecError naming data.path or data for a source that cannot be read."""
    try:
        return datasets.load(**spec.data.as_kwargs(), base=spec.path.parent)
    except FileNotFoundError as err:
        raise SpecError(spec.path, "data.path", f"no such file: {err.filename}") from None
    except IsADirectoryError as err:
        raise SpecError(spec.path, "data.path", f"is a folder, not a CSV file: {err.filename}") from None
    except OSError as err:
        raise SpecError(spec.path, "data.path", f"cannot be read: {err.strerror or err}: {err.filename}") from None
    except UnicodeDecodeError:
        raise SpecError(spec.path, "data.path", "is not a UTF-8 text file") from None
    except (ValueError, KeyError, ImportError) as err:
        raise SpecError(spec.path, "data", str(err)) from None


def _check_data(spec: "Spec", data: datasets.Data) -> None:
    """2 to MAX_N rows (MAX_N_APPROX with model.approx), a grid only on 1-D inputs, kernel-trick features that fit the inputs, at most MAX_STORED MCMC values."""
    n, d = data.X.shape
    if n < 2:  # as data.n: one point cannot tell a noise level from a signal (σ → 0 fits it exactly)
        raise SpecError(spec.path, "data", f"the data have {n} row; at least 2 are needed")
    if n > (MAX_N if spec.approx is None else MAX_N_APPROX):
        raise SpecError(spec.path, "data.n", f"the data have {n:,} rows and at most {MAX_N:,} can be analysed by an exact GP "
                                             f"(n × n matrices; {MAX_N_APPROX:,} with model.approx, e.g. \"HSGP(m=200, c=1.5)\"): "
                                             f"{'set data.n to at most ' + format(MAX_N, ',') + ' for a random subset' if spec.approx is None else 'set data.n lower for a random subset'}")
    if spec.cv is not None and spec.cv.folds > n:
        raise SpecError(spec.path, "cv.folds", f"must be at most the number of data rows ({n:,}), got {spec.cv.folds:,}")
    if spec.grid is not None and d != 1:
        raise SpecError(spec.path, "predict", f"a grid needs 1-D inputs, but the data have {d} columns "
                                              "(leave [predict] out: the report then shows leave-one-out predictions)")
    trick = spec.checks.kernel_trick
    if trick is not None and trick.features is not None:
        _feature_count(spec.path, "checks.kernel_trick.features", parse_expression(trick.features, FEATURES), d)
    if spec.mcmc is not None:
        m = 0 if spec.grid is None else len(spec.grid)
        # per draw: log-likelihood and LOO draws at n points; f, y, mean and variance at m grid points (every thin-th)
        stored = spec.mcmc.chains * spec.mcmc.draws * (2 * n + 4 * m / spec.mcmc.thin)
        if stored > MAX_STORED:
            raise SpecError(spec.path, "fit.mcmc", f"chains × draws × (2n + 4·num/thin) = {stored:.3g} values would be kept, "
                                                   f"more than {MAX_STORED:.3g} ({MAX_STORED * 8 / 1e9:.0f} GB): fewer draws or "
                                                   "chains, a larger thin or a coarser grid")


def _feature_count(path, key: str, phi, d: int, text: str | None = None) -> int:
    """M, the number of features φ gives on d-column inputs; a SpecError for a map that cannot take them or gives more than MAX_SIZE."""
    where = f"{_short(text)!r}: " if text else ""
    if not isinstance(phi, features.FeatureMap):
        raise SpecError(path, key, f"{where}not a feature map")
    try:
        M = features.n_features(phi, d)
    except ValueError as err:
        raise SpecError(path, key, f"{where}{err}") from None
    if M > MAX_SIZE:
        raise SpecError(path, key, f"{where}gives {M:,} features on {d}-column inputs; at most {MAX_SIZE:,} (Φ is n × M)")
    return M


# ---------------------------------------------------------------------------------------------------
# the model of a candidate


def build_model(spec: "Spec", candidate: str, data: datasets.Data) -> pm.Model:
    """The PyMC model of one candidate on the data (see `Spec.model`)."""
    key = "model.kernel" if spec.kind == "gp" else "model.features"
    used = _names_in(candidate) | {v for v in (spec.sigma, spec.prior_cov) if isinstance(v, str)}
    with pm.Model(coords={"obs": np.arange(len(data.y))}) as model:
        names = {name: _prior(spec.path, name, spec.priors[name]) for name in sorted(used & set(spec.priors))}
        sigma = _role(spec, "sigma", names, lambda rv: rv.ndim == 0, "σ is one number: declare its prior without a shape")
        try:
            _likelihood(spec, candidate, data, names, sigma, key)
        except SpecError:
            raise
        except ValueError as err:
            raise SpecError(spec.path, key, f"{_short(candidate)!r}: {err}{_shaped_priors(model)}") from None
        except (RecursionError, MemoryError):
            raise SpecError(spec.path, key, f"{_short(candidate)!r}: too large to build") from None
    initial = _checked_priors(spec.path, model, tuple((name, spec.priors[name]) for name in sorted(names)))
    _check_at(spec.path, key, candidate, model, data, initial)
    return model


def _likelihood(spec: "Spec", candidate: str, data: datasets.Data, names: dict, sigma, key: str) -> None:
    """Declare the GP or BLR likelihood of `y` in the current model, the candidate built with the priors `names`."""
    if spec.kind == "gp":
        approx = None if spec.approx is None else parse_approx(spec.approx)
        gp.marginal_likelihood("y", X=data.X, y=data.y, kernel=parse_kernel(candidate, names), sigma=sigma, approx=approx, dims="obs")
        return
    phi = parse_expression(candidate, FEATURES, names)
    M = _feature_count(spec.path, key, phi, data.X.shape[1], candidate)
    prior_cov = _role(spec, "prior_cov", names, lambda rv: rv.ndim == 0 or rv.type.shape == (M,),
                      f"Σ is one variance (no shape) or one per feature (shape={M} for {_short(candidate)})")
    blr.likelihood("y", X=data.X, y=data.y, features=phi, prior_cov=prior_cov, sigma=sigma, collapsed=True, dims="obs")


def _role(spec: "Spec", key: str, names: dict, fits, why: str):
    """model.sigma or model.prior_cov: a number, or a declared prior whose shape `fits` its role (else `why`)."""
    value = getattr(spec, key)
    if not isinstance(value, str):
        return value
    rv = names[value]
    if not fits(rv):
        raise SpecError(spec.path, f"model.{key}", f"the prior {value!r} has shape {tuple(rv.type.shape)}, but {why}")
    try:  # σ and Σ are positive: a prior below 0 is the prior's fault, named as such
        _refuse_prior_below_zero(rv, key, "positive")
    except ValueError as err:
        raise SpecError(spec.path, f"priors.{value}", str(err)) from None
    return rv


# ---------------------------------------------------------------------------------------------------
# the priors


def _check_shape(shape):
    """A prior's `shape`: a whole number ≥ 1 or a list of them, at most MAX_SIZE values in all."""
    dims = shape if isinstance(shape, list) else [shape]
    if not dims or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in dims) or math.prod(dims) > MAX_SIZE:
        raise ValueError(f"shape must be a whole number ≥ 1 or a list of them, at most {MAX_SIZE:,} values in all, got {_short(shape, 40)}")
    return tuple(dims)


def _as_float(v):
    """Python floats would become float32 constants in PyTensor; keep float64."""
    return np.float64(v) if isinstance(v, float | int) and not isinstance(v, bool) else v


def _declarer(name: str, dist):
    """A callable for expressions that declares `name ~ dist(…)`, refusing parameters `dist` does not have."""
    allowed = {p for p in inspect.signature(dist.dist).parameters if p not in ("args", "kwargs")} | {"shape"}

    def declare(*a, **kw):
        unknown = sorted(set(kw) - allowed)
        if unknown:
            raise ValueError(f"{dist.__name__} has no parameter {unknown[0]!r}; its parameters: {', '.join(sorted(allowed))}")
        return dist(name, *map(_as_float, a), **{k: (_check_shape(v) if k == "shape" else _as_float(v)) for k, v in kw.items()})

    return declare


def _prior(path, name: str, text: str):
    """Declare the prior `name ~ text` in the current model, e.g. HalfNormal(sigma=2.0)."""
    try:
        rv = parse_expression(text, {n: _declarer(name, d) for n, d in PRIORS.items()})
    except ValueError as err:
        raise SpecError(path, f"priors.{name}", str(err)) from None
    if not isinstance(rv, pt.TensorVariable) or rv.name != name:  # e.g. "1.0", or "2.0 * HalfNormal(sigma=1.0)"
        raise SpecError(path, f"priors.{name}", f"must be one distribution such as \"HalfNormal(sigma=1.0)\", got {_short(text)!r}")
    size = math.prod(k for k in rv.type.shape if k is not None)  # its parameters' shapes broadcast
    if size > MAX_SIZE:
        raise SpecError(path, f"priors.{name}", f"has {size:,} values; at most {MAX_SIZE:,}")
    return rv


# ---------------------------------------------------------------------------------------------------
# the checks at the initial point


#: the initial values `_check_priors` found, by the priors that make them ((name, text), …): they depend on the priors
#: alone, and the folds of a cross-validation build one model per fold with the same priors (measured on
#: benchmarks/cv_400.toml: 0.2 s per model, PyMC's log-density rewrites and initial point compiled each time)
_CHECKED: OrderedDict = OrderedDict()
_MAX_CHECKED = 64
_CHECKED_LOCK = threading.Lock()


def _checked_priors(path, model: pm.Model, priors: tuple) -> dict:
    """`_check_priors`, once per distinct set of priors in a process (a failed check is not kept: it raises)."""
    with _CHECKED_LOCK:
        if priors in _CHECKED:
            _CHECKED.move_to_end(priors)
            return dict(_CHECKED[priors])
    initial = _check_priors(path, model)
    with _CHECKED_LOCK:
        _CHECKED[priors] = initial
        while len(_CHECKED) > _MAX_CHECKED:
            _CHECKED.popitem(last=False)
    return dict(initial)


def _check_priors(path, model: pm.Model) -> dict:
    """Every prior has a finite log density at its initial value (PyMC does not check parameters when declaring).

    Returns the initial values of the free variables on their natural scale, by name.
    """
    point = point_draws(model)()  # the model's initial point, as a fit computes it
    values = {v.name: point[v.name] for v in model.value_vars}
    natural = model.replace_rvs_by_values(model.free_RVs)

    def evaluate(rvs, extra=()):
        terms = [pt.sum(term) for term in model.logp(vars=rvs, jacobian=False, sum=False)]
        return numpy_function(model.value_vars, terms + list(extra), on_unused_input="ignore")(**values)

    try:  # one compiled function for all priors; only on failure, one per prior to name the culprit
        out = evaluate(model.free_RVs, natural)
    except ValueError as err:
        for rv in model.free_RVs:
            try:
                evaluate([rv])
            except ValueError as culprit:  # PyMC's parameter checks (ParameterValueError), e.g. "sigma > 0"
                raise SpecError(path, f"priors.{rv.name}", f"invalid parameters: {culprit}") from None
        raise SpecError(path, "priors", f"cannot be evaluated together: {err}") from None
    k = len(model.free_RVs)
    for rv, value in zip(model.free_RVs, out[:k], strict=True):
        if not np.isfinite(value):
            raise SpecError(path, f"priors.{rv.name}", "its log density is not finite at its initial value: are its parameters valid?")
    return {rv.name: value for rv, value in zip(model.free_RVs, out[k:], strict=True)}


#: a candidate's kernel is checked positive semi-definite on at most this many rows of X when its model is built
PSD_CHECK_ROWS = 200


def _numeric_at(model: pm.Model, params: dict):
    """The model's likelihood record with its priors at `params` as numbers."""
    return PlugIn(model, find_likelihood(model)[1]).numeric(params)


def _shaped_priors(model: pm.Model) -> str:
    """" (priors with a shape: ell (3,))", the hint of a message that a candidate does not fit the data, or "" without such priors."""
    shaped = ", ".join(f"{rv.name} {tuple(rv.type.shape)}" for rv in model.free_RVs if rv.ndim)
    return f" (priors with a shape: {shaped})" if shaped else ""


def _check_at(path, key: str, candidate: str, model: pm.Model, data: datasets.Data, params: dict) -> None:
    """Build the candidate with its priors at `params` as numbers, as a fit does at every step: what does
    not fit the data (ARD length scales for another number of columns …), or a kernel that is not positive
    semi-definite on the first PSD_CHECK_ROWS rows of X (then not on X either: a fit could not start), or a BLR that cannot be
    conditioned there, is a SpecError naming `key`."""
    try:
        record = _numeric_at(model, params)
        record.check_inputs(data.X)  # graphs built and shapes checked, nothing compiled
    except (ValueError, TypeError, IndexError) as err:
        raise SpecError(path, key, f"{_short(candidate)!r}: {_short(err, 300)}{_shaped_priors(model)}") from None
    kernel = getattr(record, "kernel", None)
    if kernel is not None:
        result = checks.psd(kernel, data.X[:PSD_CHECK_ROWS])  # a principal submatrix of a PSD matrix is PSD
        if not result.passed:
            raise SpecError(path, key, f"{_short(candidate)!r} at the priors' initial values: {result.verdict}")
    elif record.weight_space() is not None:  # a BLR: conditioned there, O(nM² + M³) (features too ill-conditioned …)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a jitter it needed is the fit's to report
                record.condition()
        except ValueError as err:
            raise SpecError(path, key, f"{_short(candidate)!r} at the priors' initial values: {_short(err, 300)}") from None
