"""The marginal-likelihood Op alone against LAPACK: one value-and-gradient call vs one Cholesky, one potri.

Run: .venv/bin/python benchmarks/bench_gaussian_logp.py [--sizes 200 500 1000 2000] [--repeats 9] [--threads 1]

C = RBF Gram of uniform 1-D inputs + 0.1·I. Medians of `repeats` calls, same process, same matrix:
bayeskern's compiled kernel (`_logp_and_gradients`: potrf, potrs, potri, the condition estimate where C⁻¹ does
not settle the rule, and the gradient ½(ααᵀ − C⁻¹)) and its SciPy implementation (`_logp_and_gradients_scipy`,
inside `reused_arrays` as an empirical-Bayes fit runs it) against `scipy.linalg.cholesky`, `dpotri` of the factor
and `dpocon` (the condition estimate each call asked for before session 23). The exact gradient needs C⁻¹, so
potrf + potri (about three Cholesky factorisations) is the floor. `--threads`: BLAS threads (default: as they come).
"""

import argparse

import numpy as np
import scipy.linalg
from bench_gp_posterior import median_time

from threadpoolctl import threadpool_limits

from bayeskern._reused_arrays import reused_arrays
from bayeskern._gaussian_logp import _logp_and_gradients_scipy
from bayeskern._gaussian_logp_numba import _logp_and_gradients


def median_ms(fn, repeats):
    return 1e3 * median_time(fn, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| n | Op, Numba (ms) | Op, SciPy (ms) | Cholesky (ms) | potri (ms) | pocon (ms) | Op/Cholesky | (Cholesky + potri)/Cholesky |")
    print("|---|---|---|---|---|---|---|---|")
    with threadpool_limits(args.threads), reused_arrays():
        for n in args.sizes:
            x = rng.uniform(-2, 2, n)
            K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
            C = K + 0.1 * np.eye(n)
            t = rng.standard_normal(n)
            _logp_and_gradients(K, t, 0.1, False)  # compile (or load from Numba's cache)
            op = median_ms(lambda: _logp_and_gradients(K, t, 0.1, False), args.repeats)
            op_scipy = median_ms(lambda: _logp_and_gradients_scipy(K, t, 0.1, False), args.repeats)
            chol = median_ms(lambda: scipy.linalg.cholesky(C, lower=True, check_finite=False), args.repeats)
            L = scipy.linalg.cholesky(C, lower=True, check_finite=False)
            potri = median_ms(lambda: scipy.linalg.lapack.dpotri(L, lower=1), args.repeats)
            norm1 = np.linalg.norm(C, 1)
            pocon = median_ms(lambda: scipy.linalg.lapack.dpocon(L, norm1, uplo="L"), args.repeats)
            print(f"| {n} | {op:.2f} | {op_scipy:.2f} | {chol:.2f} | {potri:.2f} | {pocon:.2f} | {op / chol:.2f} | "
                  f"{(chol + potri) / chol:.2f} |", flush=True)

if __name__ == "__main__":
    main()
