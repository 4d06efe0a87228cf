"""C⁻¹ from its Cholesky factor: LAPACK's potri against bayeskern's halving (`_spd_inverse`), both twins, one process.

Run: .venv/bin/python benchmarks/bench_spd_inverse.py [--sizes 200 500 2000] [--threads 1 2] [--rounds 7]

The three alternate within each round, on copies of one factor; medians over the rounds, and potri / halving.
A second table: C⁻¹'s diagonal alone (what a leave-one-out predictive reads) from the lower factor L, three ways,
alternated the same way — the diagonal of the whole inverse by halving (`potri` on a copy of Lᵀ, what
`_linalg.loo_gaussian` did before session 44), SciPy's trtri and the column sums of squares of L⁻¹ (what kernel ridge
did), and `inverse_diagonal` (the triangular inverse by halving and the same sums).
"""

import argparse
import statistics
import time

import numpy as np
import scipy.linalg
from pytensor.link.numba.dispatch import basic as numba_basic  # (first: it registers bayeskern's Numba modules)
from threadpoolctl import threadpool_limits

from bayeskern._spd_inverse import inverse_diagonal, potri
from bayeskern._spd_inverse_numba import potri as potri_numba

numba_potri = numba_basic.numba_njit(final_function=True)(lambda A: potri_numba(A))


def seconds(fn, arrays) -> float:
    """Seconds per call of fn over the (fresh) arrays."""
    started = time.perf_counter()
    for a in arrays:
        fn(a)
    return (time.perf_counter() - started) / len(arrays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 2000])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print("| n | BLAS threads | LAPACK potri (ms) | halving, SciPy twin (ms) | halving, Numba twin (ms) | potri / SciPy twin | potri / Numba twin |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        A = np.random.default_rng(n).standard_normal((n, n))
        U = np.asfortranarray(scipy.linalg.cholesky(A @ A.T + n * np.eye(n), lower=False))
        calls = max(3, int(2e8 / n**3))
        for threads in args.threads:
            times = {"lapack": [], "scipy": [], "numba": []}
            with threadpool_limits(threads):
                numba_potri(np.array(U.T, order="C"))  # compiled before timing (on a copy: U.T is C-ordered already)
                for _ in range(args.rounds):
                    times["lapack"].append(seconds(lambda u: scipy.linalg.lapack.dpotri(u, lower=0, overwrite_c=1), [U.copy(order="F") for _ in range(calls)]))
                    times["scipy"].append(seconds(potri, [U.copy(order="F") for _ in range(calls)]))
                    times["numba"].append(seconds(numba_potri, [np.array(U.T, order="C") for _ in range(calls)]))
            lapack, ours, numba = (1e3 * statistics.median(times[k]) for k in ("lapack", "scipy", "numba"))
            print(f"| {n} | {threads} | {lapack:.3f} | {ours:.3f} | {numba:.3f} | {lapack / ours:.2f} | {lapack / numba:.2f} |", flush=True)
    diagonals(args)


def _trtri_diagonal(L):
    L_inv, _ = scipy.linalg.lapack.dtrtri(L, lower=1)
    return np.einsum("ki,ki->i", L_inv, L_inv)


def diagonals(args) -> None:
    """The second table: [C⁻¹]ᵢᵢ from L, three ways (see the module's docstring)."""
    ways = {"potri's diagonal": lambda L: np.diagonal(potri(np.array(L.T, order="F"))).copy(), "SciPy trtri": _trtri_diagonal,
            "inverse_diagonal": inverse_diagonal}
    print("\n| n | BLAS threads | " + " | ".join(f"{way} (ms)" for way in ways) + " | potri's diagonal / inverse_diagonal |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        A = np.random.default_rng(n).standard_normal((n, n))
        L = np.linalg.cholesky(A @ A.T + n * np.eye(n))
        calls = max(3, int(2e8 / n**3))
        for threads in args.threads:
            times = {way: [] for way in ways}
            with threadpool_limits(threads):
                for _ in range(args.rounds):
                    for way, fn in ways.items():
                        times[way].append(seconds(fn, [L] * calls))
            ms = [1e3 * statistics.median(times[way]) for way in ways]
            print(f"| {n} | {threads} | " + " | ".join(f"{t:.3f}" for t in ms) + f" | {ms[0] / ms[2]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
