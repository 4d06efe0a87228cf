"""BLAS thread pools limited to one thread while a block runs: numpy's own pool, or every pool for a small problem."""

import contextlib
import os
import threading
from collections.abc import Iterator

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["SMALL_PROBLEM_MAX_N", "blas_for_size", "numpy_blas_on_one_thread"]

#: a fit or a loop over draws whose matrices have at most this many rows runs every BLAS pool on one thread. Below
#: it a second thread gains nothing, and on a machine whose cores are busy with other work it waits for a core at
#: every call — an evaluation makes dozens (the inverse by halving, `_spd_inverse`). Empirical-Bayes fit time per
#: evaluation (RBF + noise), two threads over one, medians (`benchmarks/bench_blas_threads.py`, the 2-vCPU Xeon of
#: session 44): idle 1.31, 1.03, 1.08, 0.96 at n = 200, 500, 1000, 1500; beside one busy process 3.56, 3.22, 2.61,
#: 1.98; beside two 2.68, 2.69, 2.52, 4.74 — and once 4240 against 132 ms at n = 1000 (BENCHMARKS.md, session 44). The
#: MCMC draws' loop of the shipped PRML spec (n = 25) took 23–30 s instead of 3.0–5.2 s beside two busy processes
#: with two threads (session 28).
SMALL_PROBLEM_MAX_N = 1000


class _OneThread:
    """BLAS pools on one thread while blocks run, in blocks that may overlap across threads: numpy's own pool (its wheel
    carries an OpenBLAS apart from SciPy's), or every pool. One lock and one depth per kind; the pools' limits follow the
    widest kind still open and go back to what they were when the last block closes.

    numpy's pool alone: each pool leaves its threads spinning for a while after a call, so a loop that alternates them (a
    kernel's dot products in numpy, then SciPy's Cholesky) has each pool's threads competing with the other's for the
    cores (one draw of the diabetes model, n = 442: 39 ms against 16 ms with numpy's on one thread, on 2 cores). A numpy
    that shares SciPy's BLAS (conda) is then left as it is. The limit is the process's (OpenBLAS has one count).
    """

    def __init__(self):
        self.lock, self.depth, self.applied, self.limiter = threading.Lock(), {"numpy": 0, "every": 0}, None, None

    @contextlib.contextmanager
    def __call__(self, kind: str) -> Iterator[None]:
        with self.lock:
            self.depth[kind] += 1
            self._apply()
        try:
            yield
        finally:
            with self.lock:
                self.depth[kind] -= 1
                self._apply()

    def _apply(self) -> None:
        wanted = "every" if self.depth["every"] else "numpy" if self.depth["numpy"] else None
        if wanted == self.applied:
            return
        if self.limiter is not None:
            self.limiter.restore_original_limits()
            self.limiter = None
        if wanted is not None:
            numpy_dir = os.path.dirname(np.__file__)
            controller = ThreadpoolController()
            pools = [lib.filepath for lib in controller.lib_controllers if lib.user_api == "blas" and lib.filepath
                     and (wanted == "every" or lib.filepath.startswith((numpy_dir + os.sep, numpy_dir + ".libs" + os.sep)))]
            self.limiter = controller.select(filepath=pools).limit(limits=1) if pools else None
        self.applied = wanted


_one_thread = _OneThread()


def numpy_blas_on_one_thread():
    """numpy's own BLAS pool on one thread while the block runs; SciPy's as it is."""
    return _one_thread("numpy")


def blas_for_size(n: int, larger=contextlib.nullcontext):
    """Every BLAS pool on one thread for a problem of at most SMALL_PROBLEM_MAX_N rows; else `larger()` (nothing)."""
    return _one_thread("every") if n <= SMALL_PROBLEM_MAX_N else larger()
