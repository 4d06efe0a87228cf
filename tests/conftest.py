"""Shared test settings: the reference module importable, and each xdist worker's share of the cores for BLAS."""

import os
import sys

from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))  # so that tests can `import reference`


def blas_threads_per_worker() -> int:
    """BLAS threads for one test process: cores // xdist workers (all the cores without xdist)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def _limit_blas_threads() -> None:
    """Each xdist worker's BLAS on its share of the cores, in this process and the processes it starts.

    OpenBLAS starts a thread per core in every process, and idle ones spin: two workers with two threads each on two
    cores slowed BLAS-heavy tests up to 7× (the HSGP basis test 17.6 s in the suite, 2.6 s alone) and the warm suite
    from 135 s to 188 s (BENCHMARKS.md, "Session 16"). numpy is loaded before this file: its BLAS is limited in place,
    the environment covers what loads later (SciPy's own OpenBLAS) and child processes.
    """
    if "PYTEST_XDIST_WORKER_COUNT" not in os.environ:
        return
    threads = blas_threads_per_worker()
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    threadpool_limits(threads, user_api="blas")


_limit_blas_threads()
