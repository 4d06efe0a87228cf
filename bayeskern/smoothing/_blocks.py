"""Row blocks of distances and smoothing-kernel weights by BLAS, so that no more than a set number of bytes is held at once."""

import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from bayeskern._validation import as_inputs, as_targets, check_number, same_columns
from bayeskern.smoothing.profiles import SmoothingKernel

__all__ = [
    "BLOCK_BYTES", "EXP_FLOOR", "THREADS", "TINY", "Distances", "SmoothingWarning", "check_bandwidth", "check_data", "check_grid",
    "kernel_block", "map_row_blocks", "row_blocks", "scott_bandwidth", "silverman_bandwidth", "spread",
    "warn_at_grid_edge",
]

#: bytes of one (rows × n) float64 block: small enough to stay in cache between the passes over it
#: (and below the allocator's mmap threshold, so a block costs no fresh pages); at least one row
BLOCK_BYTES = 2**20

#: threads that evaluate row blocks side by side (numpy's ufuncs release the GIL); BLAS is held to one
#: thread meanwhile. 1 turns the pool off.
THREADS = min(2, os.cpu_count() or 1)


class SmoothingWarning(UserWarning):
    """A smoother's tuning parameter was chosen at the edge of its search grid."""


def warn_at_grid_edge(grid: np.ndarray, best: int, what: str, hint: str = "") -> None:
    """SmoothingWarning (pointing at the user's call) when the chosen candidate is the grid's first or last."""
    if len(grid) > 1 and best in (0, len(grid) - 1):
        warnings.warn(
            f"{what} {grid[best]:.4g} is at the {'lower' if best == 0 else 'upper'} end of the candidate grid: "
            f"widen it{hint}", SmoothingWarning, stacklevel=3,
        )


def spread(X: np.ndarray) -> float:
    """σ̂ = √(mean of the per-column sample variances, ddof = 1): the scale of the isotropic bandwidth rules."""
    sigma = np.sqrt(np.mean(np.var(X, axis=0, ddof=1))) if len(X) > 1 else 0.0
    if not sigma > 0:
        raise ValueError("X has no spread (fewer than 2 distinct rows), so no bandwidth rule applies: give bandwidth")
    return float(sigma)


def scott_bandwidth(X: np.ndarray) -> float:
    n, d = X.shape
    return spread(X) * n ** (-1.0 / (d + 4))  # h = σ̂ n^{−1/(d+4)}


def silverman_bandwidth(X: np.ndarray) -> float:
    n, d = X.shape
    return spread(X) * (n * (d + 2) / 4.0) ** (-1.0 / (d + 4))  # h = σ̂ (n(d+2)/4)^{−1/(d+4)}


def check_data(X, y=None, Xnew=None):
    """X (n, d), y (n,) and Xnew (m, d) as float64 arrays; ValueErrors name the argument."""
    X = as_inputs(X, "X")
    out = [X]
    if y is not None:
        out.append(as_targets(y, X.shape[0], "y"))
    if Xnew is not None:
        Xnew = as_inputs(Xnew, "Xnew")
        same_columns(X, Xnew, "X", "Xnew")
        out.append(Xnew)
    return out[0] if len(out) == 1 else tuple(out)


def check_bandwidth(h, name: str = "bandwidth") -> float:
    """A bandwidth h: one finite number > 0."""
    if isinstance(h, bool):
        raise ValueError(f"{name} must be a positive number, got {h!r}")
    a = check_number(h, name)
    if a.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {a.shape}")
    if not a > 0:
        raise ValueError(f"{name} must be positive, got {h!r}")
    return float(a)


def check_grid(grid, name: str = "bandwidth") -> np.ndarray:
    """A 1-D grid of candidate values, each finite and > 0."""
    a = check_number(grid, name)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a number or a 1-D grid of candidates, got shape {a.shape}")
    if not np.all(a > 0):
        raise ValueError(f"{name} candidates must be positive, got {grid!r}")
    return a


def row_blocks(m: int, n: int) -> Iterator[slice]:
    """Slices of the m rows such that a block of (rows × n) float64 fits in BLOCK_BYTES."""
    rows = max(1, BLOCK_BYTES // (8 * n))
    for start in range(0, m, rows):
        yield slice(start, min(start + rows, m))


def map_row_blocks(fn: Callable[[slice], object], m: int, n: int) -> list:
    """[fn(rows) for each row block of an (m × n) evaluation], in order; on `THREADS` threads when large.

    Each thread holds one block at a time, so memory stays at THREADS·BLOCK_BYTES plus the outputs.
    """
    blocks = list(row_blocks(m, n))
    if THREADS <= 1 or len(blocks) < 2 * THREADS:
        return [fn(rows) for rows in blocks]
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, blocks))


class Distances:
    """‖aᵢ − xⱼ‖² from the expansion ‖a‖² + ‖x‖² − 2aᵀx, one BLAS product per block, clipped at 0.

    The data are centred first (at the mean of X), which keeps the cancellation in the expansion at
    the scale of the spread of the data rather than their distance from the origin.
    """

    def __init__(self, X: np.ndarray):
        self.center = X.mean(axis=0)
        Xc = X - self.center
        # B = [−2X, 1, ‖x‖²], so that [a, ‖a‖², 1] Bᵀ = ‖a‖² + ‖x‖² − 2aᵀx
        self._B = np.hstack([-2.0 * Xc, np.ones((len(X), 1)), np.einsum("ij,ij->i", Xc, Xc)[:, None]])

    def augment(self, A: np.ndarray) -> np.ndarray:
        """[a, ‖a‖², 1] for the rows a of A, centred like X."""
        Ac = A - self.center
        return np.hstack([Ac, np.einsum("ij,ij->i", Ac, Ac)[:, None], np.ones((len(A), 1))])

    def scaled(self, c: float) -> np.ndarray:
        """c·Bᵀ, so that `augment(A) @ scaled(c)` is c‖a − x‖² in one BLAS product (not clipped)."""
        return np.ascontiguousarray((c * self._B).T)


#: a row whose Gaussian weights sum below this is recomputed relative to its nearest point (no underflow)
TINY = 1e-280

#: Gaussian exponents below this are raised to it (exp(EXP_FLOOR) ≈ 1e−304; n such terms stay below TINY)
EXP_FLOOR = -700.0


def kernel_block(A_aug: np.ndarray, Bs: np.ndarray, kern: SmoothingKernel, diag_cols=None, shift: bool = False) -> np.ndarray:
    """W = [k(‖aᵢ − xⱼ‖²/h²)] for augmented rows A_aug and Bs = `Distances.scaled(c)`, c = −1/2h² (Gaussian) or 1/h².

    Gaussian: one product gives −‖a − x‖²/2h², floored at EXP_FLOOR, then exp (K(u) = exp(−‖u‖²/2));
    `shift` subtracts each row's largest exponent first (multiplying the row by a common factor: the
    largest weight becomes 1).
    Compact kernels: the product gives ‖u‖², clipped at 0, then the profile. `diag_cols`: for
    leave-one-out, the column of each row's own point, whose weight is set to 0.
    """
    W = A_aug @ Bs
    own = (np.arange(len(W)), diag_cols) if diag_cols is not None else None
    if kern.name == "gaussian":
        if shift:
            if own is not None:
                W[own] = -np.inf
            W -= W.max(axis=1, keepdims=True)
        # exp(−700) ≈ 1e−304 stands in for anything smaller: libm's exp is several times slower on
        # arguments that underflow, and a row whose weights are all this small is recomputed shifted
        np.maximum(W, EXP_FLOOR, out=W)
        if own is not None:
            W[own] = -np.inf  # wᵢᵢ = exp(−∞) = 0: leave xᵢ out
        return np.exp(W, out=W)  # K(u) = exp(−‖u‖²/2)
    np.maximum(W, 0.0, out=W)  # ‖u‖² ≥ 0 (round-off)
    if own is not None:
        W[own] = np.inf  # K(∞) = 0: leave xᵢ out
    return kern.profile(W)
