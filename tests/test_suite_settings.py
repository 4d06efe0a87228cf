"""The test suite's own settings (conftest.py): xdist workers do not oversubscribe the cores with BLAS threads."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_info

from conftest import blas_threads_per_worker


@pytest.mark.skipif("PYTEST_XDIST_WORKER_COUNT" not in os.environ, reason="one process: BLAS keeps all the cores")
def test_each_xdist_worker_runs_blas_on_its_share_of_the_cores():
    scipy.linalg.cholesky(np.eye(2))  # SciPy's own OpenBLAS loaded (after conftest: limited by the environment)
    expected = blas_threads_per_worker()
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert len(blas) >= 1 and {lib["num_threads"] for lib in blas} == {expected}, blas
    # and a process a test starts (the CLI, Dask workers) inherits the limit
    child = "import numpy, threadpoolctl; print({i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'})"
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout.strip()
    assert out == str({expected})
