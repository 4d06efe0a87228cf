"""log N(t | 0, C) as one PyTensor Op whose gradient is the seeds' ½(ααᵀ − C⁻¹), α = C⁻¹t, compiled by Numba.

The work is one Cholesky factorisation (LAPACK potrf), one solve (potrs) and the inverse from the factor (potri's
result, by `bayeskern._spd_inverse`: about one more factorisation) — about two factorisations in all, against about
seven for differentiating the Cholesky factorisation symbolically — plus a few passes over memory (the copy, the
symmetric gradient; a condition estimate only where C⁻¹ does not already prove C well conditioned). As for every
PyTensor Op, there are two implementations of the one algorithm: Numba code calling LAPACK directly
(`bayeskern._gaussian_logp_numba`), which PyTensor's Numba backend (PyMC's default, and nutpie's) runs without the GIL
and caches on disk, and `perform`, the same LAPACK calls through SciPy, which PyTensor's Python linker runs without
compiling anything (`bayeskern._compile.NUMPY`: small empirical-Bayes fits, where Numba's compilation would cost more
than every evaluation). A test holds the two to the bit.
"""

import functools

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.linalg import lapack

from bayeskern._linalg import EPS, JITTER_STEPS, LOG_2PI, RCOND_PROOF_MARGIN, potrf_succeeded
from bayeskern._reused_arrays import reused_arrays
from bayeskern._spd_inverse import potri

__all__ = ["GaussianLogp", "as_float64", "gaussian_logp"]

_JITTER_STEPS = np.asarray(JITTER_STEPS, dtype=np.float64)


#: the n × n passes of the SciPy implementation read BLOCK_ROWS rows at a time: the lower triangle's rows [s, e) are
#: columns [0, e), so a pass reads about half the matrix, and a block's temporaries stay in cache (n = 2000, inside a
#: fit's evaluation: 12 ms per 1-norm through one n × n |M|, ~4 ms in blocks)
BLOCK_ROWS = 128


def _lower_blocks(n: int):
    """(s, e, strictly_upper): the row blocks [s, e) of an n × n lower triangle, with the mask of the entries above
    the diagonal in the block's last columns [s, e) (which the block's columns [0, e) include)."""
    above = _strictly_upper(min(BLOCK_ROWS, n))
    for s in range(0, n, BLOCK_ROWS):
        e = min(s + BLOCK_ROWS, n)
        yield s, e, above[: e - s, : e - s]


@functools.cache
def _strictly_upper(size: int) -> np.ndarray:
    """The mask of the entries above the diagonal of a size × size block, made once per size (at most BLOCK_ROWS of
    them) and read-only. Made at each call (twice a call of the Op), it cost the Op 22 % of its time at n = 25, 17 % at
    n = 100, 6 % at n = 300 (alternated in one process; BENCHMARKS.md, session 36)."""
    mask = np.triu(np.ones((size, size), dtype=bool), 1)
    mask.flags.writeable = False
    return mask


def _norm1_of_lower(M, shift: float = 0.0) -> float:
    """‖S‖₁ of the symmetric S whose lower triangle is M's, `shift` added on the diagonal (what is above the diagonal
    is not used): its column sums are its row sums."""
    n = M.shape[0]
    columns, rows = np.zeros(n), np.empty(n)
    block = np.empty((min(BLOCK_ROWS, n), n))
    diagonal = np.abs(np.diagonal(M) + shift)
    for s, e, above in _lower_blocks(n):
        magnitude = np.abs(M[s:e, :e], out=block[: e - s, :e])
        magnitude[:, s:e][above] = 0.0
        magnitude[:, s:e][np.diag_indices(e - s)] = diagonal[s:e]
        columns[:e] += magnitude.sum(axis=0)
        rows[s:e] = magnitude.sum(axis=1)
    return float((columns + rows - diagonal).max(initial=0.0))


#: a factorised C has |Cᵢⱼ| ≤ DIAGONAL_BOUND · max Cₖₖ: UᵀU = C + ΔC with |ΔC| ≤ γₙ₊₁|Uᵀ||U| (Higham, Thm 10.3), and
#: UᵀU and |Uᵀ||U| are at most √(MᵢᵢMⱼⱼ), M = UᵀU, so the factor is (1 + γ)/(1 − γ), γ = (n + 1)ε/(1 − (n + 1)ε): below
#: 1.0001 for n up to 4e11. So n · DIAGONAL_BOUND · max Cₖₖ ≥ ‖C‖₁, in O(n) where ‖C‖₁ takes O(n²): n · max Cₖₖ is
#: 1.02–1.19 × ‖C‖₁ for the additive kernel's Grams at n = 200 to 2000 (`bench_additive_kernel.py`'s fits)
DIAGONAL_BOUND = 1.01


def _proven_well_conditioned(C_inv, diagonal_max: float, anorm) -> bool:
    """Whether C⁻¹ (potri's lower triangle, zeros above) proves 1/cond₁(C) = 1/(‖C‖₁‖C⁻¹‖₁) > RCOND_PROOF_MARGIN·n·ε.
    pocon's estimate bounds 1/cond₁ from above (it bounds ‖C⁻¹‖₁ from below), so it would pass the n·ε test too.

    `diagonal_max`: max Cᵢᵢ of the C that potrf factorised; `anorm()`: ‖C‖₁, asked for only where the bounds from
    the diagonals prove nothing. First from n · max (C⁻¹)ᵢᵢ ≥ ‖C⁻¹‖₁ (a positive definite M has |Mᵢⱼ| ≤ √(MᵢᵢMⱼⱼ))
    and n · DIAGONAL_BOUND · max Cᵢᵢ ≥ ‖C‖₁, O(n); then with ‖C‖₁ itself; where that is too loose — ~60× for a smooth
    kernel's Gram with little noise — from ‖C⁻¹‖₁ itself, O(n²). Where any proves it, cond₁(C) < 1/(16·n·ε), and
    C⁻¹'s round-off is far below the margin."""
    n = C_inv.shape[0]
    limit = 1.0 / (RCOND_PROOF_MARGIN * n * EPS)  # ‖C‖₁‖C⁻¹‖₁ below this proves it (n ≥ 1: LAPACK refuses n = 0)
    diagonal = np.diagonal(C_inv)
    if not np.all(np.isfinite(diagonal)):  # (a NaN proves nothing)
        return False
    largest = diagonal.max(initial=0.0)  # n · max (C⁻¹)ᵢᵢ ≥ ‖C⁻¹‖₁
    # (the products left to right, each norm bound times n first: n · max (C⁻¹)ᵢᵢ alone overflows for a C of 1e-300)
    if n * DIAGONAL_BOUND * diagonal_max * n * largest < limit:  # (a NaN diagonal_max proves nothing)
        return True
    norm1 = anorm()
    return bool(norm1 * n * largest < limit or norm1 * _norm1_of_lower(C_inv) < limit)


def _factor_scipy(K, noise_var: float, jitter: float):
    """U with C + jitter·I = UᵀU, C = K + σ²I from K's lower triangle (potrf, in kept memory); None where potrf fails or
    U's diagonal is not finite and positive.

    The same LAPACK call on the same memory layout as the Numba implementation: C's lower triangle in C order is, read
    through its transpose (Fortran order, no copy), the upper triangle LAPACK factorises in place ("U"). The lower
    triangle is copied by blocks of rows (with what lies above the diagonal in each block's last columns), and `clean`
    zeroes what is above. Every n × n array this allocates costs page faults on first touch; inside `reused_arrays` it
    is kept from earlier calls.
    """
    n = K.shape[0]
    A = reused_arrays.empty((n, n), np.float64)
    for s, e, _ in _lower_blocks(n):
        A[s:e, :e] = K[s:e, :e]
    A[np.diag_indices(n)] = np.diagonal(K) + noise_var + jitter  # C = K + σ²I (+ jitter·I)   (PRML 6.62)
    U, info = lapack.dpotrf(A.T, lower=0, clean=1, overwrite_a=1)  # U is A.T: A holds U's transpose, zeros above
    return U if potrf_succeeded(U, info) else None


def _factor_and_invert_scipy(K, t, noise_var: float, use_jitter: bool):
    """(C⁻¹, α, Σ log Uᵢᵢ, jitter, step) with C + jitter·I = UᵀU from K's lower triangle, α = C⁻¹t and C⁻¹'s lower
    triangle in C order (zeros above), as `_logp_and_gradients` does; None if no jitter works.

    jitter = step · mean(diag C); `step` is 0.0 where no jitter was needed or the mean diagonal is not a positive
    number (then jitter is relative to 1 and does not depend on C). A factorisation is accepted as `_linalg.cholesky`
    accepts one: pocon's estimate of 1/cond₁ above n·ε, unless C⁻¹ already proves it (`_proven_well_conditioned`).
    pocon reads U, which potri overwrites: a copy of U is kept (`_copy_for_pocon`) where the proof may fail, else C is
    factorised again should it fail all the same, as the Numba implementation always does.
    """
    n = K.shape[0]
    if n == 0:  # (LAPACK refuses an empty matrix: LDA ≥ 1; the Numba implementation's potrf fails likewise)
        return None
    diagonal = np.diagonal(K) + noise_var  # diag C
    scale = diagonal.mean()  # mean(diag C)
    scale_from_C = bool(np.isfinite(scale) and scale > 0.0)
    scale = scale if scale_from_C else 1.0
    largest = np.abs(diagonal).max(initial=0.0)  # max |Cᵢᵢ|
    norm1 = functools.cache(lambda: _norm1_of_lower(K, noise_var))  # ‖C‖₁, computed where the diagonals prove nothing

    for step in [0.0] + (list(_JITTER_STEPS) if use_jitter else []):
        jitter = step * scale
        U = _factor_scipy(K, noise_var, jitter)
        if U is None:
            continue
        copy = _copy_for_pocon(U, n * DIAGONAL_BOUND * (largest + jitter))  # (≥ ‖C + jitter·I‖₁: a copy at least as often)
        # 1/cond₁(C) > n·ε, the rule of _linalg.cholesky (pocon's estimate), settled by C⁻¹ where it proves
        # 1/cond₁ > RCOND_PROOF_MARGIN·n·ε; else pocon is asked, as always
        log_det_half, alpha, C_inv = _solve_and_invert(U, t)
        if not _proven_well_conditioned(C_inv, largest + jitter, lambda: norm1() + jitter):
            if copy is None:  # (the lower bound was far from the limit, yet C⁻¹ proves nothing: C again)
                copy = _factor_scipy(K, noise_var, jitter)
            if copy is None or not lapack.dpocon(copy, norm1() + jitter, uplo="U")[0] > n * EPS:  # (a NaN estimate fails)
                continue
        return C_inv, alpha, log_det_half, jitter, step if scale_from_C else 0.0
    return None


#: `_copy_for_pocon` keeps U where ‖C‖₁ / min Uᵢᵢ², a lower bound of cond₁(C), comes within this factor of the largest
#: cond₁ that C⁻¹ can prove (1/(RCOND_PROOF_MARGIN·n·ε)); for GP Gram matrices the bound is within 3–6× of cond₁
#: (RBF Grams with noise 1e-2 to 1e-10, n = 100 to 2000)
POCON_COPY_MARGIN = 64.0


def _copy_for_pocon(U, anorm: float):
    """A copy of U (in kept memory) where C⁻¹ may not prove C well conditioned, else None. `anorm` ≥ ‖C‖₁ (an upper
    bound copies at least as often).

    Every Cholesky pivot Uᵢᵢ² is at least λ_min(C) (a Schur complement of a leading block, whose eigenvalues interlace
    C's), so 1/min Uᵢᵢ² ≤ ‖C⁻¹‖₂ ≤ ‖C⁻¹‖₁ and ‖C‖₁ / min Uᵢᵢ² ≤ cond₁(C).
    """
    n = U.shape[0]
    if anorm / np.min(np.diagonal(U)) ** 2 * POCON_COPY_MARGIN < 1.0 / (RCOND_PROOF_MARGIN * n * EPS):
        return None
    copy = reused_arrays.empty((n, n), np.float64).T
    np.copyto(copy, U)
    return copy


def _solve_and_invert(U, t):
    """(Σ log Uᵢᵢ = ½ log|C|, α = C⁻¹t (potrs), C⁻¹ over U (potri, `_spd_inverse`'s): its lower triangle in C order, zeros
    above)."""
    alpha, _ = lapack.dpotrs(U, t, lower=0)
    return np.log(np.diagonal(U)).sum(), alpha, potri(U).T


def _logp_and_gradients_scipy(K, t, noise_var: float, use_jitter: bool):
    """`_logp_and_gradients` through SciPy's LAPACK, vectorised: the Python linker's implementation of the Op.

    The same LAPACK calls on the same layout (`_factor_and_invert_scipy`), so the same numbers to the bit.
    """
    K, t = np.asarray(K, dtype=np.float64), np.asarray(t, dtype=np.float64)
    n = K.shape[0]
    factored = _factor_and_invert_scipy(K, t, noise_var, use_jitter)
    if factored is None:
        return -np.inf, np.zeros((n, n)), np.zeros(n), 0.0
    C_inv, alpha, log_det_half, jitter, step = factored
    # log p(t) = −½ tᵀα − Σ log Uᵢᵢ − n/2 log 2π   (R&W 2.30)
    logp = -0.5 * t @ alpha - log_det_half - 0.5 * n * LOG_2PI
    d_K = _gradient_over_inverse(C_inv, alpha)
    if step > 0.0:  # jitter = step · mean(diag C): ∂jitter/∂Cᵢᵢ = step/n
        d_K[np.diag_indices(n)] += np.trace(d_K) * step / n
    return logp, d_K, -alpha, jitter  # ∂ log p / ∂t = −C⁻¹t


def _gradient_over_inverse(C_inv, alpha):
    """∂ log p / ∂K written over C_inv, which holds C⁻¹'s lower triangle and zeros above (potri's output).

    ∂ log p / ∂C = G = ½(ααᵀ − C⁻¹)   (R&W 5.9). The Op reads K's lower triangle only, so its partial derivatives are
    2Gᵢⱼ below the diagonal, Gᵢᵢ on it and 0 above, as in the Numba implementation; each block of rows is written
    through one temporary that stays in cache.
    """
    block = np.empty((min(BLOCK_ROWS, len(alpha)), len(alpha)))
    for s, e, above in _lower_blocks(len(alpha)):
        rows = C_inv[s:e, :e]
        np.subtract(np.multiply(alpha[s:e, None], alpha[:e], out=block[: e - s, :e]), rows, out=rows)  # 2Gᵢⱼ = αᵢαⱼ − (C⁻¹)ᵢⱼ
        rows[:, s:e][above] = 0.0
    C_inv[np.diag_indices(len(alpha))] *= 0.5  # Gᵢᵢ = ½(αᵢ² − (C⁻¹)ᵢᵢ)
    return C_inv


def as_float64(x):
    """A float64 tensor variable: `pt.as_tensor_variable(x, dtype=...)` leaves a variable's own dtype (a float32 K under
    `floatX=float32`, an int64 n), which the LAPACK calls of the Ops cannot take."""
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


class GaussianLogp(Op):
    """Inputs K, t, σ²; outputs log N(t | 0, K + σ²I), ∂/∂K, ∂/∂t and the jitter used.

    Only K's lower triangle is read, so ∂/∂K is lower triangular: 2G below the diagonal, G on it,
    G = ½(ααᵀ − C⁻¹) = ∂/∂C; the pullback reuses it, and ∂/∂σ² = tr G. σ²I is added inside: no
    n × n identity in the graph, forward or backward.

    `jitter=False` (in models): −inf where C is not numerically positive definite.
    `jitter=True` (for `bayeskern.fit.empirical_bayes`): escalating jitter instead, reported.
    """

    __props__ = ("jitter",)

    def __init__(self, jitter: bool = False):
        self.jitter = bool(jitter)

    def make_node(self, K, t, noise_var):
        K, t, noise_var = as_float64(K), as_float64(t), as_float64(noise_var)
        if K.ndim != 2 or t.ndim != 1 or noise_var.ndim != 0:
            raise ValueError(
                f"gaussian_logp needs K (n, n), t (n,) and a scalar σ², got ndim {K.ndim}, {t.ndim} and {noise_var.ndim}"
            )
        _check_shapes(K.type.shape, t.type.shape)
        scalar = pt.scalar(dtype="float64")
        return Apply(self, [K, t, noise_var], [scalar, K.type(), t.type(), scalar.type()])

    def perform(self, node, inputs, outputs):
        K, t, noise_var = inputs
        _check_shapes(np.shape(K), np.shape(t))
        results = _logp_and_gradients_scipy(K, t, float(noise_var), self.jitter)  # (which takes them as float64)
        for out, value in zip(outputs, results, strict=True):
            out[0] = np.asarray(value)

    def infer_shape(self, node, shapes):
        return [(), shapes[0], shapes[1], ()]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("only log N(t | 0, C) itself is differentiable, not its gradient outputs")
        _, d_K, d_t, _ = outputs  # computed by the forward pass
        g = cotangents[0]
        return [g * d_K, g * d_t, g * pt.diagonal(d_K).sum()]  # ∂/∂σ² = tr ∂/∂C = tr G


def _check_shapes(K_shape: tuple, t_shape: tuple) -> None:
    """A ValueError unless K is n × n and t has n entries (None: not known yet, in a graph)."""
    n = {d for d in (*K_shape, *t_shape) if d is not None}
    if len(n) > 1:
        raise ValueError(f"gaussian_logp needs K (n, n) and t (n,), got K of shape {K_shape} and t of shape {t_shape}")


_GAUSSIAN_LOGP = GaussianLogp(jitter=False)


def gaussian_logp(K, t, noise_var=0.0):
    """Symbolic log N(t | 0, K + σ²I), σ² = noise_var (−inf where K + σ²I is not positive definite).

    Only the lower triangle of K is read.
    """
    return _GAUSSIAN_LOGP(K, t, noise_var)[0]
