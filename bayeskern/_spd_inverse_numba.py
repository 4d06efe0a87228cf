"""The Numba implementation of `bayeskern._spd_inverse.potri`: the same halving, the same LAPACK and BLAS calls on the
same blocks, so the same numbers to the bit (a test)."""

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.linalg._LAPACK import val_to_int_ptr

from bayeskern._lapack_numba import blas, f64p, i32p, lapack
from bayeskern._spd_inverse import LEAF

__all__ = ["potri"]

# UPLO, DIAG, N, A, LDA, INFO
_trtri = lapack("trtri", (i32p, i32p, i32p, f64p, i32p, i32p))
# UPLO, N, A, LDA, INFO
_lauum = lapack("lauum", (i32p, i32p, f64p, i32p, i32p))
# SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, LDA, B, LDB
_trmm = blas("trmm", (i32p, i32p, i32p, i32p, i32p, i32p, f64p, f64p, i32p, f64p, i32p))


@numba_basic.numba_njit(fastmath=False)
def potri(A):
    """LAPACK potri ("U") in place on A, C-ordered n × n: read as its Fortran transpose, A's lower triangle holds the
    factor U of C = UᵀU (a positive diagonal) and gets C⁻¹'s lower triangle; above the diagonal nothing is read or
    written."""
    n = A.shape[0]
    if n == 0:
        return
    _invert_upper(A)
    N, info = val_to_int_ptr(np.int32(n)), val_to_int_ptr(np.int32(0))
    _lauum(val_to_int_ptr(np.int32(ord("U"))), N, A.ctypes, N, info)  # U⁻¹U⁻ᵀ = C⁻¹


@numba_basic.numba_njit(fastmath=False)
def _invert_upper(A):
    """U⁻¹ over U (Fortran indices: U's (i, j) is A[j, i]) by `_spd_inverse._invert_upper`'s halving, its recursion
    unrolled into a stack of blocks: Numba's code of a recursive function, loaded from PyTensor's compile directory in
    a later process, crashed it (session 43)."""
    N, upper, no = val_to_int_ptr(np.int32(A.shape[0])), val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(ord("N")))
    one, minus_one = np.ones(1), -np.ones(1)
    blocks = np.empty((64, 3), dtype=np.int64)  # (s, m, halves inverted so far) from the whole matrix down to the block at hand
    blocks[0, 0], blocks[0, 1], blocks[0, 2], top = 0, A.shape[0], 0, 0
    while top >= 0:
        s, m, done = blocks[top, 0], blocks[top, 1], blocks[top, 2]
        h = m // 2  # [[P, B], [0, D]]: P is h × h
        if m <= LEAF:
            _trtri(upper, no, val_to_int_ptr(np.int32(m)), A[s:, s:].ctypes, N, val_to_int_ptr(np.int32(0)))
            top -= 1
        elif done < 2:  # P⁻¹ over P, then D⁻¹ over D
            blocks[top, 2] = done + 1
            top += 1
            blocks[top, 0], blocks[top, 1], blocks[top, 2] = (s, h, 0) if done == 0 else (s + h, m - h, 0)
        else:
            rows, columns = val_to_int_ptr(np.int32(h)), val_to_int_ptr(np.int32(m - h))
            _trmm(val_to_int_ptr(np.int32(ord("L"))), upper, no, no, rows, columns, minus_one.ctypes, A[s:, s:].ctypes, N, A[s + h:, s:].ctypes, N)  # B ← −P⁻¹B
            _trmm(val_to_int_ptr(np.int32(ord("R"))), upper, no, no, rows, columns, one.ctypes, A[s + h:, s + h:].ctypes, N, A[s + h:, s:].ctypes, N)  # B ← (−P⁻¹B)D⁻¹
            top -= 1
