"""The marginal-likelihood Op alone against LAPACK: one value-and-gradient call vs one Cholesky, one potri.

Run: .venv/bin/python benchmarks/bench_gaussian_logp.py [--sizes 500 1000 2000] [--repeats 9]

C = RBF Gram of uniform 1-D inputs + 0.1·I. Medians of `repeats` calls, same process, same matrix:
bayeskern's compiled kernel (`_logp_and_gradients`: potrf, condition estimate, potrs, potri and the
gradient ½(ααᵀ − C⁻¹)) against `scipy.linalg.cholesky` and `scipy.linalg.lapack.dpotri` of the
factor. The exact gradient needs C⁻¹, so potrf + potri (about three Cholesky factorisations) is the floor.
"""

import argparse

import numpy as np
import scipy.linalg
from bench_gp_posterior import median_time

from bayeskern._gaussian_logp_numba import _logp_and_gradients


def median_ms(fn, repeats):
    return 1e3 * median_time(fn, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| n | Op (ms) | Cholesky (ms) | potri (ms) | Op/Cholesky | (Cholesky + potri)/Cholesky |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        x = rng.uniform(-2, 2, n)
        K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
        C = K + 0.1 * np.eye(n)
        t = rng.standard_normal(n)
        _logp_and_gradients(K, t, 0.1, False)  # compile (or load from Numba's cache)
        op = median_ms(lambda: _logp_and_gradients(K, t, 0.1, False), args.repeats)
        chol = median_ms(lambda: scipy.linalg.cholesky(C, lower=True, check_finite=False), args.repeats)
        L = scipy.linalg.cholesky(C, lower=True, check_finite=False)
        potri = median_ms(lambda: scipy.linalg.lapack.dpotri(L, lower=1), args.repeats)
        print(f"| {n} | {op:.1f} | {chol:.1f} | {potri:.1f} | {op / chol:.2f} | {(chol + potri) / chol:.2f} |", flush=True)


if __name__ == "__main__":
    main()
