"""One BLAS thread or two for an empirical-Bayes fit, on an idle machine and beside busy processes: the measure behind
`bayeskern._blas.SMALL_PROBLEM_MAX_N` (fits of at most that many rows run every BLAS pool on one thread).

Each run is a fresh process fitting an RBF + noise model (1 start, compiled before the timed fit) with every BLAS pool
held at 1 or 2 threads (threadpoolctl; bayeskern's own limit bypassed), while 0, 1 or 2 other processes spin on the
cores. Thread counts alternate within each round; medians of the fit's wall time over its evaluations (the fit's
set-up and its conditioning at the optimum included: 37 % of it at n = 200, 8 % at n = 1000, measured by a review), and
two threads / one.

    .venv/bin/python benchmarks/bench_blas_threads.py [--sizes 200 500 1000 1500] [--busy 0 1 2] [--rounds 3]
"""

import argparse
import contextlib
import statistics
import subprocess
import sys

CHILD = """
import sys, time, warnings, contextlib
import numpy as np, pymc as pm
from threadpoolctl import threadpool_limits
import bayeskern as bk
import bayeskern.fit.empirical_bayes
eb_module = sys.modules["bayeskern.fit.empirical_bayes"]
eb_module.blas_for_size = lambda n, larger=contextlib.nullcontext: contextlib.nullcontext()  # the thread count is ours
warnings.simplefilter("ignore")
threads = int(sys.argv[1])
for n in map(int, sys.argv[2:]):
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, (n, 1)); y = np.sin(1.5 * X[:, 0]) + 0.2 * rng.normal(size=n)
    with pm.Model() as m:
        a = pm.HalfNormal("a", 3.0); ell = pm.Gamma("ell", 2.0, 1.0); s = pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=a * bk.kernels.RBF(ell), sigma=s)
    with threadpool_limits(threads, user_api="blas"):
        bk.fit.empirical_bayes(m, restarts=1, seed=0)  # compiled
        started = time.perf_counter()
        eb = bk.fit.empirical_bayes(m, restarts=1, seed=0)
        print(n, 1e3 * (time.perf_counter() - started) / eb.n_evaluations, flush=True)
"""

SPIN = "import time\nwhile True: pass"


@contextlib.contextmanager
def busy(count: int):
    """`count` processes spinning on the cores while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000, 1500])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a child may take (beside busy cores, two threads can take minutes)")
    args = parser.parse_args()
    print("| busy processes | n | 1 thread, fit ms / evaluations (median, min–max) | 2 threads | 2 threads / 1 |")
    print("|---|---|---|---|---|")
    for count in args.busy:
        ms = {(t, n): [] for t in (1, 2) for n in args.sizes}
        with busy(count):
            for _ in range(args.rounds):
                for threads in (1, 2):
                    try:
                        out = subprocess.run([sys.executable, "-c", CHILD, str(threads), *map(str, args.sizes)], capture_output=True,
                                             text=True, check=True, timeout=args.timeout).stdout
                    except subprocess.TimeoutExpired:
                        out = ""  # (its sizes keep no figure this round)
                    for line in out.splitlines():
                        n, value = line.split()
                        ms[threads, int(n)].append(float(value))
        for n in args.sizes:
            one, two = ms[1, n], ms[2, n]
            if not one or not two:
                print(f"| {count} | {n} | {len(one)} runs | {len(two)} runs (timed out) | – |", flush=True)
                continue
            print(f"| {count} | {n} | {statistics.median(one):.1f} ({min(one):.1f}–{max(one):.1f}) | {statistics.median(two):.1f} "
                  f"({min(two):.1f}–{max(two):.1f}) | {statistics.median(two) / statistics.median(one):.2f} |", flush=True)


if __name__ == "__main__":
    main()
