"""The Numba implementation of `GaussianLogp`: LAPACK called from Numba code, registered with PyTensor's Numba backend.

Imported by `bayeskern._numba_backend` when PyTensor's Numba dispatch is first imported, not by `import bayeskern`:
importing Numba cost the README's numpy-mode fit ~0.3 s of a 2.5 s process. Held to the SciPy implementation
(`_gaussian_logp._logp_and_gradients_scipy`) to the bit by a test.
"""

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import val_to_int_ptr

from bayeskern._gaussian_logp import _JITTER_STEPS, DIAGONAL_BOUND, GaussianLogp
from bayeskern._lapack_numba import cholesky_in_place, f64p, i32p, lapack
from bayeskern._linalg import EPS, LOG_2PI, RCOND_PROOF_MARGIN
from bayeskern._spd_inverse import LEAF
from bayeskern._spd_inverse_numba import potri

__all__ = ["_logp_and_gradients"]

# UPLO, N, A, LDA, ANORM, RCOND, WORK, IWORK, INFO
_pocon = lapack("pocon", (i32p, i32p, f64p, i32p, f64p, f64p, f64p, i32p, i32p))
# UPLO, N, NRHS, A, LDA, B, LDB, INFO
_potrs = lapack("potrs", (i32p, i32p, i32p, f64p, i32p, f64p, i32p, i32p))


@numba_basic.numba_njit(fastmath=False)
def _norm1_of_lower(M, shift):
    """‖S‖₁ of the symmetric S whose lower triangle is M's, `shift` added on the diagonal: its column sums are its row
    sums, read from the lower triangle row by row (contiguous in memory)."""
    n = M.shape[0]
    row_sum = np.zeros(n)
    for i in range(n):
        for j in range(i):
            a = abs(M[i, j])
            row_sum[i] += a
            row_sum[j] += a
        row_sum[i] += abs(M[i, i] + shift)
    return row_sum.max() if n > 0 else 0.0


@numba_basic.numba_njit(fastmath=False)
def _proven_well_conditioned(A, diagonal_max, K, noise_var, norm1):
    """`_gaussian_logp._proven_well_conditioned`, C⁻¹'s lower triangle in A's, `diagonal_max` = max Cᵢᵢ: n · max (C⁻¹)ᵢᵢ
    ≥ ‖C⁻¹‖₁ and n · DIAGONAL_BOUND · max Cᵢᵢ ≥ ‖C‖₁ first, O(n); then ‖C‖₁ (of C = K + noise_var·I, computed once,
    `_norm1_once`), then ‖C⁻¹‖₁ itself, O(n²)."""
    n = A.shape[0]
    limit = 1.0 / (RCOND_PROOF_MARGIN * n * EPS)  # ‖C‖₁‖C⁻¹‖₁ below this proves 1/cond₁ > RCOND_PROOF_MARGIN·n·ε
    largest = 0.0
    for i in range(n):
        if not np.isfinite(A[i, i]):  # (a NaN proves nothing)
            return False
        largest = max(largest, A[i, i])
    if n * DIAGONAL_BOUND * diagonal_max * n * largest < limit:  # (left to right: n · max (C⁻¹)ᵢᵢ alone may overflow)
        return True
    anorm = _norm1_once(K, noise_var, norm1)
    return anorm * n * largest < limit or anorm * _norm1_of_lower(A, 0.0) < limit


@numba_basic.numba_njit(fastmath=False)
def _norm1_once(K, noise_var, norm1):
    """‖C‖₁ of C = K + noise_var·I, computed into norm1[0] the first time it is asked for (norm1[0] < 0 until then)."""
    if norm1[0] < 0.0:
        norm1[0] = _norm1_of_lower(K, noise_var)
    return norm1[0]


@numba_basic.numba_njit(fastmath=False)
def _scale_and_largest(K, noise_var):
    """(mean diag C or 1.0, whether it came from C, max |Cᵢᵢ|) of C = K + noise_var·I from K's lower triangle."""
    n = K.shape[0]
    scale, largest = 0.0, 0.0
    for i in range(n):
        scale += (K[i, i] + noise_var) / n
        largest = max(largest, abs(K[i, i] + noise_var))
    scale_from_C = np.isfinite(scale) and scale > 0.0
    if not scale_from_C:
        scale = 1.0
    return scale, scale_from_C, largest if np.isfinite(scale) else np.inf  # (max skips a NaN; a sum does not: ∞ proves nothing)


@numba_basic.numba_njit(fastmath=False)
def _factor(A, K, noise_var, jitter):
    """C + jitter·I = UᵀU factorised in A (potrf); whether that succeeded with a finite, positive diagonal.

    LAPACK reads a C-order array as its transpose: its upper triangle ("U") is the C-order lower triangle of A, which
    holds C's lower triangle. C = UᵀU with Uᵢⱼ (i ≤ j) in A[j, i]: every result is read from A's lower triangle.
    """
    n = K.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = K[i, j]
        A[i, i] = K[i, i] + noise_var + jitter  # C = K + σ²I (+ jitter·I)   (PRML 6.62)
    return cholesky_in_place(A)


@numba_basic.numba_njit(fastmath=False)
def _solve_and_invert(A, t, alpha):
    """Σ log Uᵢᵢ = ½ log|C| from the factor in A; α = C⁻¹t written into `alpha` (potrs); C⁻¹ into A's lower triangle
    (potri, `_spd_inverse`'s)."""
    n = A.shape[0]
    log_det_half = 0.0
    for i in range(n):
        log_det_half += np.log(A[i, i])
    uplo, N, info = val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(n)), val_to_int_ptr(np.int32(0))
    for i in range(n):  # (not alpha[:] = t: an array copied into a slice makes Numba compile its shape-mismatch message)
        alpha[i] = t[i]
    _potrs(uplo, N, val_to_int_ptr(np.int32(1)), A.ctypes, N, alpha.ctypes, N, info)
    potri(A)
    return log_det_half


@numba_basic.numba_njit(fastmath=False)
def _factor_and_invert(K, t, noise_var, use_jitter, scale, largest):
    """(A, α, Σ log Uᵢᵢ, jitter, ok): C + jitter·I = UᵀU for the first of 0 and the `JITTER_STEPS` (relative to
    `scale`, with `use_jitter`) at which C is numerically positive definite, α = C⁻¹t, and C⁻¹'s lower triangle in A;
    ok False if none is.

    potrf also "succeeds" on a C singular to round-off, whose log-determinant is then noise: C is taken to be singular
    where 1/cond₁(C) ≤ n·ε (the rule of _linalg.cholesky, pocon's estimate). C⁻¹ settles it where it proves
    1/cond₁ > RCOND_PROOF_MARGIN·n·ε (`_proven_well_conditioned`); else C is factorised again and pocon asked, as
    always. potrf is deterministic at a given number of BLAS threads: the same U, unless another thread changed that
    number in between (`threadpool_limits`), when this U — the one pocon reads — gives α and C⁻¹. The SciPy
    implementation does the same.
    """
    n = K.shape[0]
    anorm, rcond = np.empty(1), np.zeros(1)
    work, iwork = np.empty(3 * n), np.empty(n, dtype=np.int32)
    uplo, N, info = val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(n)), val_to_int_ptr(np.int32(0))
    A, alpha = np.empty((n, n)), np.empty(n)
    norm1 = np.full(1, -1.0)  # ‖C‖₁ once computed (`_norm1_once`: where the diagonals prove nothing)
    log_det_half = 0.0
    for attempt in range(1 + (_JITTER_STEPS.shape[0] if use_jitter else 0)):
        jitter = 0.0 if attempt == 0 else _JITTER_STEPS[attempt - 1] * scale
        if not _factor(A, K, noise_var, jitter):
            continue
        log_det_half = _solve_and_invert(A, t, alpha)
        if _proven_well_conditioned(A, largest + jitter, K, noise_var, norm1):
            return A, alpha, log_det_half, jitter, True
        if not _factor(A, K, noise_var, jitter):  # (U again; fails only if the BLAS threads changed meanwhile)
            continue
        anorm[0] = _norm1_once(K, noise_var, norm1) + jitter  # ‖C + jitter·I‖₁
        _pocon(uplo, N, A.ctypes, N, anorm.ctypes, rcond.ctypes, work.ctypes, iwork.ctypes, info)
        if rcond[0] > n * EPS:
            log_det_half = _solve_and_invert(A, t, alpha)  # α and C⁻¹ of this U, into `alpha` and A
            return A, alpha, log_det_half, jitter, True
    return A, alpha, log_det_half, 0.0, False


@numba_basic.numba_njit(fastmath=False)
def _gradient_over_inverse(A, alpha):
    """∂ log p / ∂K written over A, which holds C⁻¹'s lower triangle (potri's output).

    ∂ log p / ∂C = G = ½ (ααᵀ − C⁻¹)   (R&W 5.9). The Op reads K's lower triangle only, so its partial derivatives
    are 2Gᵢⱼ below the diagonal (Kᵢⱼ stands for Kⱼᵢ too), Gᵢᵢ on it and 0 above; for a K(θ) symmetric by
    construction they give the same ∂/∂θ as G. Row by row: (C⁻¹)ᵢⱼ is in A[i, j] for j ≤ i, read just before it
    is overwritten; A[i, j] for j > i is never read.
    """
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = alpha[i] * alpha[j] - A[i, j]  # 2 · ½(αᵢαⱼ − (C⁻¹)ᵢⱼ)
        A[i, i] = 0.5 * (alpha[i] * alpha[i] - A[i, i])
        for j in range(i + 1, n):
            A[i, j] = 0.0
    return A


@numba_basic.numba_njit(final_function=True, fastmath=False)  # callable from Python too; exact arithmetic
def _logp_and_gradients(K, t, noise_var, use_jitter):
    """log N(t | 0, C), C = K + noise_var·I, with ∂/∂K, ∂/∂t and the jitter added to C's diagonal.

    Only K's lower triangle is read (LAPACK's convention), so K need not be symmetric to the bit.
    A C that is not numerically positive definite gives (−inf, 0, 0, 0) — the sampler or optimiser
    must step back — unless `use_jitter`, when the steps of `JITTER_STEPS` (relative to the mean
    diagonal) are tried in turn and the one used is returned.
    """
    n = K.shape[0]
    scale, scale_from_C, largest = _scale_and_largest(K, noise_var)
    A, alpha, log_det_half, jitter, ok = _factor_and_invert(K, t, noise_var, use_jitter, scale, largest)
    if not ok:
        return -np.inf, np.zeros((n, n)), np.zeros(n), 0.0
    # log p(t) = −½ tᵀα − Σ log Uᵢᵢ − n/2 log 2π   (R&W 2.30)
    logp = -0.5 * np.dot(t, alpha) - log_det_half - 0.5 * n * LOG_2PI
    d_K = _gradient_over_inverse(A, alpha)
    if jitter > 0.0 and scale_from_C:
        # the jitter is step · mean(diag C), itself a function of C: ∂jitter/∂Cᵢᵢ = step/n, so every
        # diagonal entry gains (step/n) · tr(∂ log p/∂(C + jitter·I))
        extra = 0.0
        for i in range(n):
            extra += d_K[i, i]
        extra *= jitter / scale / n
        for i in range(n):
            d_K[i, i] += extra
    return logp, d_K, -alpha, jitter  # ∂ log p / ∂t = −C⁻¹t


@numba_basic.register_funcify_default_op_cache_key(GaussianLogp)
def _funcify_gaussian_logp(op, node, **kwargs):
    use_jitter = op.jitter

    @numba_basic.numba_njit
    def gaussian_logp(K, t, noise_var):
        if K.shape[0] != K.shape[1] or t.shape[0] != K.shape[0]:
            raise ValueError("gaussian_logp needs K (n, n) and t (n,)")
        logp, d_K, d_t, jitter = _logp_and_gradients(np.ascontiguousarray(K), np.ascontiguousarray(t), noise_var.item(), use_jitter)
        return np.asarray(logp), d_K, d_t, np.asarray(jitter)

    # bump the 22 when _logp_and_gradients or what it calls changes (or moves): PyTensor caches the compiled code on disk.
    # LEAF, frozen into the compiled inverse (`_spd_inverse_numba`), is part of the number
    return gaussian_logp, 22 * 1000 + LEAF
