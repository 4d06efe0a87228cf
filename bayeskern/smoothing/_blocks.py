"""Row blocks of smoothing-kernel weights in scaled coordinates (no overflow, no cancellation), no more than a set number of bytes at once."""

import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from bayeskern._validation import as_inputs, as_targets, check_number, same_columns
from bayeskern.smoothing.profiles import SmoothingKernel

__all__ = [
    "BLOCK_BYTES", "EXP_FLOOR", "FAST_TOL", "THREADS", "TINY", "Bandwidth", "Distances", "Query", "SmoothingWarning",
    "check_bandwidth", "check_data", "check_grid", "map_row_blocks", "power_of_two", "reject_complex", "row_blocks",
    "scott_bandwidth", "silverman_bandwidth", "spread", "warn_at_grid_edge", "weight_block",
]

#: bytes of one (rows × n) float64 block: small enough to stay in cache between the passes over it
#: (and below the allocator's mmap threshold, so a block costs no fresh pages); at least one row
BLOCK_BYTES = 2**20

#: threads that evaluate row blocks side by side (numpy's ufuncs release the GIL); BLAS is held to one
#: thread meanwhile. 1 turns the pool off.
THREADS = min(2, os.cpu_count() or 1)

EPS = float(np.finfo(np.float64).eps)

#: spreads up to this many ε·max|X| are round-off (a constant column's computed spread is ~ε|x|/10)
SPREAD_ROUNDOFF = 8.0

#: a row whose Gaussian weights sum below this is recomputed relative to its nearest point (no underflow)
TINY = 1e-280

#: Gaussian exponents below this are raised to it (exp(EXP_FLOOR) ≈ 1e−304; n such terms stay below TINY)
EXP_FLOOR = -700.0

#: the fast expansion ‖a‖² + ‖x‖² − 2aᵀx serves a row only while its round-off bound on the exponent,
#: (d + 4)·ε·|coefficient|·(‖ã‖ + maxⱼ‖x̃ⱼ‖)², stays below this; other rows use explicit differences
FAST_TOL = 1e-10


class SmoothingWarning(UserWarning):
    """A smoother's tuning parameter was chosen at the edge of its search grid."""


def warn_at_grid_edge(grid: np.ndarray, best: int, what: str, hint: str = "") -> None:
    """SmoothingWarning (pointing at the user's call) when the chosen candidate is the grid's first or last."""
    if len(grid) > 1 and best in (0, len(grid) - 1):
        warnings.warn(
            f"{what} {grid[best]:.4g} is at the {'lower' if best == 0 else 'upper'} end of the candidate grid: "
            f"widen it{hint}", SmoothingWarning, stacklevel=3,
        )


def power_of_two(v):
    """The exponent k of the smallest power of two 2ᵏ > v ≥ 0 (k = 0 for v = 0), elementwise: v/2ᵏ is exact and < 1."""
    return np.frexp(v)[1].astype(np.int64)  # v = m·2ᵏ, m ∈ [½, 1)


def spread(X: np.ndarray) -> float:
    """σ̂ = √(mean of the per-column sample variances, ddof = 1): the scale of the isotropic bandwidth rules.

    Computed on X centred and scaled by a power of two (no overflow for any finite X). A σ̂ at round-off
    level, σ̂ ≤ 8ε·max|X| (a constant column's computed spread is ~ε|x|/10), counts as no spread.
    """
    Xc = X - (X.min(axis=0) / 2 + X.max(axis=0) / 2)  # centred at the midrange: never overflows
    k = int(power_of_two(np.max(np.abs(Xc))))
    sigma = float(np.ldexp(np.sqrt(np.mean(np.var(np.ldexp(Xc, -k), axis=0, ddof=1))), k)) if len(X) > 1 else 0.0
    floor = SPREAD_ROUNDOFF * EPS * float(np.max(np.abs(X)))
    if not sigma > floor:
        raise ValueError(
            f"X has no spread (fewer than 2 distinct rows, or a spread σ̂ = {sigma:.3g} at round-off level, ≤ {floor:.3g} "
            "= 8ε·max|X|), so no bandwidth rule applies: give bandwidth"
        )
    return sigma


def scott_bandwidth(X: np.ndarray) -> float:
    n, d = X.shape
    return spread(X) * n ** (-1.0 / (d + 4))  # h = σ̂ n^{−1/(d+4)}


def silverman_bandwidth(X: np.ndarray) -> float:
    n, d = X.shape
    return spread(X) * (n * (d + 2) / 4.0) ** (-1.0 / (d + 4))  # h = σ̂ (n(d+2)/4)^{−1/(d+4)}


def reject_complex(value, name: str) -> None:
    """A ValueError naming `name` for complex input (numpy would drop the imaginary part with a warning)."""
    try:
        is_complex = np.iscomplexobj(value)
    except (TypeError, ValueError):
        return  # not array-like: the numeric conversion that follows names the argument
    if is_complex:
        raise ValueError(f"{name} must be real, got complex values")


def check_data(X, y=None, Xnew=None):
    """X (n, d), y (n,) and Xnew (m, d) as real float64 arrays; ValueErrors name the argument."""
    reject_complex(X, "X")
    X = as_inputs(X, "X")
    out = [X]
    if y is not None:
        reject_complex(y, "y")
        out.append(as_targets(y, X.shape[0], "y"))
    if Xnew is not None:
        reject_complex(Xnew, "Xnew")
        Xnew = as_inputs(Xnew, "Xnew")
        same_columns(X, Xnew, "X", "Xnew")
        out.append(Xnew)
    return out[0] if len(out) == 1 else tuple(out)


def check_bandwidth(h, name: str = "bandwidth") -> float:
    """A bandwidth h: one finite real number > 0 (any such h: the code works with h = m·2ᵉ, never with h² itself)."""
    if isinstance(h, bool):
        raise ValueError(f"{name} must be a positive number, got {h!r}")
    reject_complex(h, name)
    a = check_number(h, name)
    if a.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {a.shape}")
    if not a > 0:
        raise ValueError(f"{name} must be positive, got {h!r}")
    return float(a)


def check_grid(grid, name: str = "bandwidth") -> np.ndarray:
    """A 1-D grid of candidate values, each finite, real and > 0."""
    reject_complex(grid, name)
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
    """The data in scaled coordinates x̃ = (x − c)/s, c the midrange of X and s = 2ᵏ > max|x − c|, so |x̃| < 1.

    Squared distances come from the expansion ‖ã‖² + ‖x̃‖² − 2ãᵀx̃, one BLAS product per block (`_B`);
    rows where that expansion could overflow or cancel are recomputed from explicit differences
    (`weight_block`). Scaling by a power of two is exact, and centring keeps the cancellation at the
    scale of the spread of the data rather than their distance from the origin.
    """

    def __init__(self, X: np.ndarray):
        self.center = X.min(axis=0) / 2 + X.max(axis=0) / 2  # the midrange: never overflows
        self.Xc = X - self.center  # |x − c| ≤ (max − min)/2: finite
        self.log2_unit = int(power_of_two(np.max(np.abs(self.Xc))))  # s = 2ᵏ
        self.Xs = np.ldexp(self.Xc, -self.log2_unit)  # x̃ = (x − c)/s, exact
        self.sq = np.einsum("ij,ij->i", self.Xs, self.Xs)  # ‖x̃‖² < d
        self.radius = float(np.sqrt(np.max(self.sq)))
        # B = [−2x̃, 1, ‖x̃‖²], so that [ã, ‖ã‖², 1] Bᵀ = ‖ã‖² + ‖x̃‖² − 2ãᵀx̃
        self._B = np.hstack([-2.0 * self.Xs, np.ones((len(X), 1)), self.sq[:, None]])

    def query(self, A: np.ndarray, name: str = "Xnew") -> "Query":
        """The rows a of A centred (a − c) and scaled (ã, ‖ã‖², flagged where they overflow)."""
        with np.errstate(over="ignore", invalid="ignore"):
            Ac = A - self.center
        far = ~np.all(np.isfinite(Ac), axis=1)
        if far.any():
            raise ValueError(
                f"{name} row {np.flatnonzero(far)[0]} is too far from X for float64: its offset from the centre of X "
                "overflows (entries of X and Xnew must differ by less than ~1.8e308)"
            )
        return self._query(Ac)

    def data_query(self) -> "Query":
        """The data's own rows as a query (for leave-one-out), from x − c as stored (no second rounding)."""
        return self._query(self.Xc)

    def _query(self, Ac: np.ndarray) -> "Query":
        with np.errstate(over="ignore", invalid="ignore"):
            As = np.ldexp(Ac, -self.log2_unit)  # ã = (a − c)/s: inf where the scaled offset overflows
            norm2 = np.einsum("ij,ij->i", As, As)  # ‖ã‖², inf where it overflows
        finite = np.isfinite(norm2)
        if not finite.all():
            As, norm2 = np.where(finite[:, None], As, 0.0), np.where(finite, norm2, 0.0)
        aug = np.hstack([As, norm2[:, None], np.ones((len(Ac), 1))])  # [ã, ‖ã‖², 1]
        return Query(Ac, aug, np.where(finite, np.sqrt(norm2), np.inf))


class Query:
    """Rows to evaluate at: `Ac` = a − c (m, d); `aug` = [ã, ‖ã‖², 1] (zeros where ‖ã‖² overflows); `norm` = ‖ã‖ (inf there)."""

    def __init__(self, Ac: np.ndarray, aug: np.ndarray, norm: np.ndarray):
        self.Ac, self.aug, self.norm = Ac, aug, norm

    def __len__(self) -> int:
        return len(self.Ac)


class Bandwidth:
    """A bandwidth h for one `Distances`, held as h = m·2ᵉ (m ∈ [½, 1)) so that (2ʲ/h)² is formed without overflow.

    `tau` = ½(s/h)²: the Gaussian exponent is −τ‖ã − x̃‖²; a compact kernel's argument is ‖u‖² = 2τ‖ã − x̃‖².
    `Bs`: the fast path's scaled Bᵀ (coefficient −τ or 2τ), None when τ is not finite.
    """

    def __init__(self, dist: Distances, h: float, kern: SmoothingKernel):
        self.h, self.kern, self.gaussian = h, kern, kern.name == "gaussian"
        mant, self.exp = np.frexp(h)
        self.inv_m2 = 1.0 / (mant * mant)  # 1/m² ∈ (1, 4]
        self.log2_unit = dist.log2_unit
        self.tau = self.ratio_sq(dist.log2_unit) / 2  # τ = ½(s/h)², inf or 0 where it over- or underflows
        coef = -self.tau if self.gaussian else 2 * self.tau
        d = dist.Xs.shape[1]
        with np.errstate(divide="ignore", over="ignore"):
            # the fast path's round-off bound (d + 4)ε|coef|(‖ã‖ + max‖x̃‖)² ≤ FAST_TOL, as a bound on ‖ã‖ + max‖x̃‖
            self.fast_reach = float(np.sqrt(FAST_TOL / ((d + 4) * EPS * abs(coef)))) if np.isfinite(coef) else 0.0
        self.radius = dist.radius
        self.Bs = np.ascontiguousarray((coef * dist._B).T) if np.isfinite(coef) else None

    def ratio_sq(self, k):
        """(2ᵏ/h)² = 2^{2(k − e)}/m², with overflow to inf and underflow to 0 (never an exception)."""
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(self.inv_m2, 2 * (np.asarray(k) - self.exp))

    def fast(self, norm: np.ndarray) -> np.ndarray:
        """Rows whose expansion is accurate (round-off in the exponent ≤ FAST_TOL) and cannot overflow."""
        return norm + self.radius <= self.fast_reach


def _fast_weights(A_aug: np.ndarray, bw: Bandwidth, own) -> np.ndarray:
    """W = [k(‖aᵢ − xⱼ‖²/h²)] from one product with `bw.Bs`: the exponent −τ‖ã − x̃‖² (Gaussian) or ‖u‖² = 2τ‖ã − x̃‖².

    Gaussian: floored at EXP_FLOOR, then exp (K(u) = exp(−‖u‖²/2)). Compact kernels: clipped at 0, then the
    profile. `own`: for leave-one-out, the (rows, columns) of each row's own point, whose weight is set to 0.
    """
    W = A_aug @ bw.Bs
    if bw.gaussian:
        # exp(−700) ≈ 1e−304 stands in for anything smaller: libm's exp is several times slower on
        # arguments that underflow, and a row whose weights are all this small is recomputed exactly
        np.maximum(W, EXP_FLOOR, out=W)
        if own is not None:
            W[own] = -np.inf  # wᵢᵢ = exp(−∞) = 0: leave xᵢ out
        return np.exp(W, out=W)  # K(u) = exp(−‖u‖²/2)
    np.maximum(W, 0.0, out=W)  # ‖u‖² ≥ 0 (round-off)
    if own is not None:
        W[own] = np.inf  # K(∞) = 0: leave xᵢ out
    return bw.kern.profile(W)


def _differences(dist: Distances, Ac: np.ndarray, own):
    """Per row, in its own unit σᵢ = 2^{kᵢ} ≥ s (so a' = (a − c)/σᵢ has |a'| < 1 and nothing overflows):

    kᵢ, ρᵢ = s/σᵢ, Δᵢⱼ = ‖a' − ρx̃ⱼ‖² − ‖a' − ρx̃ᵣ‖² relative to the nearest point r, and Dᵢ = ‖a' − ρx̃ᵣ‖².
    Δ is written as ρ(x̃ⱼ − x̃ᵣ)ᵀ(ρ(x̃ⱼ + x̃ᵣ) − 2a'), which has no ‖a'‖² to cancel: accurate far from
    the data, where the expansion loses every digit. `own`: Δ = +∞ at each row's own point.
    """
    k = np.maximum(dist.log2_unit, power_of_two(np.max(np.abs(Ac), axis=1)))  # σᵢ = 2^{kᵢ}
    rho = np.ldexp(1.0, dist.log2_unit - k)  # ρᵢ = s/σᵢ ≤ 1
    As = np.ldexp(Ac, -k[:, None])  # a' = (a − c)/σᵢ
    # the nearest point: argminⱼ ‖a' − ρx̃ⱼ‖² = argminⱼ ρ‖x̃ⱼ‖² − 2a'ᵀx̃ⱼ, one product [a', 0, ρ] Bᵀ
    G = np.hstack([As, np.zeros((len(As), 1)), rho[:, None]]) @ dist._B.T
    if own is not None:
        G[own] = np.inf
    Xr = dist.Xs[np.argmin(G, axis=1)]  # x̃ᵣ
    Delta = np.zeros_like(G)
    for c in range(As.shape[1]):  # Δ = ρ Σ_c (x̃ⱼ − x̃ᵣ)_c (ρ(x̃ⱼ + x̃ᵣ) − 2a')_c
        x, r = dist.Xs[:, c][None, :], Xr[:, c][:, None]
        Delta += (x - r) * (rho[:, None] * (x + r) - 2 * As[:, c][:, None])
    Delta *= rho[:, None]
    if own is not None:
        Delta[own] = np.inf
    D = np.sum((As - rho[:, None] * Xr) ** 2, axis=1)  # ‖a' − ρx̃ᵣ‖²
    return k, rho, Delta, D


def _exact_weights(dist: Distances, Ac: np.ndarray, bw: Bandwidth, own):
    """(W, L): the rows' weights from explicit differences, kᵢⱼ = Wᵢⱼ·exp(Lᵢ); correct for every finite h and a.

    Gaussian: eᵢⱼ = −½(σᵢ/h)²(Dᵢ + Δᵢⱼ) = Lᵢ − ½(σᵢ/h)²(Δᵢⱼ − minⱼ Δᵢⱼ), so the largest weight is 1 and
    Lᵢ = −½(σᵢ/h)² minⱼ ‖a' − ρx̃ⱼ‖² (−∞ when it overflows). Compact: ‖u‖² = (σᵢ/h)²‖a' − ρx̃ⱼ‖², L = 0.
    Where (σᵢ/h)² overflows, a distance of exactly 0 still gives ‖u‖² = 0 (∞·0 is read as 0).
    """
    k, _, Delta, D = _differences(dist, Ac, own)
    scale = bw.ratio_sq(k)[:, None]  # (σᵢ/h)²: inf or 0 beyond the float range
    with np.errstate(invalid="ignore", over="ignore"):
        if bw.gaussian:
            low = Delta.min(axis=1, keepdims=True)
            Delta -= low  # Δ − minⱼ Δ ≥ 0, exactly 0 at the nearest point
            Delta *= scale / 2  # ½(σᵢ/h)²(Δ − min Δ)
            Delta[np.isnan(Delta)] = 0.0  # ∞·0: the nearest point(s) when (σᵢ/h)² overflows
            if own is not None:
                Delta[own] = np.inf  # wᵢᵢ = exp(−∞) = 0: leave xᵢ out
            L = -0.5 * scale[:, 0] * np.maximum(D + low[:, 0], 0.0)  # −½(σᵢ/h)² minⱼ ‖a' − ρx̃ⱼ‖²
            L[np.isnan(L)] = 0.0  # ∞·0: the point coincides with its nearest data point
            np.negative(Delta, out=Delta)
            return np.exp(Delta, out=Delta), L
        U = np.maximum(D[:, None] + Delta, 0.0)  # ‖a' − ρx̃ⱼ‖²
        U *= scale  # ‖u‖² = (σᵢ/h)²‖a' − ρx̃ⱼ‖²
        U[np.isnan(U)] = 0.0  # ∞·0: a data point at distance exactly 0
    if own is not None:
        U[own] = np.inf  # K(∞) = 0: leave xᵢ out
    return bw.kern.profile(U), np.zeros(len(U))


def weight_block(dist: Distances, q: Query, rows: slice, bw: Bandwidth, V=None, own: bool = False):
    """(W V, L) for the query rows `rows`: Wᵢⱼ = k(‖aᵢ − xⱼ‖²/h²)·exp(−Lᵢ), L = 0 except on recomputed Gaussian rows.

    Rows the fast expansion serves (`Bandwidth.fast`, and for the Gaussian a weight sum ≥ TINY) come
    from one BLAS product; the others from explicit differences relative to the nearest point, with
    the row's largest Gaussian weight scaled to 1. `V`: (n, k) whose last column is ones (W V then holds
    Σⱼ wᵢⱼ last); None returns W itself. `own`: the rows are the data's own (leave-one-out: wᵢᵢ = 0).
    """
    idx = np.arange(rows.start, rows.stop)
    n = len(dist.Xs)
    out = np.empty((len(idx), n if V is None else V.shape[1]))
    L = np.zeros(len(idx))
    fast = bw.fast(q.norm[rows]) if bw.Bs is not None else np.zeros(len(idx), bool)
    redo = ~fast
    if fast.any():
        sub = np.flatnonzero(fast)
        own_f = (np.arange(len(sub)), idx[sub]) if own else None
        W = _fast_weights(q.aug[idx[sub]], bw, own_f)
        R = W if V is None else W @ V
        out[sub] = R
        if bw.gaussian:
            total = R.sum(axis=1) if V is None else R[:, -1]
            redo[sub] = ~(total >= TINY)  # all weights underflowed: recompute relative to the nearest point
    if redo.any():
        sub = np.flatnonzero(redo)
        own_e = (np.arange(len(sub)), idx[sub]) if own else None
        W, L[sub] = _exact_weights(dist, q.Ac[idx[sub]], bw, own_e)
        out[sub] = W if V is None else W @ V
    return out, L
