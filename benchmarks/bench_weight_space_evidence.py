"""The weight-space evidence Op against differentiating the same formula's Cholesky symbolically, under PyTensor's Numba backend.

Run: .venv/bin/python benchmarks/bench_weight_space_evidence.py [--sizes 12 40 120] [--rounds 5] [--cold-rounds 2]
     [--accuracy M ...]  (needs mpmath: `pip install --target DIR mpmath` and PYTHONPATH=DIR)

Both graphs take the prior variances v (M,) and σ² and return log N(t | 0, ΦVΦᵀ + σ²I) with its gradient for the same
data (Gaussian-basis features of 5000 points). "op" is `bayeskern._weight_space_evidence` (one Op, its Numba
implementation) on the R factor of [Φ | t]. "symbolic" is the formula bayeskern used until session 41 for the collapsed
HSGP (and, with one more O(nM) pass, for a BLR with a diagonal Σ) on ΦᵀΦ, Φᵀt and tᵀt: Cholesky and triangular solves
differentiated by PyTensor.
- Per call: the two compiled functions alternated in one process, `--rounds` rounds of 500 calls after 500 unmeasured
  ones, median µs per call, BLAS on one thread (as `bayeskern.fit.mcmc` runs each chain).
- Cold compile: a new process per variant on an empty compile directory (`PYTENSOR_FLAGS=base_compiledir`), the
  two alternated `--cold-rounds` times; the figure is the compile and first call of the value-and-gradient function
  alone (imports apart).
- `--accuracy`: both against 60-digit arithmetic on 500 of the points (ΦᵀΦ, Φᵀt and tᵀt of the float data formed exactly,
  the gradients by central differences with h = 1e-25).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits


def data(M: int, n: int = 5000):
    """(Φ, t): Gaussian-basis features (M centres on [−1, 1], width 0.2) of n points, a sine plus noise."""
    rng = np.random.default_rng(M)
    x = rng.uniform(-1, 1, n)
    t = np.sin(3 * x) + 0.2 * rng.standard_normal(n)
    return np.exp(-0.5 * ((x[:, None] - np.linspace(-1, 1, M)[None, :]) / 0.2) ** 2), t


def symbolic_evidence(gram, proj, tt, n, v, s2):
    """The replaced formula: tᵀC⁻¹t = (tᵀt − ‖L_B⁻¹Dq‖²/σ²)/σ², log|C| = n log σ² + 2 Σ log (L_B)ᵢᵢ."""
    import pytensor.tensor as pt

    D = pt.sqrt(v)
    LB = pt.linalg.cholesky(pt.eye(gram.shape[0]) + D[:, None] * gram * D[None, :] / s2)
    u = pt.linalg.solve_triangular(LB, D * proj, lower=True)
    quad = (tt - pt.sum(pt.square(u)) / s2) / s2
    return -0.5 * quad - 0.5 * n * pt.log(s2) - pt.sum(pt.log(pt.diagonal(LB))) - 0.5 * n * np.log(2 * np.pi)


def compiled(variant: str, M: int, n: int = 5000):
    import pytensor
    import pytensor.tensor as pt

    from bayeskern._weight_space_evidence import weight_space_evidence
    from bayeskern.blr import DesignRows

    Phi, t = data(M, n)
    v, s2 = pt.vector("v"), pt.scalar("s2")
    if variant == "op":
        logp = weight_space_evidence([pt.constant(x) for x in DesignRows(None, None, t, Phi).r_factor], n, v, s2)
    else:
        logp = symbolic_evidence(*(pt.constant(x) for x in (Phi.T @ Phi, Phi.T @ t, float(t @ t))), n, v, s2)
    return pytensor.function([v, s2], [logp, *pytensor.grad(logp, [v, s2])], mode="NUMBA")


def cold(variant: str, M: int) -> float:
    """The seconds of one compile, in a new process on an empty compile directory."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={d}")
        out = subprocess.run([sys.executable, __file__, "--compile-only", variant, str(M)], env=env, check=True,
                             capture_output=True, text=True).stdout
    return float(out.split()[-1])


def accuracy(M: int) -> None:
    """Each variant's largest error in log p and relative error in ∂/∂v and ∂/∂σ², against 60-digit arithmetic."""
    import mpmath as mp

    mp.mp.dps = 60
    n = 500
    Phi, t = data(M, n)
    columns, tm = [[mp.mpf(x) for x in col] for col in Phi.T], [mp.mpf(x) for x in t]
    P = mp.matrix([[mp.fdot(a, b) for b in columns] for a in columns])
    q, tt = mp.matrix([mp.fdot(a, tm) for a in columns]), mp.fdot(tm, tm)
    v, s2 = np.random.default_rng(0).uniform(0.1, 2.0, M), 0.04

    def logp(v, s2):
        D = [mp.sqrt(x) for x in v]
        B = mp.matrix(M, M)
        for i in range(M):
            for j in range(M):
                B[i, j] = D[i] * P[i, j] * D[j] / s2 + (1 if i == j else 0)
        L = mp.cholesky(B)
        w = mp.lu_solve(L, mp.matrix([D[i] * q[i] for i in range(M)]))
        quad = (tt - sum(x**2 for x in w) / s2) / s2
        return -quad / 2 - n * mp.log(s2) / 2 - sum(mp.log(L[i, i]) for i in range(M)) - n * mp.log(2 * mp.pi) / 2

    vm, sm, h = [mp.mpf(x) for x in v], mp.mpf(s2), mp.mpf("1e-25")
    d_v = np.array([float((logp([x + h * (i == k) for i, x in enumerate(vm)], sm)
                           - logp([x - h * (i == k) for i, x in enumerate(vm)], sm)) / (2 * h)) for k in range(M)])
    d_s2 = float((logp(vm, sm + h) - logp(vm, sm - h)) / (2 * h))
    value = float(logp(vm, sm))
    for variant in ("op", "symbolic"):
        out = compiled(variant, M, n)(v, s2)
        print(f"| {M} | {variant} | {abs(out[0] - value):.1e} | {np.max(np.abs(out[1] - d_v) / np.abs(d_v)):.1e} "
              f"| {abs(out[2] - d_s2) / abs(d_s2):.1e} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 40, 120])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold-rounds", type=int, default=2)
    parser.add_argument("--accuracy", type=int, nargs="*", default=[], metavar="M")
    parser.add_argument("--compile-only", nargs=2, metavar=("VARIANT", "M"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compile_only:
        import pytensor  # noqa: F401 — imports apart from the compile
        import bayeskern  # noqa: F401

        M = int(args.compile_only[1])
        t0 = time.perf_counter()
        compiled(args.compile_only[0], M)(np.ones(M), 1.0)  # (Numba compiles at the first call)
        print(time.perf_counter() - t0)
        return
    if args.accuracy:
        print("| M | variant | abs. error log p | max rel. error ∂/∂v | rel. error ∂/∂σ² |\n|---|---|---|---|---|")
        for M in args.accuracy:
            accuracy(M)
        return
    print("| M | op µs/call | symbolic µs/call | symbolic / op | max |Δ log p| | max rel. Δ gradient |")
    print("|---|---|---|---|---|---|")
    for M in args.sizes:
        f = {variant: compiled(variant, M) for variant in ("op", "symbolic")}
        v, s2 = np.random.default_rng(0).uniform(0.1, 2.0, M), 0.04
        outs = {k: fn(v, s2) for k, fn in f.items()}
        d_logp = abs(float(outs["op"][0] - outs["symbolic"][0]))
        d_grad = max(float(np.max(np.abs(a - b) / np.abs(b))) for a, b in zip(outs["op"][1:], outs["symbolic"][1:]))
        times = {k: [] for k in f}
        with threadpool_limits(1):
            for fn in f.values():
                for _ in range(500):
                    fn(v, s2)
            for _ in range(args.rounds):
                for k, fn in f.items():
                    t0 = time.perf_counter()
                    for _ in range(500):
                        fn(v, s2)
                    times[k].append((time.perf_counter() - t0) / 500 * 1e6)
        op, sym = np.median(times["op"]), np.median(times["symbolic"])
        print(f"| {M} | {op:.1f} | {sym:.1f} | {sym / op:.2f} | {d_logp:.1e} | {d_grad:.1e} |", flush=True)
    if args.cold_rounds:
        print("\ncold compile of value and gradient (s), empty compile directory, M = 12, alternated:")
        seconds = {"op": [], "symbolic": []}
        for _ in range(args.cold_rounds):
            for variant in seconds:
                seconds[variant].append(cold(variant, 12))
        for variant, s in seconds.items():
            print(f"  {variant}: median {np.median(s):.1f} s ({', '.join(f'{x:.1f}' for x in s)})")


if __name__ == "__main__":
    main()
