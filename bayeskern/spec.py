"""The model-spec format of models/*.toml: reading, validating, and building the PyMC models it describes.

A spec names the data, the model (a GP kernel or BLR feature maps, written in the Python API's own
vocabulary), the priors of its hyperparameters, the fits, the prediction grid, the checks and the
report options. Expressions are parsed with Python's `ast` against a whitelist — numbers, lists,
`+`, `*`, unary minus, names of declared priors, and calls of whitelisted constructors — never `eval`.
Every problem is a `SpecError` naming the file, the key and the reason on one line, and sizes are
bounded (the MAX_* constants below) so that a spec the checks accept is one the machine can run.
"""

import ast
import inspect
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from bayeskern import blr, datasets, features, gp, kernels
from bayeskern._validation import check_prior_cov, check_seed
from bayeskern.fit._plug_in import PlugIn
from bayeskern.likelihood import find_likelihood

__all__ = ["MAX_GRID", "MAX_N", "MAX_PRIOR_SAMPLES", "MAX_SEED", "MAX_SIZE", "PRIORS", "Spec", "SpecError", "check_spec_seed", "load",
           "parse_expression", "parse_kernel"]


def _classes(module, base, excluded: set) -> dict:
    return {n: c for n in module.__all__ if isinstance(c := getattr(module, n), type) and issubclass(c, base) and n not in excluded}


#: kernel constructors a spec may call: the public kernels of bayeskern.kernels
KERNELS = _classes(kernels, kernels.Kernel, {"Kernel", "Sum", "Product", "Scaled", "FeatureKernel", "FisherKernel", "GenerativeModel"})
#: feature-map constructors a spec may call
FEATURES = _classes(features, features.FeatureMap, {"FeatureMap", "MercerFeatures"})
#: prior distributions a spec may declare, by their PyMC names
PRIORS = {n: getattr(pm, n) for n in (
    "Normal", "HalfNormal", "LogNormal", "Gamma", "InverseGamma", "Exponential", "HalfCauchy",
    "HalfStudentT", "Uniform", "TruncatedNormal", "Beta", "Weibull",
)}

# Limits, so that what `check` accepts one machine can run (the README's spec section lists them).
#: rows of data: an exact GP or the LOO of a BLR stores n × n float64 matrices (800 MB at n = 10⁴)
MAX_N = 10_000
#: predict.num: the grid's posterior covariance and the prior sample functions need num × num matrices
MAX_GRID = 2_000
#: report.prior_samples: sample functions drawn per panel of the prior figure
MAX_PRIOR_SAMPLES = 100
#: values in one prior (its shape), in one list of an expression, and features of one feature map
MAX_SIZE = 10_000
MAX_LIST = MAX_SIZE
#: seeds (spec, data, --seed): results.nc stores them as 64-bit integers
MAX_SEED = 2**63 - 1
#: values an MCMC run keeps in memory: chains × draws × (2n + 4·num/thin) float64 (2 GB)
MAX_STORED = 250_000_000
#: fit settings: EB starts and iterations, MCMC draws (tuning and kept) and chains
MAX_RESTARTS, MAX_ITER, MAX_DRAWS, MAX_CHAINS = 1_000, 1_000_000, 1_000_000, 64
#: candidates compared by evidence, characters of one expression, nesting levels of an expression
MAX_CANDIDATES, MAX_EXPRESSION, MAX_DEPTH = 100, 200_000, 50
#: characters of a spec's name (the report folder's name) and bytes of a spec file
MAX_NAME, MAX_FILE = 100, 10_000_000

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
    constructor's own complaint, a number that is not finite, an expression longer than
    MAX_EXPRESSION characters or nested deeper than MAX_DEPTH levels).
    """
    tree = _parse_whitelisted(text, callables)
    return _evaluate(tree.body, callables, names or {})


# the only syntax an expression may use; everything else is refused before anything is evaluated
_ALLOWED_SYNTAX = (ast.Expression, ast.Constant, ast.UnaryOp, ast.USub, ast.List, ast.Tuple, ast.BinOp, ast.Add,
                   ast.Mult, ast.Name, ast.Call, ast.keyword, ast.Load)


def _short(text, limit: int = 80) -> str:
    """`text` on one line, cut to `limit` characters (a message quotes expressions, never pages of them)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _finite(value) -> bool:
    """A number that is a finite float64 (an int too large for a float is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _depth(tree: ast.AST) -> int:
    """How deep the tree nests, counted without recursion (stopping once past MAX_DEPTH)."""
    deepest, stack = 0, [(tree, 1)]
    while stack and deepest <= MAX_DEPTH:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _parse_whitelisted(text: str, callables: dict) -> ast.Expression:
    """The parsed expression, or ValueError for bad syntax, a construct off the whitelist, an unknown callable,
    a number that is not finite, or an expression too long or too deeply nested."""
    if len(text) > MAX_EXPRESSION:
        raise ValueError(f"an expression may be at most {MAX_EXPRESSION:,} characters long, this one has {len(text):,}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not a valid expression: {err.msg}") from None
    except (RecursionError, MemoryError):  # CPython's parser gives up on very deep nesting (e.g. 10⁵ unary minuses)
        raise ValueError(f"too deeply nested to parse (an expression may nest at most {MAX_DEPTH} levels; "
                         "a sum or product of k terms nests k levels)") from None
    if _depth(tree) > MAX_DEPTH:
        raise ValueError(f"an expression may nest at most {MAX_DEPTH} levels (a sum or product of k terms nests k levels)")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_SYNTAX) or isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            raise ValueError(f"not allowed in an expression: {_short(ast.unparse(node))!r}")
        if isinstance(node, ast.Constant) and not _finite(node.value):
            raise ValueError(f"numbers must be finite float64 values (|x| < 1.8e308), got {_short(ast.unparse(node), 40)}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in callables):
            raise ValueError(f"unknown name {_short(ast.unparse(node.func))!r}; known: {', '.join(sorted(callables))}")
    return tree


def parse_kernel(text: str, names: dict | None = None):
    """A kernel from an expression such as "2.0 * RBF(lengthscale=ell) + Constant(1.0)" (`ell` a prior name)."""
    k = parse_expression(text, KERNELS, names)
    if not isinstance(k, kernels.Kernel):
        raise ValueError(f"{_short(text)!r} is not a kernel")
    return k


def _list_of_numbers(values: list, node) -> list:
    """The values of a list in an expression: numbers, or lists of numbers (a matrix), nothing else."""
    for v in values:
        inner = v if isinstance(v, list) else [v]
        if not all(isinstance(w, int | float) for w in inner):
            what = "lists nest at most two deep (a matrix)" if any(isinstance(w, list) for w in inner) else "a list holds numbers only"
            raise ValueError(f"{what}: {_short(ast.unparse(node))!r}")
    return values


def _evaluate(node, callables: dict, names: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):  # numbers, True and False
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _evaluate(node.operand, callables, names)
        if not isinstance(value, int | float):
            raise ValueError(f"unary minus applies to numbers only: {_short(ast.unparse(node))!r}")
        return -value
    if isinstance(node, ast.List | ast.Tuple):
        if len(node.elts) > MAX_LIST:
            raise ValueError(f"a list may hold at most {MAX_LIST} values")
        return _list_of_numbers([_evaluate(e, callables, names) for e in node.elts], node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left, callables, names), _evaluate(node.right, callables, names)
        if isinstance(left, list) or isinstance(right, list):  # no list repetition or concatenation
            raise ValueError(f"+ and * apply to numbers and kernels, not to lists: {_short(ast.unparse(node))!r}")
        try:
            value = left + right if isinstance(node.op, ast.Add) else left * right
        except TypeError:
            raise ValueError(f"cannot combine these: {_short(ast.unparse(node))!r}") from None
        if isinstance(value, int | float) and not _finite(value):
            raise ValueError(f"the number overflows float64: {_short(ast.unparse(node))!r}")
        return value
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
        _check_counts(callables[node.func.id], args, kwargs)
        try:
            return callables[node.func.id](*args, **kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{node.func.id}: {_short(err, 300)}") from None
        except (MemoryError, RecursionError):
            raise ValueError(f"{node.func.id}: too large to build with these arguments") from None
    raise ValueError(f"not allowed in an expression: {_short(ast.unparse(node))!r}")


def _check_counts(func, args: list, kwargs: dict) -> None:
    """Whole numbers given to a kernel or feature map (degrees, orders, numbers of features, depths) are at most
    MAX_SIZE, so that building one cannot exhaust the memory; a `seed` is not a count."""
    if isinstance(func, type) and issubclass(func, kernels.Kernel | features.FeatureMap):
        for name, value in [*((None, a) for a in args), *kwargs.items()]:
            if isinstance(value, int) and not isinstance(value, bool) and name != "seed" and abs(value) > MAX_SIZE:
                raise ValueError(f"{func.__name__}: whole-number arguments (degrees, orders, numbers of features, depths) "
                                 f"may be at most {MAX_SIZE:,}, got {_short(value, 40)}")


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
        """The data of the spec (X (n, d), y (n,), column names), checked against the rest of the spec: a SpecError
        for a file that cannot be read, more than MAX_N rows, a grid on inputs of several columns, kernel-trick
        features that do not fit the inputs, or an MCMC run that would keep more than MAX_STORED values."""
        try:
            data = datasets.load(**self.data, base=self.path.parent)
        except FileNotFoundError as err:
            raise SpecError(self.path, "data.path", f"no such file: {err.filename}") from None
        except IsADirectoryError as err:
            raise SpecError(self.path, "data.path", f"is a folder, not a CSV file: {err.filename}") from None
        except OSError as err:
            raise SpecError(self.path, "data.path", f"cannot be read: {err.strerror or err}: {err.filename}") from None
        except UnicodeDecodeError:
            raise SpecError(self.path, "data.path", "is not a UTF-8 text file") from None
        except (ValueError, KeyError, ImportError) as err:
            raise SpecError(self.path, "data", str(err)) from None
        n, d = data.X.shape
        if n > MAX_N:
            raise SpecError(self.path, "data.n", f"the data have {n:,} rows and at most {MAX_N:,} can be analysed (an exact GP "
                                                  "stores n × n matrices): set data.n to analyse a random subset")
        if self.grid is not None and d != 1:
            raise SpecError(self.path, "predict", f"a grid needs 1-D inputs, but the data have {d} columns "
                                                  "(leave [predict] out: the report then shows leave-one-out predictions)")
        trick = self.checks.get("kernel_trick") or {}
        if "features" in trick:
            _feature_count(self.path, "checks.kernel_trick.features", parse_expression(trick["features"], FEATURES), d)
        if self.mcmc is not None:
            m = 0 if self.grid is None else len(self.grid)
            # per draw: log-likelihood and LOO draws at n points; f, y, mean and variance at m grid points (every thin-th)
            stored = self.mcmc["chains"] * self.mcmc["draws"] * (2 * n + 4 * m / self.mcmc["thin"])
            if stored > MAX_STORED:
                raise SpecError(self.path, "fit.mcmc", f"chains × draws × (2n + 4·num/thin) = {stored:.3g} values would be kept, "
                                                       f"more than {MAX_STORED:.3g} ({MAX_STORED * 8 / 1e9:.0f} GB): fewer draws or "
                                                       "chains, a larger thin or a coarser grid")
        return data

    def model(self, candidate: str, data: datasets.Data) -> pm.Model:
        """The PyMC model of one candidate on the data: priors, then the GP or BLR likelihood of `y`.

        Everything a fit would reject is a SpecError naming its key: a prior whose shape does not fit
        where it is used (σ is one number; Σ is one number or one per feature; ARD length scales are
        one per input column), a feature map with more than MAX_SIZE features, invalid prior parameters.
        """
        key = "model.kernel" if self.kind == "gp" else "model.features"
        used = _names_in(candidate) | {v for v in (self.sigma, self.prior_cov) if isinstance(v, str)}
        with pm.Model(coords={"obs": np.arange(len(data.y))}) as model:
            names = {name: _prior(self.path, name, self.priors[name]) for name in sorted(used & set(self.priors))}
            sigma = self._role("sigma", names, lambda rv: rv.ndim == 0, "σ is one number: declare its prior without a shape")
            try:
                if self.kind == "gp":
                    gp.marginal_likelihood("y", X=data.X, y=data.y, kernel=parse_kernel(candidate, names), sigma=sigma, dims="obs")
                else:
                    phi = parse_expression(candidate, FEATURES, names)
                    M = _feature_count(self.path, key, phi, data.X.shape[1], candidate)
                    prior_cov = self._role("prior_cov", names, lambda rv: rv.ndim == 0 or rv.type.shape == (M,),
                                           f"Σ is one variance (no shape) or one per feature (shape={M} for {_short(candidate)})")
                    blr.likelihood("y", X=data.X, y=data.y, features=phi, prior_cov=prior_cov, sigma=sigma, collapsed=True, dims="obs")
            except SpecError:
                raise
            except ValueError as err:
                raise SpecError(self.path, key, f"{_short(candidate)!r}: {err}") from None
            except (RecursionError, MemoryError):
                raise SpecError(self.path, key, f"{_short(candidate)!r}: too large to build") from None
        initial = _check_priors(self.path, model)
        _check_at(self.path, key, candidate, model, data, initial)
        return model

    def _role(self, key: str, names: dict, fits, why: str):
        """model.sigma or model.prior_cov: a number, or a declared prior whose shape `fits` its role (else `why`)."""
        value = getattr(self, key)
        if not isinstance(value, str):
            return value
        rv = names[value]
        if not fits(rv):
            raise SpecError(self.path, f"model.{key}", f"the prior {value!r} has shape {tuple(rv.type.shape)}, but {why}")
        return rv


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


def _check_shape(shape):
    """A prior's `shape`: a whole number ≥ 1 or a list of them, at most MAX_SIZE values in all."""
    dims = shape if isinstance(shape, list) else [shape]
    if not dims or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in dims) or math.prod(dims) > MAX_SIZE:
        raise ValueError(f"shape must be a whole number ≥ 1 or a list of them, at most {MAX_SIZE:,} values in all, got {_short(shape, 40)}")
    return tuple(dims)


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
            return dist(name, *map(as_float, a), **{k: (_check_shape(v) if k == "shape" else as_float(v)) for k, v in kw.items()})

        return declare

    try:
        rv = parse_expression(text, {n: make(d) for n, d in PRIORS.items()})
    except ValueError as err:
        raise SpecError(path, f"priors.{name}", str(err)) from None
    if not isinstance(rv, pt.TensorVariable) or rv.name != name:  # e.g. "1.0", or "2.0 * HalfNormal(sigma=1.0)"
        raise SpecError(path, f"priors.{name}", f"must be one distribution such as \"HalfNormal(sigma=1.0)\", got {_short(text)!r}")
    size = math.prod(k for k in rv.type.shape if k is not None)  # its parameters' shapes broadcast
    if size > MAX_SIZE:
        raise SpecError(path, f"priors.{name}", f"has {size:,} values; at most {MAX_SIZE:,}")
    return rv


def _check_priors(path, model: pm.Model) -> dict:
    """Every prior has a finite log density at its initial value (PyMC does not check parameters when declaring).

    Returns the initial values of the free variables on their natural scale, by name.
    """
    point = model.initial_point()
    values = {v.name: point[v.name] for v in model.value_vars}
    natural = model.replace_rvs_by_values(model.free_RVs)

    def evaluate(rvs, extra=()):
        terms = [pt.sum(term) for term in model.logp(vars=rvs, jacobian=False, sum=False)]
        return pytensor.function(model.value_vars, terms + list(extra), mode="FAST_COMPILE", on_unused_input="ignore")(**values)

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


def _check_at(path, key: str, candidate: str, model: pm.Model, data: datasets.Data, params: dict) -> None:
    """Build the candidate with its priors at `params` as numbers, as a fit does at every step: what does
    not fit the data (ARD length scales for another number of columns …) is a SpecError naming `key`."""
    record = find_likelihood(model)[1]
    try:
        PlugIn(model, record).numeric(params).check_inputs(data.X)
    except (ValueError, TypeError, IndexError) as err:
        shaped = ", ".join(f"{rv.name} {tuple(rv.type.shape)}" for rv in model.free_RVs if rv.ndim)
        hint = f" (priors with a shape: {shaped})" if shaped else ""
        raise SpecError(path, key, f"{_short(candidate)!r}: {_short(err, 300)}{hint}") from None


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
        raise SpecError(path, f"{where}{key}", f"must be {want}, got {_short(repr(value))}")
    if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(0.0, kind) and not _finite(value):
        raise SpecError(path, f"{where}{key}", f"must be a finite number (|x| < 1.8e308), got {_short(value, 40)}")  # TOML has inf and nan
    return value


def _known(table: dict, keys: set, path, where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise SpecError(path, f"{where}{_short(unknown[0], 40)}", f"unknown key; known: {', '.join(sorted(keys))}")


def _whole(table, key, path, where, default, minimum, maximum, why=""):
    """An integer setting in [minimum, maximum]; `why` explains the maximum."""
    value = _get(table, key, path, where, int, default)
    if value < minimum:
        raise SpecError(path, f"{where}{key}", f"must be at least {minimum}, got {value}")
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


def _data(raw: dict, path) -> dict:
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
        out["n"] = _whole(data, "n", path, "data.", None, 2, MAX_N, " (an exact GP stores n × n matrices)")
    if "seed" in data:
        out["seed"] = _seed(data, "seed", path, "data.")
    if "x" in out and not (out["x"] and all(isinstance(c, str) for c in out["x"])):
        raise SpecError(path, "data.x", f"must be a non-empty list of column names, got {_short(repr(out['x']))}")
    if out.get("noise", 0) < 0:
        raise SpecError(path, "data.noise", f"must be non-negative, got {out['noise']}")
    return out


def _fit(raw: dict, path, n_candidates: int) -> tuple[dict | None, dict | None]:
    fit = _get(raw, "fit", path, "", dict, {"empirical_bayes": {}})
    _known(fit, {"empirical_bayes", "mcmc"}, path, "fit.")
    eb = _get(fit, "empirical_bayes", path, "fit.", dict, None)
    if eb is not None:
        _known(eb, {"restarts", "include_prior", "maxiter"}, path, "fit.empirical_bayes.")
        w = "fit.empirical_bayes."
        eb = {"restarts": _whole(eb, "restarts", path, w, 5, 1, MAX_RESTARTS),
              "include_prior": _get(eb, "include_prior", path, w, bool, False),
              "maxiter": _whole(eb, "maxiter", path, w, 500, 1, MAX_ITER)}
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
        draws = _whole(mc, "draws", path, w, 1000, 1, MAX_DRAWS)
        mc = {"draws": draws, "tune": _whole(mc, "tune", path, w, 1000, 0, MAX_DRAWS),
              "chains": _whole(mc, "chains", path, w, 4, 1, MAX_CHAINS), "thin": _whole(mc, "thin", path, w, 1, 1, draws, " (the draws)"),
              "sampler": sampler, "target_accept": target}
    if eb is None and mc is None:
        raise SpecError(path, "fit", "needs empirical_bayes, mcmc or both")
    if n_candidates > 1 and eb is None:
        raise SpecError(path, "fit.empirical_bayes", "several candidates are compared by their evidence: empirical_bayes is needed")
    return eb, mc


def _read(path: Path) -> dict:
    """The TOML table of a spec file; a SpecError for a file that is missing, unreadable, too large or not TOML."""
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


def _priors(raw: dict, path) -> dict:
    priors = _get(raw, "priors", path, "", dict, {})
    for pname, text in priors.items():
        if not pname.isidentifier():
            raise SpecError(path, f"priors.{_short(pname, 40)}", "a prior's name must be a Python identifier")
        if not isinstance(text, str):
            raise SpecError(path, f"priors.{pname}", f"must be a string such as \"HalfNormal(sigma=1.0)\", got {_short(repr(text))}")
        _check_syntax(text, path, f"priors.{pname}", PRIORS, {})
    return dict(priors)


def _model(raw: dict, path, priors: dict) -> tuple:
    """[model]: (kind, candidate expressions, sigma, prior_cov); every declared prior must be used."""
    model = _get(raw, "model", path, "", dict)
    kind = _get(model, "kind", path, "model.", str)
    if kind not in ("gp", "blr"):
        raise SpecError(path, "model.kind", f"unknown kind {_short(repr(kind))}; available: 'gp', 'blr'")
    what, callables = ("kernel", KERNELS) if kind == "gp" else ("features", FEATURES)
    _known(model, {"kind", what, "sigma"} | ({"prior_cov"} if kind == "blr" else set()), path, "model.")
    texts = _get(model, what, path, "model.", str | list)
    texts = [texts] if isinstance(texts, str) else texts
    if not texts or len(texts) > MAX_CANDIDATES:
        raise SpecError(path, f"model.{what}", f"must name 1 to {MAX_CANDIDATES} candidates, got {len(texts)}")
    for i, text in enumerate(texts):
        key = f"model.{what}" + (f"[{i}]" if len(texts) > 1 else "")
        if not isinstance(text, str):
            raise SpecError(path, key, f"must be a string, got {_short(repr(text))}")
        _check_syntax(text, path, key, callables, priors)

    def number_or_prior(key, positive=True):
        value = _get(model, key, path, "model.", str | int | float)
        if isinstance(value, str):
            if value not in priors:
                raise SpecError(path, f"model.{key}", f"unknown name {_short(repr(value))} (priors: {', '.join(sorted(priors)) or 'none declared'})")
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
    return kind, tuple(texts), sigma, prior_cov


def _predict(raw: dict, path) -> tuple[np.ndarray | None, bool]:
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
    return grid, _get(predict, "include_noise", path, "predict.", bool, False)


def _checks(raw: dict, path, kind: str) -> dict:
    """[checks]: psd (true/false) and the kernel-trick audit's options (None without one)."""
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
            try:  # built once here, so that a constructor's complaint comes before any fitting
                parse_expression(trick["features"], FEATURES)
            except ValueError as err:
                raise SpecError(path, f"{w}features", str(err)) from None
        for key in ("prior_cov", "sigma"):
            if key in trick and not _get(trick, key, path, w, int | float) > 0:
                raise SpecError(path, f"{w}{key}", f"must be positive, got {trick[key]}")
        trick = dict(trick)
    return {"psd": psd, "kernel_trick": trick}


def load(path) -> Spec:
    """Read and validate a spec; every problem is a SpecError naming the file and the key."""
    path = Path(path)
    raw = _read(path)
    _known(raw, TOP_KEYS, path, "")
    name = _get(raw, "name", path, "", str, path.stem)
    if not name or len(name) > MAX_NAME or not all(c.isalnum() or c in "-_" for c in name):
        raise SpecError(path, "name", f"must be 1 to {MAX_NAME} letters, digits, - or _ (it names the report folder), got {_short(repr(name))}")
    seed = _seed(raw, "seed", path, "")
    data = _data(raw, path)
    priors = _priors(raw, path)
    kind, candidates, sigma, prior_cov = _model(raw, path, priors)
    eb, mc = _fit(raw, path, len(candidates))
    grid, include_noise = _predict(raw, path)
    checks = _checks(raw, path, kind)
    report = _get(raw, "report", path, "", dict, {})
    _known(report, {"prior_samples", "title"}, path, "report.")
    report = {"prior_samples": _whole(report, "prior_samples", path, "report.", 5, 0, MAX_PRIOR_SAMPLES, " (sample functions per panel)"),
              "title": _get(report, "title", path, "report.", str, name)}
    return Spec(
        path=path, name=name, description=_get(raw, "description", path, "", str, ""), seed=seed, data=data,
        kind=kind, candidates=candidates, priors=priors, sigma=sigma, prior_cov=prior_cov,
        empirical_bayes=eb, mcmc=mc, grid=grid, include_noise=include_noise, checks=checks, report=report,
    )
