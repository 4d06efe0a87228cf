"""bayeskern: Bayesian kernel methods on PyMC — Gaussian processes and Bayesian linear regression."""

import importlib

from bayeskern import _exit, _numba_backend

__all__ = ["approx", "batch", "blr", "checks", "datasets", "features", "fit", "gp", "kernels", "ntk", "smoothing"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """`bayeskern.gp` and the other subpackages, imported on first use (PEP 562): `import bayeskern` alone imports no
    PyMC or PyTensor, so a process that only needs the command line (or a Dask worker being set up) stays light."""
    if name in __all__:
        return importlib.import_module(f"bayeskern.{name}")
    raise AttributeError(f"module 'bayeskern' has no attribute {name!r}")


_numba_backend.install()  # bayeskern's Numba implementations, registered when PyTensor's Numba dispatch is imported
_exit.install()  # no cyclic garbage collection at interpreter exit: 0.3-0.6 s of every process (see _exit)
