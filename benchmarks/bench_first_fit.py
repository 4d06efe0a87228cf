"""The README's first empirical-Bayes fit as a new user runs it: a whole process, on an empty and on a filled PyTensor cache.

Each run is a fresh `python -c FIT` (import bayeskern, build the 25-point PRML model, empirical_bayes
with 5 restarts). "cold": PYTENSOR_FLAGS=base_compiledir=<a new empty folder>, as on a new machine;
"warm": a folder filled by an earlier run. Cold and warm runs alternate; medians of `--runs` each.
The child prints its own split (import, fit, evaluations) from time.perf_counter.

Bytecode: the children inherit PYTHONDONTWRITEBYTECODE. Where it is set (this workplace sets it), every process
compiles bayeskern's own modules from source (an editable install has no .pyc until an import writes it), ~0.1 s.
`--write-bytecode` runs the children as a default Python does: the first writes bayeskern's .pyc files, later ones
read them — a user's second process. (Cold runs then read them too: the site-packages' were written by pip anyway.)

    .venv/bin/python benchmarks/bench_first_fit.py --runs 5 [--write-bytecode]
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


def run(compiledir: str, write_bytecode: bool = False) -> tuple[float, list[str]]:
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FIT], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write-bytecode", action="store_true", help="children write and read .pyc files (see above)")
    args = parser.parse_args()
    rows = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="bk_warm_") as warm_dir:  # every compile directory removed at the end
        run(warm_dir, args.write_bytecode)  # fills it
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="bk_cold_") as cold_dir:
                rows["cold"].append(run(cold_dir, args.write_bytecode))
            rows["warm"].append(run(warm_dir, args.write_bytecode))
    print("| cache | whole process s (median, min–max) | import s | fit s | evaluations | log p(t | θ̂) |")
    print("|---|---|---|---|---|---|")
    for name, results in rows.items():
        wall = [w for w, _ in results]
        imp, fit = (statistics.median(float(r[i]) for _, r in results) for i in (0, 1))
        _, last = results[-1]
        print(f"| {name} | {statistics.median(wall):.2f} ({min(wall):.2f}–{max(wall):.2f}) | {imp:.2f} | {fit:.2f} | {last[2]} | {last[3]} |")


if __name__ == "__main__":
    main()
