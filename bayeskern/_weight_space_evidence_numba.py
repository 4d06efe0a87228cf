"""The Numba implementation of `WeightSpaceEvidence`: LAPACK called from Numba code, registered with PyTensor's Numba backend.

Imported by `bayeskern._numba_backend` when PyTensor's Numba dispatch is first imported. Held to the SciPy
implementation (`_weight_space_evidence._evidence_and_gradients_scipy`) to round-off by a test.
"""

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import int_ptr_to_val, val_to_int_ptr

from bayeskern._gaussian_logp_numba import _f64p, _i32p, _lapack, _potrf
from bayeskern._linalg import LOG_2PI
from bayeskern._weight_space_evidence import WeightSpaceEvidence

__all__ = ["_evidence_and_gradients"]

# UPLO, TRANS, DIAG, N, NRHS, A, LDA, B, LDB, INFO
_trtrs = _lapack("trtrs", (_i32p, _i32p, _i32p, _i32p, _i32p, _f64p, _i32p, _f64p, _i32p, _i32p))


@numba_basic.numba_njit(fastmath=False)
def _triangular_solve(A, B, nrhs, transposed):
    """B ← L⁻¹B (`transposed`) or L⁻ᵀB, in place, for the L in A's C-order lower triangle (LAPACK's "U" = Lᵀ); B holds
    `nrhs` right-hand sides of A's size, one after another in memory."""
    M = A.shape[0]
    uplo, diag = val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(ord("N")))
    trans = val_to_int_ptr(np.int32(ord("T") if transposed else ord("N")))
    N, info = val_to_int_ptr(np.int32(M)), val_to_int_ptr(np.int32(0))
    _trtrs(uplo, trans, diag, N, val_to_int_ptr(np.int32(nrhs)), A.ctypes, N, B.ctypes, N, info)


@numba_basic.numba_njit(final_function=True, fastmath=False)  # callable from Python too; exact arithmetic
def _evidence_and_gradients(P, q, tt, n, v, noise_var):
    """(log p, ∂/∂v, ∂/∂σ²) of `bayeskern._weight_space_evidence`'s formulas; (−inf, 0, 0) where B = I + DPD/σ² is not
    numerically positive definite or σ², v are not valid (σ² > 0, v ≥ 0)."""
    M = q.shape[0]
    valid = noise_var > 0.0
    for k in range(M):
        valid = valid and v[k] >= 0.0  # (a NaN fails)
    if not valid:
        return -np.inf, np.zeros(M), 0.0
    D = np.sqrt(v)
    A = np.empty((M, M))
    for i in range(M):
        for j in range(i + 1):  # B's lower triangle in C order: LAPACK's "U"
            A[i, j] = D[i] * D[j] * P[i, j] / noise_var  # DPD/σ²
        A[i, i] += 1.0  # B = I + DPD/σ²
    uplo, N, info = val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(M)), val_to_int_ptr(np.int32(0))
    _potrf(uplo, N, A.ctypes, N, info)
    ok = int_ptr_to_val(info) == 0
    log_det_half = 0.0
    for i in range(M):
        ok = ok and np.isfinite(A[i, i]) and A[i, i] > 0.0
        log_det_half += np.log(A[i, i])
    if not ok:
        return -np.inf, np.zeros(M), 0.0
    w = D * q
    _triangular_solve(A, w, 1, True)  # w = L⁻¹Dq
    quad = (tt - np.dot(w, w) / noise_var) / noise_var  # tᵀC⁻¹t
    logp = -0.5 * quad - 0.5 * n * np.log(noise_var) - log_det_half - 0.5 * n * LOG_2PI
    _triangular_solve(A, w, 1, False)
    Du = D * (w / noise_var)  # Du, u = L⁻ᵀw/σ² = B⁻¹Dq/σ²
    E = np.empty((M, M))  # E = L⁻¹DP in Fortran order: E[k] is column k
    for k in range(M):
        for i in range(M):
            E[k, i] = D[i] * P[i, k]
    _triangular_solve(A, E, M, True)
    PDu = np.dot(P, Du)
    d_v = np.empty(M)
    for k in range(M):
        phi_alpha = (q[k] - PDu[k]) / noise_var  # (Φᵀα)ₖ = (q − PDu)ₖ/σ²
        phi_C_phi = P[k, k] / noise_var - np.dot(E[k], E[k]) / noise_var**2  # (ΦᵀC⁻¹Φ)ₖₖ = Pₖₖ/σ² − (EᵀE)ₖₖ/σ⁴
        d_v[k] = 0.5 * (phi_alpha**2 - phi_C_phi)
    d_noise = (0.5 * (quad - n) - np.dot(v, d_v)) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ vₖ∂/∂vₖ
    return logp, d_v, d_noise


@numba_basic.register_funcify_default_op_cache_key(WeightSpaceEvidence)
def _funcify_weight_space_evidence(op, node, **kwargs):
    @numba_basic.numba_njit
    def weight_space_evidence(gram, proj, tt, n, variances, noise_var):
        M = proj.shape[0]
        if gram.shape[0] != M or gram.shape[1] != M or variances.shape[0] != M:
            raise ValueError("weight_space_evidence needs ΦᵀΦ (M, M), Φᵀt (M,) and variances (M,)")
        logp, d_v, d_noise = _evidence_and_gradients(
            np.ascontiguousarray(gram), np.ascontiguousarray(proj), tt.item(), n.item(), np.ascontiguousarray(variances),
            noise_var.item(),
        )
        return np.asarray(logp), d_v, np.asarray(d_noise)

    return weight_space_evidence, 1  # bump when _evidence_and_gradients changes (or moves): PyTensor caches the code on disk
