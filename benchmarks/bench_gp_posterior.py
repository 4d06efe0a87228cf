"""Exact GP posterior at fixed hyperparameters: bayeskern vs scikit-learn, same data, one process.

Run: .venv/bin/python benchmarks/bench_gp_posterior.py
Times (a) the first call, which includes compiling the kernel graph, and (b) the steady state,
the median of repeated calls. scikit-learn: GaussianProcessRegressor(optimizer=None).fit + predict
with return_std, plus its log marginal likelihood. bayeskern: gp.posterior, which also returns the
full predictive covariance (scikit-learn's return_std does not).
"""

import statistics
import time
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

import bayeskern as bk


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    warnings.filterwarnings("ignore", message="divide by zero encountered in log")  # sklearn's log(sigma_0=0)
    t0_, t1_, t2_, t3_, sigma = 1.0, 16.0, 0.1, 0.2, 0.2
    print("| n | m | bayeskern first call (s) | bayeskern steady (s) | scikit-learn steady (s) | ratio sklearn/bayeskern |")
    print("|---|---|---|---|---|---|")
    for n, m in [(200, 200), (1000, 200), (2000, 500)]:
        rng = np.random.default_rng(n)
        X = rng.uniform(0, 1, (n, 1))
        t = np.sin(2 * np.pi * X[:, 0]) + sigma * rng.standard_normal(n)
        Xs = np.linspace(-0.1, 1.1, m)[:, None]
        ours_kernel = bk.kernels.PRML(t0_, t1_, t2_, t3_)
        their_kernel = (skk.ConstantKernel(t0_) * skk.RBF(1 / np.sqrt(t1_)) + skk.ConstantKernel(t2_)
                        + skk.ConstantKernel(t3_) * skk.DotProduct(sigma_0=0.0))

        def ours():
            return bk.gp.posterior(ours_kernel, X, t, sigma=sigma, Xnew=Xs)

        def theirs():
            gpr = GaussianProcessRegressor(their_kernel, alpha=sigma**2, optimizer=None).fit(X, t)
            return gpr.predict(Xs, return_std=True), gpr.log_marginal_likelihood_value_

        start = time.perf_counter()
        post = ours()
        first = time.perf_counter() - start
        (mean, std), lml = theirs()
        assert np.allclose(post.mean, mean, rtol=1e-7, atol=1e-9) and np.isclose(post.log_marginal_likelihood, lml)
        repeats = 15 if n <= 1000 else 5
        t_ours, t_theirs = median_time(ours, repeats), median_time(theirs, repeats)
        print(f"| {n} | {m} | {first:.3f} | {t_ours:.4f} | {t_theirs:.4f} | {t_theirs / t_ours:.2f} |")


if __name__ == "__main__":
    main()
