"""BLR with many features on few points: the n × n route (the kernel trick) against the M × M weights route and numpy.

    .venv/bin/python benchmarks/bench_blr_features.py [--n 30 300] [--features 800 3200 12800] [--repeats 5]

Random Fourier features of an RBF (ℓ = 0.3) on the sinusoid, Σ = I, σ = 0.2; one process, the three alternated, medians.
bayeskern: `blr.condition` + `predict` at 101 points (mean and variance); with n < M it factorises D = I + ΨΨᵀ/σ².
"weights route": the same solver told Φ is not held (`DesignRows.Phi = None`; its one block is still the Φ computed
once), which takes B = I + ΨᵀΨ/σ² (M × M) — what every BLR did before. numpy: the n × n formulas written out (mean k*ᵀC⁻¹t, variance diag k** − k*ᵀC⁻¹k*).
Φ is computed once outside the timings (the same for all three).
"""

import argparse
import statistics
import time

import numpy as np
import scipy.linalg

import bayeskern as bk
from bayeskern.blr import DesignRows, WeightSpaceBLR


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[30, 300])
    parser.add_argument("--features", type=int, nargs="+", default=[800, 3200, 12800])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| n | M | bayeskern n × n (s) | weights route M × M (s) | numpy n × n (s) | weights / bayeskern | max |Δ mean| |")
    print("|---|---|---|---|---|---|---|")
    for n in args.n:
        X, t = bk.datasets.sinusoid(n, 0.2, 5)
        Xs = np.linspace(0, 1, 101)[:, None]
        for M in args.features:
            phi = bk.features.RandomFourier(M, 0.3, input_dim=1, seed=0)
            Phi, Phi_s = phi(X), phi(Xs)

            def ours():
                rows = DesignRows(phi, X, t, Phi)
                p = WeightSpaceBLR(phi, X, t, 0.2, np.ones(M), rows)._from_features(Phi_s, False)
                return p[0]

            def weights():
                rows = DesignRows(phi, X, t, Phi)
                rows.gram  # ΦᵀΦ formed, as the constructor did before the n × n route
                rows.Phi = None  # the solver's test for the n × n route; its passes over Φ still read the Φ computed above
                rows.blocks = lambda: iter([(slice(0, n), Phi)])
                return WeightSpaceBLR(phi, X, t, 0.2, np.ones(M), rows)._from_features(Phi_s, False)[0]

            def numpy_formulas():
                L = scipy.linalg.cho_factor(Phi @ Phi.T + 0.04 * np.eye(n), lower=True)
                k = Phi_s @ Phi.T
                var = np.sum(Phi_s**2, axis=1) - np.sum(k * scipy.linalg.cho_solve(L, k.T).T, axis=1)
                return k @ scipy.linalg.cho_solve(L, t), var

            times = {"ours": [], "weights": [], "numpy": []}
            for _ in range(args.repeats):
                for name, fn in (("ours", ours), ("weights", weights), ("numpy", numpy_formulas)):
                    seconds, out = timed(fn)
                    times[name].append(seconds)
                    times.setdefault(name + "_out", out)
            med = {k: statistics.median(v) for k, v in times.items() if not k.endswith("_out")}
            delta = float(np.max(np.abs(times["ours_out"] - times["weights_out"])))
            print(f"| {n} | {M} | {med['ours']:.4f} | {med['weights']:.3f} | {med['numpy']:.4f} | {med['weights'] / med['ours']:.0f} | {delta:.1e} |")


if __name__ == "__main__":
    main()
