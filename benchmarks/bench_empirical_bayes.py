"""Empirical Bayes: bayeskern vs scikit-learn vs PyMC's find_MAP, same data, same kernel, one process.

Run: .venv/bin/python benchmarks/bench_empirical_bayes.py [--sizes 200 500 1000 2000] [--dims 1 5]
     [--restarts 3] [--find-map-max-n 1000] [--repeats 1]

Kernel: amp · RBF(ℓ) + σ²I (ARD ℓ, one per input column, for d > 1); scikit-learn's
ConstantKernel·RBF + WhiteKernel with `n_restarts_optimizer = restarts − 1`; bayeskern's
`fit.empirical_bayes(restarts=restarts)`. bayeskern is fitted twice: the first fit in the process
includes compiling (reported separately), the next `--repeats` are timed, alternated with scikit-learn's fits (medians
reported: wall times on a shared machine move by tens of per cent from one minute to the next). find_MAP: the same model
written with `pm.gp.Marginal`, one start (so its ratio flatters find_MAP: bayeskern runs `restarts`).
Per evaluation: bayeskern's value-and-gradient call against one `scipy.linalg.cholesky` of C.
"""

import argparse
import statistics
import time
import warnings

import numpy as np
import pymc as pm
import scipy.linalg
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

import bayeskern as bk
from bayeskern.fit.empirical_bayes import _Objective


def data(n, d, seed=0):
    rng = np.random.default_rng(seed + 17 * d + n)
    X = rng.uniform(-2, 2, (n, d))
    f = np.sin(2 * X[:, 0]) + (0.5 * np.cos(X[:, 1:] * np.arange(1, d)).sum(1) if d > 1 else 0)
    return X, f + 0.2 * rng.standard_normal(n)


def bayeskern_model(X, y):
    """The first start is scikit-learn's: amp = 1, ℓ = 1, σ² = 0.1 (its initial kernel below)."""
    d = X.shape[1]
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", np.float64(2.0), initval=1.0)
        ls = pm.HalfNormal("ls", np.float64(3.0), shape=d if d > 1 else (), initval=np.ones(d) if d > 1 else 1.0)
        s = pm.HalfNormal("s", np.float64(1.0), initval=np.sqrt(0.1))
        bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls), s)
    return model


def pymc_marginal_model(X, y):
    d = X.shape[1]
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", np.float64(2.0))
        ls = pm.HalfNormal("ls", np.float64(3.0), shape=d if d > 1 else ())
        s = pm.HalfNormal("s", np.float64(1.0))
        gp = pm.gp.Marginal(cov_func=amp * pm.gp.cov.ExpQuad(d, ls=ls))
        gp.marginal_likelihood("y", X=X, y=y, sigma=s)
    return model


class CountingGPR(GaussianProcessRegressor):
    """scikit-learn's GPR, counting its log-marginal-likelihood evaluations and their time."""

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        t0 = time.perf_counter()
        out = super().log_marginal_likelihood(theta, eval_gradient, clone_kernel)
        if theta is not None and eval_gradient:  # the optimiser's calls, not the final report
            self.eval_seconds.append(time.perf_counter() - t0)
        return out


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def per_eval_seconds(model, X, repeats=7):
    objective = _Objective(model, model.observed_RVs[0], include_prior=False)
    z = objective.flat(objective.point)
    objective(z)
    rng = np.random.default_rng(0)
    evals = []
    for _ in range(repeats):  # at new points each time: the objective remembers its latest evaluations
        evals.append(timed(lambda: objective(z + 1e-3 * rng.standard_normal(len(z))))[1])
    s = objective.params(z)
    C = np.asarray(bk.kernels.RBF(s["ls"]).evaluate(X)) * s["amp"] + s["s"] ** 2 * np.eye(len(X))
    chols = [timed(lambda: scipy.linalg.cholesky(C, lower=True, check_finite=False))[1] for _ in range(repeats)]
    return statistics.median(evals), statistics.median(chols)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000, 2000])
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--find-map-max-n", type=int, default=1000, help="skip find_MAP above this n (it is slow)")
    parser.add_argument("--repeats", type=int, default=1, help="timed fits of each library, alternated (medians)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=bk.fit.FitWarning)
    warnings.filterwarnings("ignore", module="sklearn")
    print(f"restarts = {args.restarts}, medians of {args.repeats} alternated timed fits")
    print("| d | n | bk compile (s) | bk fit (s) | sklearn fit (s) | sklearn/bk | find_MAP (s) | find_MAP/bk "
          "| LML bk − sklearn | bk evals | sklearn evals | eval (ms) | sklearn eval (ms) | Cholesky (ms) | eval/Cholesky |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in args.dims:
        for n in args.sizes:
            X, y = data(n, d)
            first, first_s = timed(lambda: bk.fit.empirical_bayes(bayeskern_model(X, y), restarts=args.restarts, seed=0))
            ours_times, sk_times = [], []
            for _ in range(args.repeats):
                ours, seconds = timed(lambda: bk.fit.empirical_bayes(bayeskern_model(X, y), restarts=args.restarts, seed=0))
                ours_times.append(seconds)
                kernel = skk.ConstantKernel(1.0, (1e-5, 1e5)) * skk.RBF(np.ones(d), (1e-5, 1e5)) + skk.WhiteKernel(0.1, (1e-8, 1e2))
                counting = CountingGPR(kernel, n_restarts_optimizer=args.restarts - 1, random_state=0)
                counting.eval_seconds = []
                sk, seconds = timed(lambda: counting.fit(X, y))
                sk_times.append(seconds)
            ours_s, sk_s = statistics.median(ours_times), statistics.median(sk_times)
            if n <= args.find_map_max_n:
                model = pymc_marginal_model(X, y)
                _, fm_s = timed(lambda: pm.find_MAP(model=model, progressbar=False, return_inferencedata=False, jitter=None))
                fm, fm_ratio = f"{fm_s:.2f}", f"{fm_s / ours_s:.1f}"
            else:
                fm, fm_ratio = "not run", "–"
            ev, ch = per_eval_seconds(bayeskern_model(X, y), X)
            print(
                f"| {d} | {n} | {first_s - ours_s:.2f} | {ours_s:.2f} | {sk_s:.2f} | {sk_s / ours_s:.2f} | {fm} | {fm_ratio} "
                f"| {ours.log_marginal_likelihood - sk.log_marginal_likelihood_value_:+.2e} | {ours.n_evaluations} "
                f"| {len(counting.eval_seconds)} | {1e3 * ev:.1f} | {1e3 * statistics.median(counting.eval_seconds):.1f} "
                f"| {1e3 * ch:.1f} | {ev / ch:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
