"""Input checks shared by every public function: clear ValueErrors that name the argument."""

import dataclasses
import functools
import os
from collections.abc import Callable

import numpy as np
from pytensor.graph.basic import Variable

__all__ = [
    "NonFiniteError", "PACKAGE_DIR", "as_array", "as_inputs", "as_targets", "check_finite_result", "check_flag", "check_integer", "check_kernel", "check_model",
    "check_name", "check_number", "check_prior_cov", "check_probability", "check_seed", "check_sigma", "check_squarable", "check_weight_precision", "int_seed", "is_symbolic",
    "numerical_failure", "owned", "owned_data", "offset_ratio", "rng_from", "same_columns",
]

#: the package's folder: warnings.warn(..., skip_file_prefixes=(PACKAGE_DIR,)) reports at the caller's first line outside it
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: dtype kinds numpy converts to float64 without losing anything but precision: bool, ints, floats
_REAL_KINDS = "biuf"


def is_symbolic(value) -> bool:
    """True for a PyTensor variable (a PyMC random variable among them), whose value is not known yet."""
    return isinstance(value, Variable)


def as_array(value, name: str) -> np.ndarray:
    """`value` as a float64 numpy array, in one pass; anything that is not real numbers gets a ValueError naming `name`.

    Refused: complex values (numpy would drop the imaginary part with only a ComplexWarning), text,
    ragged nesting, objects that are not numbers, and Python ints too large for float64. Values
    beyond float64's range (a longdouble 1e400) become ±inf here: callers check finiteness. An array
    whose memory is not aligned (a view into a byte buffer, as unpickled from a Dask task) is copied:
    PyTensor refuses such arrays.
    """
    try:
        a = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as err:  # ragged lists, objects refusing conversion
        raise ValueError(f"{name} must be a real numeric array: {err}") from None
    if a.dtype.kind == "c" or (a.dtype.kind == "O" and any(isinstance(v, complex | np.complexfloating) for v in a.flat)):
        raise ValueError(f"{name} must be real, got complex values (dtype {a.dtype}): pass .real explicitly if that is meant")
    if a.dtype.kind not in _REAL_KINDS + "O":
        raise ValueError(f"{name} must be a real numeric array, got {type(value).__name__} of dtype {a.dtype}")
    try:
        with np.errstate(over="ignore"):  # a longdouble beyond float64 becomes inf, refused by the finiteness checks
            return np.require(a.astype(np.float64, copy=False), requirements="A")
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be a real numeric array, got {_brief(value)}: {err}") from None


def _brief(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _data_array(value, name: str) -> np.ndarray:
    if is_symbolic(value):
        raise ValueError(f"{name} must be numeric data (a numpy array), not a PyTensor variable")
    return as_array(value, name)


def owned(A: np.ndarray) -> np.ndarray:
    """A read-only copy of the checked array A: what a model, a conditioned solver or a prediction keeps, so that the
    caller writing into their array afterwards changes nothing it computes (scikit-learn's `copy_X_train`)."""
    A = np.array(A, dtype=np.float64)
    A.flags.writeable = False
    return A


def owned_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """X and y checked (`as_inputs`, `as_targets`) and `owned`: the data a model or a conditioned solver keeps."""
    X = owned(as_inputs(X, "X"))
    return X, owned(as_targets(y, X.shape[0], "y"))


def as_inputs(X, name: str = "X") -> np.ndarray:
    """Inputs as a float64 (n, d) array; a 1-D array means d = 1."""
    A = _data_array(X, name)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2:
        raise ValueError(f"{name} must be 1-D (n,) or 2-D (n, d), got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError(f"{name} is empty: it has no rows")
    if A.shape[1] == 0:
        raise ValueError(f"{name} has no columns: shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return A


def as_targets(y, n: int, name: str = "y") -> np.ndarray:
    """Targets as a float64 (n,) array matching n input rows."""
    t = _data_array(y, name)
    if t.ndim == 2 and 1 in t.shape:
        t = t.ravel()
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n,), got shape {t.shape}")
    if t.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if t.shape[0] != n:
        raise ValueError(f"{name} has {t.shape[0]} entries but X has {n} rows")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return t


def offset_ratio(X: np.ndarray) -> float:
    """How far the inputs sit from 0 relative to their spread: maxₖ |x̄ₖ| / sₖ over the columns k.

    x̄ₖ and sₖ are the column's mean and standard deviation; a constant column away from 0 gives ∞,
    inputs centred at 0 give 0. Kernels that are not shift-invariant lose about 2·log₁₀ of it in digits.
    """
    mean, spread = np.mean(X, axis=0), np.std(X, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(mean == 0.0, 0.0, np.abs(mean) / spread)
    return float(np.max(ratio))


def same_columns(A: np.ndarray, B: np.ndarray, name_a: str = "X", name_b: str = "Xnew") -> None:
    """Two input arrays must have the same number d of columns."""
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"{name_b} has {B.shape[1]} column(s) but {name_a} has {A.shape[1]}")


def check_integer(value, name: str, minimum: int) -> int:
    """An integer setting (a degree, a count) that must be at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {_brief(value)}")
    return int(value)


def check_flag(value, name: str) -> bool:
    """A switch that must be True or False (numpy's bool too), never a number or a string standing for one."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {_brief(value)}")
    return bool(value)


def check_number(value, name: str, *, positive: bool = False, nonnegative: bool = False, scalar: bool = False):
    """Check a numeric hyperparameter (scalar or array; one number with `scalar`); symbolic values pass with their rank checked.

    Returns the value unchanged if symbolic, else as a float64 numpy array.
    """
    if is_symbolic(value):
        if scalar and value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got a {value.ndim}-D random variable")
        if positive or nonnegative:
            _refuse_prior_below_zero(value, name, "positive" if positive else "non-negative")
        return value
    if isinstance(value, str):
        raise ValueError(f"{name} must be a number, an array or a PyMC random variable, got the string {value!r}")
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a number, an array or a PyMC random variable, got the truth value {value!r}")
    a = as_array(value, name)
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if scalar and a.ndim != 0:
        raise ValueError(f"{name} must be a scalar (one number), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {_brief(value)}")
    if positive and not np.all(a > 0):
        raise ValueError(f"{name} must be positive, got {_brief(value)}")
    if nonnegative and not np.all(a >= 0):
        raise ValueError(f"{name} must be non-negative, got {_brief(value)}")
    return a


def _refuse_prior_below_zero(value, name: str, sign: str) -> None:
    """A ValueError if `value` is a continuous random variable whose prior puts mass below 0: one PyMC gives no default
    transform (its support is the real line: Normal, StudentT …) or an interval reaching below 0 (Uniform(−1, 1)), however
    the model was told to transform it. A positive parameter with such a prior fits to a negative value (σ enters as σ²,
    so −σ fits as well as σ; a negative scale makes the kernel indefinite). Expressions (pm.math.exp(z)), discrete priors
    and bounds that are themselves random pass."""
    from pymc.distributions.transforms import Interval, _default_transform
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.op import RandomVariable

    if value.owner is None or not isinstance(value.owner.op, RandomVariable) or not value.dtype.startswith("float"):
        return
    transform = _default_transform(value.owner.op, value)
    below = transform is None
    if isinstance(transform, Interval):
        lower = transform.args_fn(*value.owner.inputs)[0]
        below = lower is None or isinstance(lower, Constant) and float(np.min(lower.data)) < 0.0
    if below:
        prior = type(value.owner.op).__name__.removesuffix("RV")
        raise ValueError(f"{name} must be {sign}, but its prior ({value.name}: {prior}) puts mass below 0: give it a prior on "
                         "positive values (HalfNormal, Gamma, LogNormal, Exponential, TruncatedNormal with lower=0 …)")


def check_probability(value, name: str = "prob") -> float:
    """A probability strictly between 0 and 1 (a credible mass)."""
    p = float(check_number(value, name, scalar=True))
    if not 0.0 < p < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {_brief(value)}")
    return p


def check_squarable(value, name: str):
    """A scale s whose square enters the maths (σ² of a noise, a variance): s² must be finite, and > 0 unless s = 0.

    σ = 1e200 squares to inf and σ = 1e-200 to 0 in float64; both get a ValueError naming `name`.
    Symbolic values pass.
    """
    if is_symbolic(value):
        return value
    a = np.asarray(value, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        square = a * a
    if not np.all(np.isfinite(square)):
        raise ValueError(f"{name} = {np.max(np.abs(a)):.3g} is too large: {name}² overflows float64 (|{name}| must be below 1e154)")
    if np.any((square == 0) & (a != 0)):
        raise ValueError(f"{name} = {np.min(np.abs(a[a != 0])):.3g} is too small: {name}² underflows to 0 in float64 (|{name}| must be above 1e-154, or exactly 0 where 0 is allowed)")
    return value


def check_prior_cov(S, M: int | None = None, name: str = "prior_cov"):
    """Σ as a positive scalar (α⁻¹, Σ = α⁻¹I), a positive vector (diagonal Σ) or an SPD (M, M) matrix.

    Symbolic values (PyMC random variables) pass with only their rank checked.
    """
    if is_symbolic(S):
        if S.ndim > 2:
            raise ValueError(f"{name} must be a scalar, a vector or a matrix, got a {S.ndim}-D tensor")
        rows = S.type.shape[0] if S.ndim else None  # static length, when PyTensor knows it
        if M is not None and rows is not None and rows != M:
            raise ValueError(f"{name} has {rows} rows but the feature map gives M={M} features")
        return S
    A = check_number(S, name)
    if A.ndim == 0 or A.ndim == 1:
        if not np.all(A > 0):
            raise ValueError(f"{name} must be positive (it is a variance), got {_brief(S)}")
    elif A.ndim == 2:
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"{name} must be a square matrix, got shape {A.shape}")
        if not np.allclose(A, A.T, rtol=1e-10, atol=1e-14 * np.max(np.abs(A))):
            raise ValueError(f"{name} is not symmetric")
        try:
            np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            raise ValueError(f"{name} is not positive definite") from None
    else:
        raise ValueError(f"{name} must be a scalar, a vector or a matrix, got shape {A.shape}")
    if M is not None and A.ndim > 0 and A.shape[0] != M:
        raise ValueError(f"{name} has {A.shape[0]} rows but the feature map gives M={M} features")
    return A


def check_sigma(sigma, *, allow_zero: bool, name: str = "sigma", numeric: bool = False):
    """σ, the noise standard deviation: a scalar > 0 (≥ 0 with `allow_zero`) with σ² finite, or a random variable
    (not with `numeric`: a model conditioned at fixed hyperparameters needs a number)."""
    if numeric and is_symbolic(sigma):
        raise ValueError(
            f"{name} must be a number here, got the symbolic {getattr(sigma, 'name', None) or 'expression'} (a PyMC random "
            "variable?): conditioning needs fixed hyperparameters; inside a model use bayeskern.gp.marginal_likelihood "
            "(or bayeskern.blr.likelihood) and fit it with bayeskern.fit"
        )
    sigma = check_number(sigma, name, nonnegative=allow_zero, positive=not allow_zero)
    if (sigma.ndim if is_symbolic(sigma) else np.ndim(sigma)) != 0:
        raise ValueError(f"{name} must be a scalar: the standard deviation of the observation noise")
    return check_squarable(sigma, name)


def check_weight_precision(sum_of_squares: float, S: np.ndarray, sigma: float) -> None:
    """ΨᵀΨ/σ² (Ψ = Φ·chol(Σ), the data's precision on the whitened weights) must be representable in float64.

    ‖Φ‖²_F (`sum_of_squares`) · λmax(Σ) / σ² bounds its largest eigenvalue (λmax(Σ) ≤ max Σ for a scalar or diagonal Σ,
    ≤ tr Σ for a matrix); a bound that overflows means a σ too small, or features or a prior_cov too
    large, for the weight-space factorisation B = I + ΨᵀΨ/σ².
    """
    S = np.asarray(S)
    largest = float(np.max(S)) if S.ndim < 2 else float(np.trace(S))
    with np.errstate(over="ignore"):
        bound = float(sum_of_squares) * largest / sigma**2
    if not np.isfinite(bound):
        raise ValueError(
            f"sigma = {sigma:.3g} is too small for these features and prior_cov: ΨᵀΨ/sigma² (Ψ = Φ·chol(prior_cov)) "
            "overflows float64; give a larger sigma, or scale X or prior_cov down"
        )


def check_kernel(kernel, name: str = "kernel"):
    """A bayeskern kernel (an instance of `bayeskern.kernels.Kernel`)."""
    from bayeskern.kernels.base import Kernel  # kernels import this module

    if not isinstance(kernel, Kernel):
        raise ValueError(f"{name} must be a bayeskern.kernels kernel, got {type(kernel).__name__}")
    return kernel


def check_model(model, name: str = "model"):
    """A PyMC model, or the one of the enclosing `with pm.Model():` block when `model` is None; its random variables in
    double precision (a model built under floatX = float32 is refused by name)."""
    import pymc as pm

    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:  # PyMC's "No model on context stack"
            raise ValueError(f"{name} is None and there is no PyMC model on the context stack: pass {name}= or call inside `with model:`") from None
    if not isinstance(model, pm.Model):
        raise ValueError(f"{name} must be a PyMC model (pm.Model), got {type(model).__name__}")
    low = [f"{rv.name} ({rv.dtype})" for rv in model.free_RVs if rv.dtype in ("float16", "float32")]
    if low:
        raise ValueError(f"{name} has random variables of less than double precision: {', '.join(low)}. bayeskern fits in "
                         "float64 (float32 keeps ~7 significant digits, too few for a Gaussian process's Cholesky): build "
                         "the model with PyTensor's floatX = float64, the default (PYTENSOR_FLAGS=floatX=float64)")
    return model


def check_name(value, name: str = "name") -> str:
    """The name of a PyMC variable: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string (the PyMC variable's name), got {_brief(value)}")
    return value


def check_seed(seed, name: str = "seed"):
    """A seed as numpy takes it: None (fresh entropy), a non-negative int, or a `numpy.random.Generator`."""
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{name} must be None, a non-negative integer or a numpy.random.Generator, got {_brief(seed)}")
    return int(seed)


def rng_from(seed, name: str = "seed") -> np.random.Generator:
    """The random generator of a checked seed (a Generator is used as it is, so its stream goes on)."""
    return np.random.default_rng(check_seed(seed, name))


def int_seed(seed, name: str = "seed") -> int:
    """An integer seed in [0, 2³¹) for APIs that take only ints (PyMC, nutpie): a Generator or None draws one."""
    seed = check_seed(seed, name)
    if seed is None or isinstance(seed, np.random.Generator):
        return int(np.random.default_rng(seed).integers(2**31))
    return seed


class NonFiniteError(ValueError):
    """A computation on finite, valid input gave inf or NaN: float64 overflowed (or 0·∞ appeared)."""


def check_finite_result(values, what: str | Callable[[], str]) -> np.ndarray:
    """A computed array that must be finite because its inputs were: else a NonFiniteError saying what overflowed
    (`what`, or `what()` when that is a function: a description built only when it is needed)."""
    if not np.all(np.isfinite(values)):
        what = what() if callable(what) else what
        raise NonFiniteError(f"{what} is not finite: it overflows float64 (or is 0·∞); scale or center the inputs, or change the hyperparameters")
    return values


def _finite_fields(result) -> bool:
    """Whether every float field of a result record, a conditioned model's log p(t) (an attribute of every
    `bayeskern.conditioned.Conditioned`), or a bare array is finite."""
    if dataclasses.is_dataclass(result):
        values = [getattr(result, f.name) for f in dataclasses.fields(result)]
    else:
        values = [getattr(result, "log_marginal_likelihood", result)]
    return all(np.all(np.isfinite(v)) for v in values if isinstance(v, float | np.ndarray) and np.asarray(v).dtype.kind == "f")


def numerical_failure(cause: str):
    """Decorator: `fn` on finite, valid arguments either returns finite numbers or raises a ValueError giving `cause`.

    `cause` names the arguments that can push float64 over the edge and what to do about it. Caught:
    `numpy.linalg.LinAlgError`, SciPy's unnamed "array must not contain infs or NaNs" (an
    intermediate product of finite inputs overflowed), a NonFiniteError from a kernel or feature map
    evaluated inside `fn` (whose message speaks of its own X/Xs), and a result record with inf/NaN in
    a float field — so no raw error and no silent NaN leaves a public function.
    """

    def decorate(fn):
        where = f"{fn.__module__.removeprefix('bayeskern.')}.{fn.__qualname__}"

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            try:
                result = fn(*args, **kwargs)
            except np.linalg.LinAlgError as err:
                raise ValueError(f"{where}: {cause} (LAPACK: {err})") from None
            except NonFiniteError as err:
                raise NonFiniteError(f"{where}: {cause} ({err})") from None
            except ValueError as err:
                if "must not contain infs or NaNs" not in str(err):
                    raise
                raise NonFiniteError(f"{where}: {cause} (an intermediate product overflowed float64)") from None
            if not _finite_fields(result):
                raise NonFiniteError(f"{where}: {cause} (the result overflows float64)")
            return result

        return checked

    return decorate
