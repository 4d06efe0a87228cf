"""C⁻¹ from C's Cholesky factor in place, LAPACK potri's result computed faster: U⁻¹ by recursive halving, then U⁻¹U⁻ᵀ.

potri is trtri (U⁻¹) then lauum (U⁻¹U⁻ᵀ). OpenBLAS's trtri runs far below its Cholesky's speed at the sizes of a GP
fit: on one thread of the 2-vCPU Xeon of session 43, trtri 437 µs against potrf ~250 µs at n = 200. The same inverse
by halving — U = [[P, B], [0, D]] gives U⁻¹ = [[P⁻¹, −P⁻¹BD⁻¹], [0, D⁻¹]], trtri on blocks of at most LEAF rows, two
trmm per split — 145 µs; 1466 against 3635 µs at n = 500, 57.7 against 89.6 ms at n = 2000 (one thread; BENCHMARKS.md,
session 43). lauum is left to LAPACK. The products differ from potri's by round-off only (2.9e-16 to 1.4e-15 relative
to max |C⁻¹| where measured; tests hold them to numpy's inverse).

Two implementations of the one recursion, identical to the bit (a test): `potri` here calls SciPy's BLAS and LAPACK —
the routines of `scipy.linalg.cython_blas`/`cython_lapack`, looked up as Numba's `get_cython_function_address` looks
them up — through ctypes, on the blocks in place; SciPy's f2py wrappers would copy every block of a larger matrix (not
contiguous), which at n = 2000 cost more than the halving gains. `bayeskern._spd_inverse_numba.potri` calls the same
routines from Numba code. Python's lock is held during each call, as SciPy's LAPACK wrappers hold it: released and
taken back at each of the ~20–60 calls of one inverse, it made an inverse wait ~5 ms for the lock at each call while
another thread ran Python (n = 200: 0.29 ms alone, 119 ms beside a busy thread; a review's measurement, session 43).
"""

import ctypes

import numpy as np
from scipy.linalg import cython_blas, cython_lapack

__all__ = ["LEAF", "inverse_diagonal", "potri"]

#: blocks of at most this many rows are inverted by LAPACK's trtri; larger ones are halved. 16 to 64 are within the
#: timing noise of each other at n = 200, 500 and 2000, on one thread or two (session 43)
LEAF = 32


def _routine(module, name: str):
    """SciPy's Fortran routine `name` as a ctypes function of pointers (every Fortran argument is one)."""
    # (prototypes of its own: ctypes.pythonapi's functions are shared, their argument types left as others set them)
    get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
    capsule = module.__pyx_capi__[name]
    signature = get_name(capsule)  # its C signature: dtrtri's is b"void (char *, char *, int *, __pyx_t_5scipy_6linalg_13cython_lapack_d *, int *, int *)"
    if b"int *" not in signature:  # (a SciPy whose cython_lapack took 64-bit integers would be misread)
        raise ImportError(f"scipy.linalg's {name} is not the LAPACK routine of 32-bit integers this module calls: {signature!r}")
    address = get_pointer(capsule, signature)
    arguments = {"dtrtri": 6, "dtrmm": 11, "dlauum": 5}[name]
    return ctypes.PYFUNCTYPE(None, *[ctypes.c_void_p] * arguments)(address)  # (PYFUNCTYPE: the lock held)


_trtri, _trmm, _lauum = _routine(cython_lapack, "dtrtri"), _routine(cython_blas, "dtrmm"), _routine(cython_lapack, "dlauum")
_UPPER, _NO, _LEFT, _RIGHT = (ctypes.byref(ctypes.c_char(letter)) for letter in (b"U", b"N", b"L", b"R"))
_ONE, _MINUS_ONE = ctypes.byref(ctypes.c_double(1.0)), ctypes.byref(ctypes.c_double(-1.0))


def _int(value: int):
    return ctypes.byref(ctypes.c_int(value))


def potri(U: np.ndarray) -> np.ndarray:
    """LAPACK potri ("U") in place: U, Fortran-ordered n × n with C = UᵀU's factor in its upper triangle, gets C⁻¹'s
    upper triangle; below the diagonal nothing is read or written. Returns U. U's diagonal must have no zero: unlike
    potri, nothing reports one (trtri would leave its block as it is); the callers check the diagonal first."""
    if not (U.dtype == np.float64 and U.ndim == 2 and U.shape[0] == U.shape[1] and U.flags.f_contiguous and U.flags.writeable
            and U.flags.aligned):
        raise ValueError("potri needs a square, writeable, aligned, Fortran-ordered float64 array")
    n, info = U.shape[0], ctypes.c_int(0)
    if n == 0:
        return U
    _invert_upper(U.ctypes.data, n, 0, n, ctypes.byref(info))
    _lauum(_UPPER, _int(n), U.ctypes.data, _int(n), ctypes.byref(info))  # U⁻¹U⁻ᵀ = C⁻¹
    return U


def inverse_diagonal(L: np.ndarray) -> np.ndarray:
    """[C⁻¹]ᵢᵢ = Σₖ [L⁻¹]ₖᵢ² of C = LLᵀ from its lower Cholesky factor L (what a leave-one-out predictive needs, R&W
    5.12): the triangular inverse by halving, n³/3 flops, half of forming C⁻¹; then each column's sum of squares.
    Above L's diagonal nothing is read; L is left as it was. A ValueError if L is not square or has a zero on its
    diagonal (a singular factor: trtri's info > 0, which the halving does not report)."""
    if np.ndim(L) != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"the Cholesky factor must be a square matrix, got shape {np.shape(L)}")
    if not np.all(np.diagonal(L) != 0.0):
        raise ValueError("the Cholesky factor is singular (a zero on its diagonal)")
    n, info = L.shape[0], ctypes.c_int(0)
    T = np.ascontiguousarray(np.tril(L), dtype=np.float64)  # a copy of L, zeros above its diagonal
    if n:  # T.T, Fortran-ordered, is U = Lᵀ (C = UᵀU): inverted in place, T holds (U⁻¹)ᵀ = L⁻¹
        _invert_upper(T.ctypes.data, n, 0, n, ctypes.byref(info))
    return np.einsum("ki,ki->i", T, T)  # [C⁻¹]ᵢᵢ = [L⁻ᵀL⁻¹]ᵢᵢ = Σₖ [L⁻¹]ₖᵢ²


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
