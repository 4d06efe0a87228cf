"""SciPy's LAPACK and BLAS routines as Numba-callable functions (through `scipy.linalg.cython_lapack`/`cython_blas`),
cacheable on disk: what bayeskern's Numba implementations of its Ops call, the same routines SciPy's wrappers call; and
the Ops' one Cholesky rule on Numba (`cholesky_in_place`, `_linalg.potrf_succeeded`'s twin)."""

import numba
import numpy as np
from numba.core import types
from numba.core.extending import get_cython_function_address
from pytensor.link.numba.cache import _call_cached_ptr
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import int_ptr_to_val, val_to_int_ptr

__all__ = ["blas", "cholesky_in_place", "f64p", "i32p", "lapack"]

i32p, f64p = types.CPointer(types.int32), types.CPointer(types.float64)


def _routine(module: str, name: str, argtypes: tuple):
    """The routine d{name} of scipy.linalg.{module} (Fortran calling convention: every argument a pointer)."""

    @numba_basic.numba_njit
    def pointer():
        with numba.objmode(ptr=types.intp):
            ptr = get_cython_function_address(f"scipy.linalg.{module}", f"d{name}")
        return ptr

    function_type = types.FunctionType(types.void(*argtypes))
    unique = f"bayeskern.{module}.d{name}"  # (a new name: code cached under an older one may not link here)

    @numba_basic.numba_njit
    def call(*args):
        fn = _call_cached_ptr(get_ptr_func=pointer, func_type_ref=function_type, unique_func_name_lit=unique)
        fn(*args)

    return call


def lapack(name: str, argtypes: tuple):
    """LAPACK's d{name}, e.g. lapack("potrf", (i32p, i32p, f64p, i32p, i32p))."""
    return _routine("cython_lapack", name, argtypes)


def blas(name: str, argtypes: tuple):
    """BLAS's d{name}."""
    return _routine("cython_blas", name, argtypes)


_potrf = lapack("potrf", (i32p, i32p, f64p, i32p, i32p))  # UPLO, N, A, LDA, INFO


@numba_basic.numba_njit(fastmath=False, inline="always")
def cholesky_in_place(A):
    """potrf "U" on A (C order: the factor of A's lower triangle, L in A's lower triangle); whether it succeeded with a
    finite, positive diagonal (`_linalg.potrf_succeeded`)."""
    k = A.shape[0]
    N, info = val_to_int_ptr(np.int32(k)), val_to_int_ptr(np.int32(0))
    _potrf(val_to_int_ptr(np.int32(ord("U"))), N, A.ctypes, N, info)
    ok = int_ptr_to_val(info) == 0
    for i in range(k):
        ok = ok and np.isfinite(A[i, i]) and A[i, i] > 0.0
    return ok
