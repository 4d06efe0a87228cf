"""One value-and-gradient call of a collapsed BLR with a matrix Σ under PyTensor's Numba backend (what nutpie calls per step).

Run: .venv/bin/python benchmarks/bench_blr_matrix_prior.py N   (for an A/B, run it from a checkout of another commit with
     PYTHONPATH=<checkout>)

The model of `bench_nuts_compile.py --model blr-matrix` on N points: cubic polynomial features, Σ = scale · a fixed 4 × 4
SPD matrix, HalfNormal scale and noise. 500 unmeasured calls, then 5 rounds of 500; median µs per call, BLAS on one thread
(as `bayeskern.fit.mcmc` runs each chain). Prints the log density too, to compare two commits' numbers.
"""

import sys, time, warnings, statistics
warnings.simplefilter("ignore")
import numpy as np, pymc as pm, pytensor
import bayeskern as bk
from threadpoolctl import threadpool_limits
n = int(sys.argv[1])
X, y = bk.datasets.sinusoid(n, 0.2, seed=200)
S4 = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.1], [0.1, 0.0, 0.1, 0.3]])
with pm.Model() as model:
    scale, sigma = pm.HalfNormal("scale", 2.0), pm.HalfNormal("sigma", 0.5)
    bk.blr.likelihood("y", X, y, bk.features.Polynomial(3), prior_cov=scale * S4, sigma=sigma, collapsed=True)
f = model.compile_fn([model.logp(), *pytensor.grad(model.logp(), model.value_vars)], inputs=model.value_vars, mode="NUMBA")
pt_ = {"scale_log__": np.log(1.3), "sigma_log__": np.log(0.25)}
with threadpool_limits(1):
    for _ in range(500): f(pt_)
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(500): f(pt_)
        rounds.append((time.perf_counter() - t0) / 500 * 1e6)
print(f"n={n} median {statistics.median(rounds):.1f} µs per call ({min(rounds):.1f}-{max(rounds):.1f}); value {f(pt_)[0]:.12f}")
