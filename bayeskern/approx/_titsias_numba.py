"""`TitsiasBound` under PyTensor's Numba backend: its numpy `perform` in object mode, registered by `bayeskern._numba_backend`."""

import warnings

from pytensor.link.numba.dispatch import basic as numba_basic

from bayeskern.approx._titsias import TitsiasBound


@numba_basic.register_funcify_default_op_cache_key(TitsiasBound)
def _funcify_titsias_bound(op, node, **kwargs):
    """PyTensor's Numba backend runs the numpy `perform` in object mode: BLAS and LAPACK do the O(nM²) and O(M³) work
    either way, and compiling them with Numba cost ~37 s on an empty cache and ran slower (0.44 s against 0.34 s per
    value and gradient of the bound at n = 20 000, M = 300, d = 5). PyTensor's fallback warns that it is taken: here
    it is chosen, so that warning is not passed on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
        return numba_basic.generate_fallback_impl(op, node, **kwargs), 4  # 4: the registration moved here
