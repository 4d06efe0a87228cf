"""`LowerPairs` under PyTensor's Numba backend: one loop over the pairs, registered by `bayeskern._numba_backend`."""

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic

from bayeskern._lower_pairs import LowerPairs


@numba_basic.register_funcify_default_op_cache_key(LowerPairs)
def _funcify_lower_pairs(op, node, **kwargs):
    @numba_basic.numba_njit
    def lower_pairs(n_array):
        n = n_array.item()
        size = n * (n + 1) // 2
        rows, cols, flat = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        k = 0
        for i in range(n):  # row i holds the pairs (i, 0) … (i, i)
            for j in range(i + 1):
                rows[k], cols[k], flat[k] = i, j, i * n + j
                k += 1
        return rows, cols, flat

    return lower_pairs, 1  # bump when lower_pairs changes: PyTensor caches the compiled code on disk
