"""Factor once, predict many times: `gp.condition` + 20 predictions against 20 calls of `gp.posterior` and of scikit-learn.

Run: .venv/bin/python benchmarks/bench_condition_predict.py [--n 2000] [--m 100] [--calls 20] [--repeats 5]

The same data, kernel (PRML sum kernel 1, 16, 0.1, 0.2; σ = 0.2; 1-D) and 20 query sets of m points in
one process. bayeskern A: `gp.condition(...)` once, then `.predict(Xq)` (mean and variance) for each set.
bayeskern B: `gp.posterior(..., Xnew=Xq)` for each set (refactorises every time, and builds the m × m
covariance). scikit-learn: `GaussianProcessRegressor(optimizer=None).fit` once, `.predict(return_std=True)`
per set — the peer's own factor-once path. Compile time is counted apart: one warm-up of every path
before timing. Reported: median over `repeats` of the whole 20-call sequence, and the ratios.
"""

import argparse
import statistics
import time

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

import bayeskern as bk

THETA, SIGMA = (1.0, 16.0, 0.1, 0.2), 0.2


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--m", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    a = parser.parse_args()
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(-1, 1, a.n))[:, None]
    y = np.sin(3 * X[:, 0]) + SIGMA * rng.standard_normal(a.n)
    queries = [rng.uniform(-1, 1, (a.m, 1)) for _ in range(a.calls)]
    kernel = bk.kernels.PRML(*THETA)
    t0, t1, t2, t3 = THETA
    sk_kernel = (skk.ConstantKernel(t0, "fixed") * skk.RBF(t1**-0.5, "fixed") + skk.ConstantKernel(t2, "fixed")
                 + skk.DotProduct(0.0, "fixed") * skk.ConstantKernel(t3, "fixed"))

    def once():
        conditioned = bk.gp.condition(kernel, X, y, SIGMA)
        return [conditioned.predict(q) for q in queries]

    def each():
        return [bk.gp.posterior(kernel, X, y, SIGMA, Xnew=q) for q in queries]

    def peer():
        gpr = GaussianProcessRegressor(sk_kernel, alpha=SIGMA**2, optimizer=None).fit(X, y)
        return [gpr.predict(q, return_std=True) for q in queries]

    compile_seconds = timed(lambda: (once(), each()))  # first calls: kernel graphs compiled (or loaded from disk)
    a_once, b_each, c_peer = (peer()[0][0], once()[0].mean, each()[0].mean)
    assert np.allclose(a_once, b_each, atol=1e-8) and np.allclose(b_each, c_peer, atol=1e-10)  # same numbers
    times = {"condition once": [], "posterior each": [], "scikit-learn": []}
    for _ in range(a.repeats):  # alternate the three, so that machine noise hits all alike
        times["condition once"].append(timed(once))
        times["posterior each"].append(timed(each))
        times["scikit-learn"].append(timed(peer))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"n = {a.n}, {a.calls} predictions of {a.m} points, median of {a.repeats}; first calls (compile) {compile_seconds:.2f} s")
    for k, v in med.items():
        print(f"  {k:16s} {v:8.3f} s   (min {min(times[k]):.3f}, max {max(times[k]):.3f})")
    print(f"  posterior each / condition once = {med['posterior each'] / med['condition once']:.1f}x")
    print(f"  scikit-learn / condition once   = {med['scikit-learn'] / med['condition once']:.2f}x")


if __name__ == "__main__":
    main()
