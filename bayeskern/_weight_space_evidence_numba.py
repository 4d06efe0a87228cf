"""The Numba implementation of `WeightSpaceEvidence`: LAPACK and BLAS called from Numba code, registered with PyTensor's Numba backend.

Imported by `bayeskern._numba_backend` when PyTensor's Numba dispatch is first imported. The same routines on the same
memory layouts as the SciPy implementation (`_weight_space_evidence._evidence_and_gradients_scipy`); a test holds the
gradients to the bit. The helpers are inlined into the two entry points (`inline="always"`): Numba compiles each function
it calls as a module of its own and optimises it again where it is linked in, so on a new machine the inlined helpers
compile in ~1.5–4 s less than as functions of their own (the Op's first compile: BENCHMARKS.md, "Session 42").
"""

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import val_to_int_ptr

from bayeskern._lapack_numba import blas, cholesky_in_place, f64p, i32p, lapack
from bayeskern._linalg import LOG_2PI
from bayeskern._weight_space_evidence import WeightSpaceEvidence

__all__ = ["_evidence_and_gradients", "_evidence_and_gradients_matrix"]

# UPLO, TRANS, DIAG, N, NRHS, A, LDA, B, LDB, INFO
_trtrs = lapack("trtrs", (i32p, i32p, i32p, i32p, i32p, f64p, i32p, f64p, i32p, i32p))
# UPLO, TRANS, N, K, ALPHA, A, LDA, BETA, C, LDC
_syrk = blas("syrk", (i32p, i32p, i32p, i32p, f64p, f64p, i32p, f64p, f64p, i32p))
# TRANS, M, N, ALPHA, A, LDA, X, INCX, BETA, Y, INCY
_gemv = blas("gemv", (i32p, i32p, i32p, f64p, f64p, i32p, f64p, i32p, f64p, f64p, i32p))


@numba_basic.numba_njit(fastmath=False, inline="always")
def _triangular_solve(A, B, nrhs, inverse_of_lower):
    """B ← L⁻¹B (`inverse_of_lower`) or L⁻ᵀB, in place, for the L in A's C-order lower triangle (LAPACK's "U" = Lᵀ); B
    holds `nrhs` right-hand sides of A's size, one after another in memory."""
    k = A.shape[0]
    N, info = val_to_int_ptr(np.int32(k)), val_to_int_ptr(np.int32(0))
    trans = val_to_int_ptr(np.int32(ord("T") if inverse_of_lower else ord("N")))  # (pointers to stack values: made here)
    _trtrs(val_to_int_ptr(np.int32(ord("U"))), trans, val_to_int_ptr(np.int32(ord("N"))), N, val_to_int_ptr(np.int32(nrhs)), A.ctypes, N, B.ctypes, N, info)


# SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, LDA, B, LDB
_trmm = blas("trmm", (i32p, i32p, i32p, i32p, i32p, i32p, f64p, f64p, i32p, f64p, i32p))


@numba_basic.numba_njit(fastmath=False, inline="always")
def _scaled_by_variances(S, v):
    """S√V for V = diag(v)."""
    k, M = S.shape
    D, SL = np.sqrt(v), np.empty((k, M))
    for i in range(k):
        for j in range(M):
            SL[i, j] = S[i, j] * D[j]
    return SL


@numba_basic.numba_njit(fastmath=False, inline="always")
def _scaled_by_covariance(S, V):
    """(SL, ok): S L for L the Cholesky factor of V's lower triangle (potrf "U" on a copy, then trmm: (SL)ᵀ = Lᵀ Sᵀ);
    whether V is numerically positive definite."""
    k, M = S.shape
    L, SL = V.copy(), S.copy()
    if not cholesky_in_place(L):
        return SL, False
    one, rows, cols = np.ones(1), val_to_int_ptr(np.int32(M)), val_to_int_ptr(np.int32(k))
    side, upper, no = val_to_int_ptr(np.int32(ord("L"))), val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(ord("N")))
    _trmm(side, upper, no, no, rows, cols, one.ctypes, L.ctypes, rows, SL.ctypes, rows)  # (SL)ᵀ = Lᵀ Sᵀ, in SL's memory
    return SL, True


@numba_basic.numba_njit(fastmath=False, inline="always")
def _factor(SL, noise_var):
    """(A, ok): B = σ²I + (SL)(SL)ᵀ factorised in A (syrk, then potrf on its C-order lower triangle, LAPACK's "U");
    whether that succeeded with a finite, positive diagonal."""
    k, M = SL.shape
    A = np.zeros((k, k))
    one, zero = np.ones(1), np.zeros(1)
    N, K = val_to_int_ptr(np.int32(k)), val_to_int_ptr(np.int32(M))
    _syrk(val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(ord("T"))), N, K, one.ctypes, SL.ctypes, K, zero.ctypes, A.ctypes, N)  # (SL)(SL)ᵀ
    for i in range(k):
        A[i, i] += noise_var  # B = σ²I + SVSᵀ
    return A, cholesky_in_place(A)


@numba_basic.numba_njit(fastmath=False, inline="always")
def _evidence(S, SL, c, rr, n, noise_var):
    """(ok, log p, tᵀC⁻¹t, Φᵀα, E) of the module's formulas, E = L⁻¹S held in Fortran order (E[j] is column j); ok False
    where B = σ²I + (SL)(SL)ᵀ is not numerically positive definite."""
    k, M = S.shape
    A, ok = _factor(SL, noise_var)
    if not ok:
        return False, -np.inf, 0.0, np.empty(0), np.empty((0, 0))
    log_det_half = 0.0
    for i in range(k):
        log_det_half += np.log(A[i, i])
    w = c.copy()
    _triangular_solve(A, w, 1, True)  # w = L⁻¹c
    quad = np.dot(w, w) + rr / noise_var  # tᵀC⁻¹t = ‖L⁻¹c‖² + ρ²/σ²
    logp = -0.5 * quad - log_det_half - 0.5 * (n - k) * np.log(noise_var) - 0.5 * n * LOG_2PI
    _triangular_solve(A, w, 1, False)  # z = L⁻ᵀw = B⁻¹c, in w
    phi_alpha, one, zero = np.empty(M), np.ones(1), np.zeros(1)
    inc, rows, cols = val_to_int_ptr(np.int32(1)), val_to_int_ptr(np.int32(M)), val_to_int_ptr(np.int32(k))
    _gemv(val_to_int_ptr(np.int32(ord("N"))), rows, cols, one.ctypes, S.ctypes, rows, w.ctypes, inc, zero.ctypes, phi_alpha.ctypes, inc)  # Φᵀα = Sᵀz
    E = np.empty((M, k))  # E = L⁻¹S in Fortran order: E[j] is column j
    for j in range(M):
        for i in range(k):
            E[j, i] = S[i, j]
    _triangular_solve(A, E, M, True)
    return True, logp, quad, phi_alpha, E


@numba_basic.numba_njit(final_function=True, fastmath=False)  # callable from Python too; exact arithmetic
def _evidence_and_gradients(S, c, rr, n, v, noise_var):
    """(log p, ∂/∂v, ∂/∂σ²) of `bayeskern._weight_space_evidence`'s formulas for V = diag(v); (−inf, 0, 0) where B =
    σ²I + SVSᵀ is not numerically positive definite or σ², v are not valid (σ² > 0, v ≥ 0)."""
    M = S.shape[1]
    valid = noise_var > 0.0
    for j in range(M):
        valid = valid and v[j] >= 0.0  # (a NaN fails)
    if not valid:
        return -np.inf, np.zeros(M), 0.0
    ok, logp, quad, phi_alpha, E = _evidence(S, _scaled_by_variances(S, v), c, rr, n, noise_var)
    if not ok:
        return -np.inf, np.zeros(M), 0.0
    d_v = np.empty(M)
    for j in range(M):
        d_v[j] = 0.5 * (phi_alpha[j] ** 2 - np.dot(E[j], E[j]))  # ½[(Φᵀα)ⱼ² − (EᵀE)ⱼⱼ]
    d_noise = (0.5 * (quad - n) - np.dot(v, d_v)) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ vⱼ∂/∂vⱼ
    return logp, d_v, d_noise


@numba_basic.numba_njit(final_function=True, fastmath=False)  # callable from Python too; exact arithmetic
def _evidence_and_gradients_matrix(S, c, rr, n, V, noise_var):
    """(log p, ∂/∂V, ∂/∂σ²) of `bayeskern._weight_space_evidence`'s formulas for a covariance V, its lower triangle read;
    (−inf, 0, 0) where V or B = σ²I + SVSᵀ is not numerically positive definite or σ² ≤ 0."""
    k, M = S.shape
    SL, valid = _scaled_by_covariance(S, V)
    if not (valid and noise_var > 0.0):
        return -np.inf, np.zeros((M, M)), 0.0
    ok, logp, quad, phi_alpha, E = _evidence(S, SL, c, rr, n, noise_var)
    if not ok:
        return -np.inf, np.zeros((M, M)), 0.0
    EtE, one, zero = np.zeros((M, M)), np.ones(1), np.zeros(1)
    N, K = val_to_int_ptr(np.int32(M)), val_to_int_ptr(np.int32(k))
    _syrk(val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(ord("T"))), N, K, one.ctypes, E.ctypes, K, zero.ctypes, EtE.ctypes, N)  # EᵀE: its lower triangle in C order
    d_V, read = np.zeros((M, M)), np.zeros((M, M))
    for i in range(M):
        d_V[i, i] = 0.5 * (phi_alpha[i] ** 2 - EtE[i, i])  # ½[(Φᵀα)ᵢ² − (EᵀE)ᵢᵢ]
        read[i, i] = V[i, i]
        for j in range(i):
            d_V[i, j] = phi_alpha[i] * phi_alpha[j] - EtE[i, j]  # twice ½[(Φᵀα)ᵢ(Φᵀα)ⱼ − (EᵀE)ᵢⱼ]: the lower triangle read
            read[i, j] = V[i, j]
    d_noise = (0.5 * (quad - n) - np.dot(read.ravel(), d_V.ravel())) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ Vᵢⱼ∂/∂Vᵢⱼ
    return logp, d_V, d_noise


@numba_basic.register_funcify_default_op_cache_key(WeightSpaceEvidence)
def _funcify_weight_space_evidence(op, node, **kwargs):
    evidence_and_gradients = _evidence_and_gradients_matrix if op.matrix else _evidence_and_gradients

    @numba_basic.numba_njit
    def weight_space_evidence(S, c, rr, n, prior, noise_var):
        if S.shape[0] != c.shape[0] or S.shape[1] != prior.shape[0] or S.shape[1] != prior.shape[-1]:
            raise ValueError("weight_space_evidence needs S (k, M), c (k,) and variances (M,) or a covariance (M, M)")
        logp, d_prior, d_noise = evidence_and_gradients(
            np.ascontiguousarray(S), np.ascontiguousarray(c), rr.item(), n.item(), np.ascontiguousarray(prior),
            noise_var.item(),
        )
        return np.asarray(logp), d_prior, np.asarray(d_noise)

    return weight_space_evidence, 6  # bump when anything it calls changes (or moves): PyTensor caches the code on disk
