"""One value-and-gradient call of a collapsed BLR with a matrix Σ under PyTensor's Numba backend (what nutpie calls per step).

Run: .venv/bin/python benchmarks/bench_blr_matrix_prior.py N   (for an A/B, run it from a checkout of another commit with
     PYTHONPATH=<checkout>)

`collapsed_blr` (also `bench_nuts_compile.py --model blr | blr-matrix`): cubic polynomial features of N points of the
sinusoid, Σ = scale · a fixed 4 × 4 SPD matrix (or the scale alone), HalfNormal scale and noise. 500 unmeasured calls,
then 5 rounds of 500; median µs per call, BLAS on one thread (as `bayeskern.fit.mcmc` runs each chain). Prints the log
density too, to compare two commits' numbers.
"""

import statistics
import sys
import time
import warnings

import numpy as np
import pymc as pm
import pytensor
from threadpoolctl import threadpool_limits

import bayeskern as bk

S4 = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.1], [0.1, 0.0, 0.1, 0.3]])


def collapsed_blr(n: int, matrix: bool = True) -> pm.Model:
    """The collapsed BLR on n points: Σ = scale · S4 (`matrix`) or the scale alone."""
    X, y = bk.datasets.sinusoid(n, 0.2, seed=200)
    with pm.Model() as model:
        scale, sigma = pm.HalfNormal("scale", 2.0), pm.HalfNormal("sigma", 0.5)
        bk.blr.likelihood("y", X, y, bk.features.Polynomial(3), prior_cov=scale * S4 if matrix else scale, sigma=sigma, collapsed=True)
    return model


def main() -> None:
    warnings.simplefilter("ignore")
    n = int(sys.argv[1])
    model = collapsed_blr(n)
    f = model.compile_fn([model.logp(), *pytensor.grad(model.logp(), model.value_vars)], inputs=model.value_vars, mode="NUMBA")
    point = {"scale_log__": np.log(1.3), "sigma_log__": np.log(0.25)}
    with threadpool_limits(1):
        for _ in range(500):
            f(point)
        rounds = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(500):
                f(point)
            rounds.append((time.perf_counter() - t0) / 500 * 1e6)
    print(f"n={n} median {statistics.median(rounds):.1f} µs per call ({min(rounds):.1f}-{max(rounds):.1f}); value {f(point)[0]:.12f}")


if __name__ == "__main__":
    main()
