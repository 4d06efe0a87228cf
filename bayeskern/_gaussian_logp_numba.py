"""The Gaussian log density Op compiled by Numba (PyTensor's default backend, and nutpie's), calling LAPACK directly.

Without this PyTensor would run the Op's Python `perform` in Numba's object mode: slower, holding the
GIL (nutpie's chains run in threads), and not cached on disk between processes.
"""

import numba
import numpy as np
from numba.core import types
from numba.core.extending import get_cython_function_address
from pytensor.link.numba.cache import _call_cached_ptr
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import int_ptr_to_val, val_to_int_ptr

from bayeskern._gaussian_logp import GaussianLogp
from bayeskern._linalg import LOG_2PI

_i32p, _f64p = types.CPointer(types.int32), types.CPointer(types.float64)


def _lapack(name: str, argtypes: tuple):
    """A Numba-callable LAPACK routine d{name} from SciPy's cython_lapack, cacheable on disk."""

    @numba_basic.numba_njit
    def pointer():
        with numba.objmode(ptr=types.intp):
            ptr = get_cython_function_address("scipy.linalg.cython_lapack", f"d{name}")
        return ptr

    function_type = types.FunctionType(types.void(*argtypes))
    unique = f"bayeskern.lapack.d{name}"

    @numba_basic.numba_njit
    def call(*args):
        fn = _call_cached_ptr(get_ptr_func=pointer, func_type_ref=function_type, unique_func_name_lit=unique)
        fn(*args)

    return call


# UPLO, N, A, LDA, INFO
_potrf = _lapack("potrf", (_i32p, _i32p, _f64p, _i32p, _i32p))
_potri = _lapack("potri", (_i32p, _i32p, _f64p, _i32p, _i32p))
# UPLO, N, NRHS, A, LDA, B, LDB, INFO
_potrs = _lapack("potrs", (_i32p, _i32p, _i32p, _f64p, _i32p, _f64p, _i32p, _i32p))


@numba_basic.numba_njit
def _logp_and_gradients(C, t):
    """The Numba twin of `bayeskern._gaussian_logp.logp_and_gradients` (same LAPACK calls, same formulas)."""
    n = C.shape[0]
    # LAPACK reads the C-order copy A as Aᵀ = C (symmetric); its lower triangle F[i, j], i ≥ j, is
    # A[j, i]: every result below is read from A's upper triangle
    A = C.copy()
    uplo, N, info = val_to_int_ptr(np.int32(ord("L"))), val_to_int_ptr(np.int32(n)), val_to_int_ptr(np.int32(0))
    _potrf(uplo, N, A.ctypes, N, info)  # C = L Lᵀ, Lᵢⱼ in A[j, i]
    if int_ptr_to_val(info) != 0:
        return -np.inf, np.zeros((n, n)), np.zeros(n)
    log_det_half = 0.0
    for i in range(n):
        if not np.isfinite(A[i, i]) or A[i, i] <= 0.0:
            return -np.inf, np.zeros((n, n)), np.zeros(n)
        log_det_half += np.log(A[i, i])  # Σ log Lᵢᵢ = ½ log|C|
    alpha = t.copy()
    nrhs = val_to_int_ptr(np.int32(1))
    _potrs(uplo, N, nrhs, A.ctypes, N, alpha.ctypes, N, info)  # α = C⁻¹t
    _potri(uplo, N, A.ctypes, N, info)  # C⁻¹ from its factor, one triangle
    # log p(t) = −½ tᵀα − Σ log Lᵢᵢ − n/2 log 2π   (R&W 2.30)
    logp = -0.5 * np.dot(t, alpha) - log_det_half - 0.5 * n * LOG_2PI
    # ∂ log p / ∂C = ½ (ααᵀ − C⁻¹)   (R&W 5.9); (C⁻¹)ᵢⱼ is in A[i, j] for j ≥ i
    d_C = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            v = 0.5 * (alpha[i] * alpha[j] - A[i, j])
            d_C[i, j] = v
            d_C[j, i] = v
    return logp, d_C, -alpha


@numba_basic.register_funcify_default_op_cache_key(GaussianLogp)
def _funcify_gaussian_logp(op, node, **kwargs):
    @numba_basic.numba_njit
    def gaussian_logp(C, t):
        logp, d_C, d_t = _logp_and_gradients(np.ascontiguousarray(C), np.ascontiguousarray(t))
        return np.asarray(logp), d_C, d_t

    return gaussian_logp, 2  # bump when _logp_and_gradients changes: PyTensor caches the compiled code on disk
