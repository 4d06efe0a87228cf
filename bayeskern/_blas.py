"""BLAS thread pools limited to one thread while a block runs: numpy's own pool, or every pool for a small problem."""

import contextlib
import os

import numpy as np
from threadpoolctl import ThreadpoolController

from bayeskern._compile import _SharedScope

__all__ = ["SMALL_PROBLEM_MAX_N", "blas_for_size", "numpy_blas_on_one_thread"]

#: a fit or a loop over draws whose matrices have at most this many rows runs every BLAS pool on one thread. Below
#: it a second thread gains nothing (LAPACK's potrf + potri on this 2-core machine: one thread as fast or faster up to
#: n = 150, two 20–25 % faster from n = 200), and on a machine whose cores are busy with other work a pool's second
#: thread waits for a core at every small call: the MCMC draws' loop of the shipped PRML spec (n = 25) took 23–30 s
#: instead of 3.0–5.2 s beside two busy processes (BENCHMARKS.md, session 28)
SMALL_PROBLEM_MAX_N = 150


class _BlasOnOneThread(_SharedScope):
    """BLAS pools on one thread while a block runs, restored when the last overlapping block closes.

    `numpy_only`: numpy's own pool (its wheel carries an OpenBLAS apart from SciPy's), SciPy's left as it is: each pool
    leaves its threads spinning for a while after a call, so a loop that alternates them (a kernel's dot products in
    numpy, then SciPy's Cholesky) has each pool's threads competing with the other's for the cores (one draw of the
    diabetes model, n = 442: 39 ms against 16 ms with numpy's on one thread, on 2 cores). A numpy that shares SciPy's
    BLAS (conda) is then left as it is. The limit is the process's (OpenBLAS has one count): blocks open in several
    threads set it once and restore it when the last closes.
    """

    def __init__(self, numpy_only: bool):
        super().__init__()
        self.numpy_only = numpy_only

    def _first_opened(self) -> None:
        numpy_dir = os.path.dirname(np.__file__)
        controller = ThreadpoolController()
        pools = [lib.filepath for lib in controller.lib_controllers if lib.user_api == "blas" and lib.filepath
                 and (not self.numpy_only or lib.filepath.startswith((numpy_dir + os.sep, numpy_dir + ".libs" + os.sep)))]
        self.limiter = controller.select(filepath=pools).limit(limits=1) if pools else None

    def _last_closed(self) -> None:
        if self.limiter is not None:
            self.limiter.restore_original_limits()
        self.limiter = None


numpy_blas_on_one_thread = _BlasOnOneThread(numpy_only=True)
_every_blas_on_one_thread = _BlasOnOneThread(numpy_only=False)


def blas_for_size(n: int, larger=contextlib.nullcontext):
    """Every BLAS pool on one thread for a problem of at most SMALL_PROBLEM_MAX_N rows; else `larger()` (nothing)."""
    return _every_blas_on_one_thread() if n <= SMALL_PROBLEM_MAX_N else larger()
