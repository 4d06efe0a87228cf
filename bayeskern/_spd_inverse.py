"""C⁻¹ from C's Cholesky factor in place, LAPACK potri's result computed faster: U⁻¹ by recursive halving, then U⁻¹U⁻ᵀ.

potri is trtri (U⁻¹) then lauum (U⁻¹U⁻ᵀ). OpenBLAS's trtri runs far below its Cholesky's speed at the sizes of a GP
fit: one thread on the 2-vCPU Xeon of session 43, trtri 437 µs against potrf ~250 µs at n = 200. The same inverse by
halving — U = [[P, B], [0, D]] gives U⁻¹ = [[P⁻¹, −P⁻¹BD⁻¹], [0, D⁻¹]], trtri on blocks of at most LEAF rows, two trmm
per split — 145 µs; 1466 against 3635 µs at n = 500 and 57.7 against 89.6 ms at n = 2000 (BENCHMARKS.md, session 43).
lauum is left to LAPACK. The products differ from potri's by round-off only (relative 1e-16 here; tests hold them to
numpy's inverse).

Two implementations of the one recursion, identical to the bit (a test): `potri` here calls SciPy's BLAS and LAPACK —
the routines of `scipy.linalg.cython_blas`/`cython_lapack`, looked up as Numba's `get_cython_function_address` looks
them up — through ctypes, on the blocks in place; SciPy's f2py wrappers would copy every block of a larger matrix (not
contiguous), which at n = 2000 cost more than the halving gains. `bayeskern._spd_inverse_numba.potri` calls the same
routines from Numba code. ctypes releases Python's lock during each call, as SciPy's wrappers do.
"""

import ctypes

import numpy as np
from scipy.linalg import cython_blas, cython_lapack

__all__ = ["LEAF", "potri"]

#: blocks of at most this many rows are inverted by LAPACK's trtri; larger ones are halved. 16 to 64 are within the
#: timing noise of each other at n = 200, 500 and 2000, on one thread or two (session 43)
LEAF = 32


def _routine(module, name: str):
    """SciPy's Fortran routine `name` as a ctypes function of pointers (every Fortran argument is one)."""
    get_name, get_pointer = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    capsule = module.__pyx_capi__[name]
    address = get_pointer(capsule, get_name(capsule))
    arguments = {"dtrtri": 6, "dtrmm": 11, "dlauum": 5}[name]
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * arguments)(address)


_trtri, _trmm, _lauum = _routine(cython_lapack, "dtrtri"), _routine(cython_blas, "dtrmm"), _routine(cython_lapack, "dlauum")
_UPPER, _NO, _LEFT, _RIGHT = (ctypes.byref(ctypes.c_char(letter)) for letter in (b"U", b"N", b"L", b"R"))
_ONE, _MINUS_ONE = ctypes.byref(ctypes.c_double(1.0)), ctypes.byref(ctypes.c_double(-1.0))


def _int(value: int):
    return ctypes.byref(ctypes.c_int(value))


def potri(U: np.ndarray) -> np.ndarray:
    """LAPACK potri ("U") in place: U, Fortran-ordered n × n with C = UᵀU's factor in its upper triangle (a positive
    diagonal), gets C⁻¹'s upper triangle; below the diagonal nothing is read or written. Returns U."""
    if not (U.dtype == np.float64 and U.ndim == 2 and U.shape[0] == U.shape[1] and U.flags.f_contiguous and U.flags.writeable):
        raise ValueError("potri needs a square, writeable, Fortran-ordered float64 array")
    n, info = U.shape[0], ctypes.c_int(0)
    if n == 0:
        return U
    _invert_upper(U.ctypes.data, n, 0, n, ctypes.byref(info))
    _lauum(_UPPER, _int(n), U.ctypes.data, _int(n), ctypes.byref(info))  # U⁻¹U⁻ᵀ = C⁻¹
    return U


def _invert_upper(base: int, n: int, s: int, m: int, info) -> None:
    """U⁻¹ over U's diagonal block of rows and columns [s, s + m), of the n × n Fortran array at address `base`."""
    at = lambda i, j: base + 8 * (i + j * n)  # noqa: E731 — the address of element (i, j)
    lda = _int(n)
    if m <= LEAF:
        _trtri(_UPPER, _NO, _int(m), at(s, s), lda, info)
        return
    h = m // 2  # [[P, B], [0, D]]: P is h × h
    _invert_upper(base, n, s, h, info)  # P⁻¹ over P
    _invert_upper(base, n, s + h, m - h, info)  # D⁻¹ over D
    rows, columns = _int(h), _int(m - h)
    _trmm(_LEFT, _UPPER, _NO, _NO, rows, columns, _MINUS_ONE, at(s, s), lda, at(s, s + h), lda)  # B ← −P⁻¹B
    _trmm(_RIGHT, _UPPER, _NO, _NO, rows, columns, _ONE, at(s + h, s + h), lda, at(s, s + h), lda)  # B ← (−P⁻¹B)D⁻¹
