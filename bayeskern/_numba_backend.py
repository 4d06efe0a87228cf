"""bayeskern's Ops under PyTensor's Numba backend, registered when that backend's dispatch is first imported.

Numba and PyTensor's Numba dispatch are imported only by what compiles with Numba (a fit beyond NUMPY_MAX_N, NUTS,
a user's `pm.sample`): the README's 25-point fit as a whole process takes 1.6 s without them and 2.5 s with them,
and runs none of their code. Whoever imports `pytensor.link.numba.dispatch` first — PyTensor's Numba linker, nutpie,
a user — gets bayeskern's implementations registered right after it, through a one-shot import hook
(`install`, called by `import bayeskern`).
"""

import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["install"]

_DISPATCH = "pytensor.link.numba.dispatch"


def _register() -> None:
    """Register the Numba implementations of GaussianLogp and TitsiasBound with PyTensor's Numba dispatch."""
    from pytensor.link.numba.dispatch import basic as numba_basic

    import bayeskern._gaussian_logp_numba  # noqa: F401  (registers GaussianLogp)
    from bayeskern.approx._titsias import TitsiasBound

    @numba_basic.register_funcify_default_op_cache_key(TitsiasBound)
    def _funcify_titsias_bound(op, node, **kwargs):
        """PyTensor's Numba backend runs the numpy `perform` in object mode: BLAS and LAPACK do the O(nM²) and O(M³)
        work either way, and compiling them with Numba cost ~37 s on an empty cache and ran slower (0.44 s against
        0.34 s per value and gradient of the bound at n = 20 000, M = 300, d = 5). PyTensor's fallback warns that it
        is taken: here it is chosen, so that warning is not passed on."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
            return numba_basic.generate_fallback_impl(op, node, **kwargs), 4  # 4: moved here from _titsias.py


class _RegisterAfterDispatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when the dispatch package is imported, it lets the other finders find it and runs
    `_register` once the package has executed; then it leaves `sys.meta_path`."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _DISPATCH:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _register()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Register now if the dispatch is already imported, else when it is."""
    if _DISPATCH in sys.modules:
        _register()
    elif not any(isinstance(finder, _RegisterAfterDispatch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterDispatch())
