"""bayeskern's Ops under PyTensor's Numba backend, registered when that backend's dispatch is first imported.

Numba and PyTensor's Numba dispatch are imported only by what compiles with Numba (a fit beyond NUMPY_MAX_N, NUTS,
a user's `pm.sample`): importing them cost the README's 25-point fit ~0.3 s of its whole process (2.5 → 2.2 s,
measured when this was made), and it runs none of their code. Whoever imports `pytensor.link.numba.dispatch` first — PyTensor's Numba linker, nutpie,
a user — gets bayeskern's implementations registered right after it, through a one-shot import hook
(`install`, called by `import bayeskern`).
"""

import importlib.abc
import importlib.util
import sys

__all__ = ["install"]

_DISPATCH = "pytensor.link.numba.dispatch"


def _register() -> None:
    """Register the Numba implementations of GaussianLogp, WeightSpaceEvidence, LowerPairs and TitsiasBound with PyTensor's Numba dispatch."""
    import bayeskern._gaussian_logp_numba  # noqa: F401
    import bayeskern._lower_pairs_numba  # noqa: F401
    import bayeskern._weight_space_evidence_numba  # noqa: F401
    import bayeskern.approx._titsias_numba  # noqa: F401


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
