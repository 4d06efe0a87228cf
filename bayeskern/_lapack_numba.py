"""SciPy's LAPACK and BLAS routines as Numba-callable functions (through `scipy.linalg.cython_lapack`/`cython_blas`),
cacheable on disk: what bayeskern's Numba implementations of its Ops call, the same routines SciPy's wrappers call."""

import numba
from numba.core import types
from numba.core.extending import get_cython_function_address
from pytensor.link.numba.cache import _call_cached_ptr
from pytensor.link.numba.dispatch import basic as numba_basic

__all__ = ["blas", "f64p", "i32p", "lapack"]

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
