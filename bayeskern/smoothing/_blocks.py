"""Row blocks of smoothing-kernel weights in scaled coordinates (no overflow, no cancellation), no more than a set number of bytes at once."""

import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from bayeskern._linalg import EPS, TINY
from bayeskern._validation import PACKAGE_DIR, as_inputs, as_targets, check_number, same_columns
from bayeskern.smoothing.profiles import SmoothingKernel

__all__ = [
    "BLOCK_BYTES", "COORD_MAX", "EXP_FLOOR", "FAST_TOL", "THREADS", "WEIGHT_SUM_FLOOR", "Bandwidth", "Distances", "Query", "SmoothingWarning",
    "check_bandwidth", "check_data", "check_grid", "map_row_blocks", "power_of_two", "reject_complex", "row_blocks",
    "scott_bandwidth", "silverman_bandwidth", "spread", "warn_at_grid_edge", "weight_block",
]

#: bytes of one (rows × n) float64 block: small enough to stay in cache between the passes over it
#: (and below the allocator's mmap threshold, so a block costs no fresh pages); at least one row
BLOCK_BYTES = 2**20

#: threads that evaluate row blocks side by side (numpy's ufuncs release the GIL); BLAS is held to one
#: thread meanwhile. 1 turns the pool off.
THREADS = min(2, os.cpu_count() or 1)

SQRT_HALF = float(np.sqrt(0.5))

#: spreads up to this many ε·max|X| are round-off (a constant column's computed spread is ~ε|x|/10)
SPREAD_ROUNDOFF = 8.0

#: a row whose Gaussian weights sum below this is recomputed relative to its nearest point (no underflow)
WEIGHT_SUM_FLOOR = 1e-280

#: Gaussian exponents below this are raised to it (exp(EXP_FLOOR) ≈ 1e−304; n such terms stay below WEIGHT_SUM_FLOOR)
EXP_FLOOR = -700.0

#: the fast expansion ‖a‖² + ‖x‖² − 2aᵀx serves a row only while its round-off bound on the exponent,
#: (d + 4)·ε·|coefficient|·(‖ã‖ + maxⱼ‖x̃ⱼ‖)², stays below this; other rows use explicit differences
FAST_TOL = 1e-10


class SmoothingWarning(UserWarning):
    """A smoother's tuning parameter was chosen at the edge of its search grid."""


#: a score whose two candidates at the chosen end of a grid differ by at most this fraction of the score's range over the
#: grid has reached its limit there: a wider grid would not choose differently (Nadaraya–Watson's leave-one-out error on
#: an evenly spaced design as h → 0, where the fit tends to averaging each point's nearest neighbours). Relative to the
#: range, not to the score: a log-likelihood's value moves with the units of X, its differences do not
FLAT_AT_EDGE = 1e-6


def warn_at_grid_edge(grid: np.ndarray, best: int, what: str, lower_hint: str = "", scores=None) -> None:
    """SmoothingWarning (pointing at the user's call) when the chosen candidate is the grid's smallest or largest value
    (in whatever order the grid was given); `lower_hint` is added to the advice at the lower end.

    Not when every candidate scores the same (`scores`; e.g. a constant y): then no candidate is better. Where the
    score is flat at that end (`FLAT_AT_EDGE`, against the next candidate by value) the warning says that the data do
    not pin the choice down, rather than asking for a wider grid.
    """
    if scores is not None and np.all(scores == scores[0]):
        return
    values = np.unique(grid)  # the distinct candidates, ascending
    if len(values) < 2 or grid[best] not in (values[0], values[-1]):
        return
    lower = grid[best] == values[0]
    end, next_value = ("lower", values[1]) if lower else ("upper", values[-2])
    neighbour = int(np.flatnonzero(grid == next_value)[0])  # the next distinct candidate by value
    change = np.inf if scores is None else _change_in_range(scores, best, neighbour)
    advice = (f"the score no longer changes there (by {change:.1g} of its range over the grid to the next candidate): it "
              "has reached its limit, so the data do not pin this choice down; give a value instead"
              if change <= FLAT_AT_EDGE else f"widen it{lower_hint if lower else ''}")
    warnings.warn(f"{what} {grid[best]:.4g} is at the {end} end of the candidate grid: {advice}", SmoothingWarning, skip_file_prefixes=(PACKAGE_DIR,))


def _change_in_range(scores, best: int, neighbour: int) -> float:
    """|score[neighbour] − score[best]| as a fraction of the finite scores' range (inf where either is not finite)."""
    finite = np.asarray(scores)[np.isfinite(scores)]
    if not (np.isfinite(scores[best]) and np.isfinite(scores[neighbour])) or finite.max() == finite.min():
        return np.inf
    return float(abs(scores[neighbour] - scores[best]) / (finite.max() - finite.min()))


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


#: the largest magnitude of an entry of X or Xnew: any difference of two entries is then finite
COORD_MAX = 2.0**1022


def _check_magnitude(A: np.ndarray, name: str) -> None:
    big = np.abs(A) > COORD_MAX
    if big.any():
        raise ValueError(f"{name} has entries beyond ±{COORD_MAX:.3g} (e.g. {A[big][0]:.4g}): the smoothers take "
                         "differences of coordinates, which must stay finite")


class Distances:
    """The data in scaled coordinates x̃ = (x − c)/s, c the midrange of X and s = 2ᵏ > max|x − c|, so |x̃| < 1.

    Squared distances come from the expansion ‖ã‖² + ‖x̃‖² − 2ãᵀx̃, one BLAS product per block (`_B`);
    rows where that expansion could overflow or cancel are recomputed from explicit differences of the
    raw coordinates (`weight_block`). Scaling by a power of two is exact, and centring keeps the
    cancellation at the scale of the spread of the data rather than their distance from the origin.
    """

    def __init__(self, X: np.ndarray):
        _check_magnitude(X, "X")
        self.X = X
        self.center = X.min(axis=0) / 2 + X.max(axis=0) / 2  # the midrange
        self.Xc = X - self.center  # |x − c| ≤ (max − min)/2: finite
        self.log2_unit = int(power_of_two(np.max(np.abs(self.Xc))))  # s = 2ᵏ
        self.Xs = np.ldexp(self.Xc, -self.log2_unit)  # x̃ = (x − c)/s, exact
        self.sq = np.einsum("ij,ij->i", self.Xs, self.Xs)  # ‖x̃‖² < d
        self.radius = float(np.sqrt(np.max(self.sq)))
        # B = [−2x̃, 1, ‖x̃‖²], so that [ã, ‖ã‖², 1] Bᵀ = ‖ã‖² + ‖x̃‖² − 2ãᵀx̃
        self._B = np.hstack([-2.0 * self.Xs, np.ones((len(X), 1)), self.sq[:, None]])

    def query(self, A: np.ndarray, name: str = "Xnew") -> "Query":
        """The rows a of A, raw, centred (a − c) and scaled (ã, ‖ã‖², flagged where they overflow)."""
        _check_magnitude(A, name)
        return self._query(A, A - self.center)

    def data_query(self) -> "Query":
        """The data's own rows as a query (for leave-one-out), from x − c as stored (no second rounding)."""
        return self._query(self.X, self.Xc)

    def _query(self, A: np.ndarray, Ac: np.ndarray) -> "Query":
        with np.errstate(over="ignore", invalid="ignore"):
            As = np.ldexp(Ac, -self.log2_unit)  # ã = (a − c)/s: inf where the scaled offset overflows
            norm2 = np.einsum("ij,ij->i", As, As)  # ‖ã‖², inf where it overflows
        finite = np.isfinite(norm2)
        if not finite.all():
            As, norm2 = np.where(finite[:, None], As, 0.0), np.where(finite, norm2, 0.0)
        aug = np.hstack([As, norm2[:, None], np.ones((len(Ac), 1))])  # [ã, ‖ã‖², 1]
        return Query(A, Ac, aug, np.where(finite, np.sqrt(norm2), np.inf))


class Query:
    """Rows to evaluate at: `A` raw (m, d); `Ac` = a − c; `aug` = [ã, ‖ã‖², 1] (zeros where ‖ã‖² overflows); `norm` = ‖ã‖ (inf there)."""

    def __init__(self, A: np.ndarray, Ac: np.ndarray, aug: np.ndarray, norm: np.ndarray):
        self.A, self.Ac, self.aug, self.norm = A, Ac, aug, norm

    def __len__(self) -> int:
        return len(self.A)


class Bandwidth:
    """A bandwidth h for one `Distances`: the fast path's scaled Bᵀ and which rows it may serve.

    `tau` = ½(s/h)², formed from h = m·2ᵉ (m ∈ [½, 1)) as 2^{2(k−e)}/2m², so it over- or underflows to inf
    or 0 but never raises: the Gaussian exponent is −τ‖ã − x̃‖², a compact kernel's argument ‖u‖² =
    2τ‖ã − x̃‖². `Bs`: that coefficient times Bᵀ, or None when the fast path is off (τ not a normal
    number — τ‖ã‖² may matter where τ underflowed — or the triangular kernel, whose 1 − √s turns an
    absolute error δ in s = ‖u‖² into √δ).
    """

    def __init__(self, dist: Distances, h: float, kern: SmoothingKernel):
        self.h, self.kern, self.gaussian = h, kern, kern.name == "gaussian"
        mant, exp = np.frexp(h)
        with np.errstate(over="ignore", under="ignore"):
            self.tau = float(np.ldexp(0.5 / (mant * mant), 2 * (dist.log2_unit - int(exp))))  # τ = ½(s/h)²
        coef = -self.tau if self.gaussian else 2 * self.tau
        fast = 1e-300 < self.tau < np.inf and kern.name != "triangular"
        self.Bs = np.ascontiguousarray((coef * dist._B).T) if fast else None
        # the fast path's round-off in the exponent, (d + 4)ε|coef|(‖ã‖ + max‖x̃‖)², must stay ≤ FAST_TOL:
        # as a bound on ‖ã‖ + max‖x̃‖ (which also keeps every term of the product far from overflow)
        self.fast_reach = float(np.sqrt(FAST_TOL / ((dist.Xs.shape[1] + 4) * EPS * abs(coef)))) if fast else 0.0
        self.radius = dist.radius

    def fast(self, norm: np.ndarray) -> np.ndarray:
        """Rows (by ‖ã‖) whose expansion is accurate (round-off in the exponent ≤ FAST_TOL) and cannot overflow."""
        if self.Bs is None:
            return np.zeros(len(norm), dtype=bool)
        return np.isfinite(norm) & (norm + self.radius <= self.fast_reach)


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


def _over_h(v: np.ndarray, h: float, factor: float) -> np.ndarray:
    """v·factor/h in place, by one multiplication when factor/h is a normal number (else dividing: h subnormal or huge)."""
    c = factor / h
    if TINY <= c < np.inf:  # the smallest normal float64 ≤ factor/h < ∞
        v *= c
    else:
        v /= h
        v *= factor
    return v


def _scaled_sq(X: np.ndarray, A: np.ndarray, h: float, factor: float = 1.0) -> np.ndarray:
    """Σ_c ((xⱼ − aᵢ)_c·factor/h)² (rows, n) from explicit differences: ∞ where it overflows, never NaN."""
    S = None
    with np.errstate(over="ignore", under="ignore"):
        for c in range(X.shape[1]):
            v = _over_h(np.subtract(X[:, c][None, :], A[:, c][:, None]), h, factor)
            v *= v
            S = v if S is None else np.add(S, v, out=S)
    return S


def _norm(v: np.ndarray) -> np.ndarray:
    """‖v‖ of the rows of v (m, d), scaled by the largest coordinate: no overflow, no underflow."""
    M = np.max(np.abs(v), axis=1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = M * np.sqrt(np.sum((v / M[:, None]) ** 2, axis=1))  # ‖v‖ = M √(Σ (v_c/M)²)
    return np.where(M > 0, out, 0.0)


def _half_sq_differences(X: np.ndarray, A: np.ndarray, Xr: np.ndarray, h: float) -> np.ndarray:
    """Δᵢⱼ = (‖xⱼ − aᵢ‖² − ‖xᵣ − aᵢ‖²)/2h² as Σ_c ((xⱼ − xᵣ)_c/√2h)·((xⱼ − a)_c/2 + (xᵣ − a)_c/2)·√2/h.

    No ‖a‖² to cancel: exact to a few ε relative even where both distances are 10¹⁶ times their
    difference. A factor can overflow only for a point whose weight is 0; a coordinate's share that is
    ∞·0 is 0 (one factor is exactly 0), and ∞ − ∞ across coordinates is left NaN for the caller.
    """
    Delta = None
    with np.errstate(over="ignore", invalid="ignore"):
        for c in range(A.shape[1]):
            x, r, a = X[:, c][None, :], Xr[:, c][:, None], A[:, c][:, None]
            term = _over_h(np.subtract(x, r), h, SQRT_HALF)
            pair = np.subtract(x, a)
            pair *= 0.5
            pair += (r - a) * 0.5  # halves: the sum cannot overflow
            term *= _over_h(pair, h, 2 * SQRT_HALF)
            if not np.isfinite(term).all():
                term[np.isnan(term)] = 0.0
            Delta = term if Delta is None else np.add(Delta, term, out=Delta)
    return Delta


def _nearest_far(dist: Distances, q: Query, rows: np.ndarray, bw: "Bandwidth", ref: np.ndarray, Delta: np.ndarray, own):
    """Settle the nearest point of rows whose Δ overflowed (−∞: a point nearer than r by ~1e308·h²; NaN: ∞ − ∞).

    Far from the data |xⱼ − a| cannot tell points apart, so candidates are ranked by the projection form
    G = ‖xⱼ − c‖² − 2(a − c)ᵀ(xⱼ − c) (= ‖xⱼ − a‖² − ‖a − c‖², in the row's unit): a −∞ point is nearer
    than r for sure, a NaN one if G says so; r moves to the best candidate until none is left
    (each move is to a strictly nearer point). Remaining NaNs are points farther than r: Δ = ∞.
    """
    k = 1 + np.maximum(dist.log2_unit, power_of_two(np.max(np.abs(q.Ac[rows]), axis=1)))
    rho = np.ldexp(1.0, dist.log2_unit - k)  # s/σ for the unit σ = 2ᵏ > |a − c|, |x − c|
    G = np.hstack([np.ldexp(q.Ac[rows], -k[:, None]), np.zeros((len(rows), 1)), rho[:, None]]) @ dist._B.T
    if own is not None:
        G[own] = np.inf
    at = np.arange(len(rows))
    for _ in range(len(dist.X)):
        cand = np.isneginf(Delta) | (np.isnan(Delta) & (G < G[at, ref][:, None]))
        move = np.flatnonzero(cand.any(axis=1))
        if not move.size:
            break
        ref[move] = np.argmin(np.where(cand[move], G[move], np.inf), axis=1)
        Delta[move] = _half_sq_differences(dist.X, q.A[rows[move]], dist.X[ref[move]], bw.h)
        if own is not None:
            Delta[own] = np.inf
    Delta[np.isnan(Delta)] = np.inf
    return Delta


def _gaussian_exact(dist: Distances, q: Query, rows: np.ndarray, bw: "Bandwidth", own):
    """(W, L) with exp(−‖aᵢ − xⱼ‖²/2h²) = Wᵢⱼ·exp(Lᵢ), maxⱼ Wᵢⱼ = 1, from explicit differences; exact for any finite h, a.

    The exponents eᵢⱼ = −‖aᵢ − xⱼ‖²/2h² can all be huge far from the data, where what matters is their
    differences: with r a nearest point, eᵢᵣ − eᵢⱼ = Δᵢⱼ (`_half_sq_differences`, no cancellation). The
    largest weight is scaled to 1: Lᵢ = −½(‖x* − a‖/h)², x* = argminⱼ Δᵢⱼ (−∞ when it overflows).
    `own`: wᵢᵢ = 0 (leave-one-out).
    """
    A = q.A[rows]
    with np.errstate(over="ignore", invalid="ignore"):
        D = np.abs(dist.X[:, 0][None, :] - A) if A.shape[1] == 1 else _scaled_sq(dist.X, A, 1.0)  # ∝ ‖xⱼ − a‖ (∞ if huge)
    if own is not None:
        D[own] = np.inf
    ref = np.argmin(D, axis=1)  # a nearest point r: round-off and ties are settled by Δ below
    del D
    Delta = _half_sq_differences(dist.X, A, dist.X[ref], bw.h)
    if own is not None:
        Delta[own] = np.inf
    low = Delta.min(axis=1)
    far = np.flatnonzero(~(low > -np.inf))  # −∞ or NaN: a factor overflowed
    if far.size:
        own_far = None if own is None else (np.arange(far.size), own[1][far])
        Delta[far] = _nearest_far(dist, q, rows[far], bw, ref[far], Delta[far], own_far)
    nearest = np.argmin(Delta, axis=1)
    Delta -= Delta[np.arange(len(A)), nearest][:, None]  # ≥ 0, exactly 0 at x*
    if own is not None:
        Delta[own] = np.inf  # wᵢᵢ = exp(−∞) = 0: leave xᵢ out
    with np.errstate(over="ignore"):
        L = -0.5 * (_norm(dist.X[nearest] - A) / bw.h) ** 2  # −½(‖x* − a‖/h)²
    np.negative(Delta, out=Delta)
    return np.exp(Delta, out=Delta), L


def _compact_exact(dist: Distances, q: Query, rows: np.ndarray, bw: "Bandwidth", own):
    """(W, 0): compact-kernel weights k(‖u‖²), ‖u‖² = Σ_c ((xⱼ − a)_c/h)² from explicit differences (∞ where it overflows)."""
    U = _scaled_sq(dist.X, q.A[rows], bw.h)
    if own is not None:
        U[own] = np.inf  # K(∞) = 0: leave xᵢ out
    return bw.kern.profile(U), np.zeros(len(U))


def weight_block(dist: Distances, q: Query, rows: slice, bw: Bandwidth, V=None, own: bool = False):
    """(W V, L) for the query rows `rows`: Wᵢⱼ = k(‖aᵢ − xⱼ‖²/h²)·exp(−Lᵢ), L = 0 except on recomputed Gaussian rows.

    Rows the fast expansion serves (`Bandwidth.fast`, and for the Gaussian a weight sum ≥ WEIGHT_SUM_FLOOR) come
    from one BLAS product; the others from explicit differences relative to the nearest point, with
    the row's largest Gaussian weight scaled to 1. `V`: (n, k) whose last column is ones (W V then holds
    Σⱼ wᵢⱼ last); None returns W itself. `own`: the rows are the data's own (leave-one-out: wᵢᵢ = 0).
    """
    idx = np.arange(rows.start, rows.stop)
    n = len(dist.Xs)
    out = np.empty((len(idx), n if V is None else V.shape[1]))
    L = np.zeros(len(idx))
    fast = bw.fast(q.norm[rows])
    redo = ~fast
    if fast.any():
        sub = np.flatnonzero(fast)
        own_f = (np.arange(len(sub)), idx[sub]) if own else None
        W = _fast_weights(q.aug[idx[sub]], bw, own_f)
        R = W if V is None else W @ V
        out[sub] = R
        if bw.gaussian:
            total = R.sum(axis=1) if V is None else R[:, -1]
            redo[sub] = ~(total >= WEIGHT_SUM_FLOOR)  # all weights underflowed: recompute relative to the nearest point
    if redo.any():
        sub = np.flatnonzero(redo)
        own_e = (np.arange(len(sub)), idx[sub]) if own else None
        W, L[sub] = (_gaussian_exact if bw.gaussian else _compact_exact)(dist, q, idx[sub], bw, own_e)
        out[sub] = W if V is None else W @ V
    return out, L
