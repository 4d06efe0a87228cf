"""Input checks shared by every public function: clear ValueErrors that name the argument."""

import numpy as np
from pytensor.graph.basic import Variable

__all__ = [
    "as_inputs", "as_targets", "check_integer", "check_number", "check_prior_cov", "check_seed", "check_sigma", "int_seed",
    "is_symbolic", "offset_ratio", "rng_from", "same_columns",
]


def is_symbolic(value) -> bool:
    """True for a PyTensor variable (a PyMC random variable among them), whose value is not known yet."""
    return isinstance(value, Variable)


def as_inputs(X, name: str = "X") -> np.ndarray:
    """Inputs as a float64 (n, d) array; a 1-D array means d = 1."""
    if is_symbolic(X):
        raise ValueError(f"{name} must be numeric data (a numpy array), not a PyTensor variable")
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array: {err}") from None
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
    if is_symbolic(y):
        raise ValueError(f"{name} must be numeric data (a numpy array), not a PyTensor variable")
    try:
        t = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array: {err}") from None
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
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def check_number(value, name: str, *, positive: bool = False, nonnegative: bool = False):
    """Check a numeric hyperparameter (scalar or array); symbolic values pass unchecked.

    Returns the value unchanged if symbolic, else as a float64 numpy array.
    """
    if is_symbolic(value):
        return value
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, an array or a PyMC random variable, got {value!r}") from None
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and not np.all(a > 0):
        raise ValueError(f"{name} must be positive, got {value!r}")
    if nonnegative and not np.all(a >= 0):
        raise ValueError(f"{name} must be non-negative, got {value!r}")
    return a


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
            raise ValueError(f"{name} must be positive (it is a variance), got {S!r}")
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


def check_sigma(sigma, *, allow_zero: bool):
    """σ, the noise standard deviation: a scalar > 0 (≥ 0 with `allow_zero`), or a random variable."""
    sigma = check_number(sigma, "sigma", nonnegative=allow_zero, positive=not allow_zero)
    if (sigma.ndim if is_symbolic(sigma) else np.ndim(sigma)) != 0:
        raise ValueError("sigma must be a scalar: the standard deviation of the observation noise")
    return sigma


def check_seed(seed, name: str = "seed"):
    """A seed as numpy takes it: None (fresh entropy), a non-negative int, or a `numpy.random.Generator`."""
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{name} must be None, a non-negative integer or a numpy.random.Generator, got {seed!r}")
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
