"""MCMC on several models of one structure in one process: bk.fit.mcmc (nutpie compiled once per structure) vs pm.sample.

Models: amp·RBF(ℓ) + σ²I with LogNormal priors on 20, 20 and 31 points of different data (issue 16; the test suite and
any analysis that samples several data sets of one model). Each model is sampled by `bk.fit.mcmc` and by
`pm.sample(nuts_sampler="nutpie")` (both no fastmath, one BLAS thread per chain), 2 chains × (200 tune + 200 draws); wall
seconds per call including compilation (bk.fit.mcmc's also its exact LOO densities at every draw), and whether
the draws are identical.

    .venv/bin/python benchmarks/bench_mcmc_reuse.py
"""

import time
import warnings

import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

import bayeskern as bk
from bayeskern._compile import exact_arithmetic


def model(seed: int, n: int) -> pm.Model:
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 1, n))[:, None]
    y = np.sin(6 * X[:, 0]) + 0.2 * rng.standard_normal(n)
    with pm.Model() as m:
        amp = pm.LogNormal("amp", 0.0, np.float64(0.5))
        ls = pm.LogNormal("ls", np.log(0.2), np.float64(0.5))
        s = pm.LogNormal("s", np.log(0.2), np.float64(0.5))
        bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls), s)
    return m


def main() -> None:
    warnings.simplefilter("ignore")
    print("| model | n | bk.fit.mcmc s | pm.sample s | draws identical |")
    print("|---|---|---|---|---|")
    for k, n in enumerate((20, 20, 31)):
        m = model(k, n)
        started = time.perf_counter()
        ours = bk.fit.mcmc(m, draws=200, tune=200, chains=2, seed=3)
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        with exact_arithmetic(), threadpool_limits(1):
            theirs = pm.sample(draws=200, tune=200, chains=2, random_seed=3, nuts_sampler="nutpie", model=m, progressbar=False,
                               compute_convergence_checks=False)
        theirs_s = time.perf_counter() - started
        same = all(np.array_equal(ours["posterior"][v].values, theirs["posterior"][v].values) for v in ("amp", "ls", "s"))
        print(f"| {k + 1} | {n} | {ours_s:.2f} | {theirs_s:.2f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
