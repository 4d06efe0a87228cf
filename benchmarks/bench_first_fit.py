"""The README's first empirical-Bayes fit as a new user runs it: a whole process, on an empty and on a filled PyTensor cache.

Each run is a fresh `python -c FIT` (import bayeskern, build the 25-point PRML model, empirical_bayes
with 5 restarts). "cold": PYTENSOR_FLAGS=base_compiledir=<a new empty folder>, as on a new machine;
"warm": a folder filled by an earlier run. Cold and warm runs alternate; medians of `--runs` each.
The child prints its own split (import, fit, evaluations) from time.perf_counter.

    .venv/bin/python benchmarks/bench_first_fit.py --runs 5
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FIT = """
import time; t0 = time.perf_counter()
import pymc as pm
import bayeskern as bk
t1 = time.perf_counter()
X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
with pm.Model() as model:
    theta = pm.HalfNormal("theta", 5.0, shape=4)
    s = pm.HalfNormal("s", 1.0)
    bk.gp.marginal_likelihood("y", X=X, y=t, kernel=bk.kernels.PRML(*theta), sigma=s)
import warnings; warnings.simplefilter("ignore")
eb = bk.fit.empirical_bayes(model, restarts=5, seed=0)
print(f"{t1 - t0:.3f} {time.perf_counter() - t1:.3f} {eb.n_evaluations} {eb.log_marginal_likelihood:.9f}")
"""


def run(compiledir: str) -> tuple[float, list[str]]:
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FIT], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    warm_dir = tempfile.mkdtemp(prefix="bk_warm_")
    run(warm_dir)  # fills it
    rows = {"cold": [], "warm": []}
    for _ in range(runs):
        rows["cold"].append(run(tempfile.mkdtemp(prefix="bk_cold_")))
        rows["warm"].append(run(warm_dir))
    print("| cache | whole process s (median, min–max) | import s | fit s | evaluations | log p(t | θ̂) |")
    print("|---|---|---|---|---|---|")
    for name, results in rows.items():
        wall = [w for w, _ in results]
        imp, fit = (statistics.median(float(r[i]) for _, r in results) for i in (0, 1))
        _, last = results[-1]
        print(f"| {name} | {statistics.median(wall):.2f} ({min(wall):.2f}–{max(wall):.2f}) | {imp:.2f} | {fit:.2f} | {last[2]} | {last[3]} |")


if __name__ == "__main__":
    main()
