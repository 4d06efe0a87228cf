"""What NUTS costs before its first draw: nutpie's compile of a model, bayeskern's against pm.sample's.

Each run is a fresh process that builds the model — `--model sum` (default): bench_mcmc.py's bayeskern model, the seeds'
sum kernel at n = 200; `--model blr`: a collapsed Bayesian linear regression on cubic polynomial features of the same
200 points (`bk.blr.likelihood(..., collapsed=True)`, HalfNormal prior scale and noise); `--model blr-matrix`: the same
with a matrix Σ, the scale times a fixed 4 × 4 SPD matrix; `--model hsgp`: the collapsed
HSGP of an RBF kernel on the same points (`bk.approx.HSGP(m=40, c=1.6)`, LogNormal length scale, HalfNormal noise) —
and compiles it for nutpie, one way:
"bayeskern" — `bayeskern.fit._nutpie`'s compile (what `bk.fit.mcmc` runs: PyTensor's Numba functions with the GIL
released, cached on disk, on nutpie's Python-callback interface); "nutpie" — `nutpie.compile_pymc_model(model)` (what
`pm.sample(nuts_sampler="nutpie")` runs: the same functions wrapped in two `numba.cfunc`s that Numba cannot cache), both
without fastmath, as `bk.fit.mcmc` compiles. "cold": `PYTENSOR_FLAGS=base_compiledir=<a new empty folder>`, as on a new
machine; "warm": a folder an earlier run filled. The variants alternate within each round; medians of `--runs`.
The child prints its compile seconds (time.perf_counter around the compile alone); the whole process is timed too.

    .venv/bin/python benchmarks/bench_nuts_compile.py --runs 3 [--model blr | blr-matrix | hsgp] [--checkout DIR] [--only bayeskern]

`--checkout DIR`: the children import the bayeskern of another checkout (`git worktree add DIR COMMIT`), for an A/B of
two commits; `--only bayeskern` skips nutpie's compile.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {here!r})
import bayeskern as bk
from bench_mcmc import bayeskern_model
from bayeskern._compile import exact_arithmetic
X, y = bk.datasets.sinusoid(200, 0.2, seed=200)
if sys.argv[2] == "sum":
    model = bayeskern_model(X, y)
elif sys.argv[2] in ("blr", "blr-matrix"):
    from bench_blr_matrix_prior import collapsed_blr
    model = collapsed_blr(200, matrix=sys.argv[2] == "blr-matrix")
else:
    import pymc as pm
    with pm.Model() as model:
        ell, sigma = pm.LogNormal("ell", 0.0, 0.5), pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X, y, bk.kernels.RBF(ell), sigma, approx=bk.approx.HSGP(m=40, c=1.6))
t0 = time.perf_counter()
if sys.argv[1] == "bayeskern":
    from bayeskern.fit import _nutpie
    _nutpie._compiled(model)
else:
    import nutpie
    with exact_arithmetic():
        nutpie.compile_pymc_model(model, backend="numba")
print(f"{{time.perf_counter() - t0:.3f}}")
"""


def run(way: str, compiledir: str, model: str, checkout: str | None = None) -> tuple[float, float]:
    """(whole-process seconds, compile seconds) of one child (in `checkout`, whose bayeskern it then imports)."""
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    code = CHILD.format(here=str(Path(__file__).resolve().parent))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, way, model], env=env, capture_output=True, text=True, check=True,
                          cwd=checkout)
    return time.perf_counter() - started, float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", choices=("sum", "blr", "blr-matrix", "hsgp"), default="sum")
    parser.add_argument("--checkout", default=None)
    parser.add_argument("--only", choices=("bayeskern", "nutpie"), default=None)
    args = parser.parse_args()
    runs, model, ways = args.runs, args.model, [args.only] if args.only else ["bayeskern", "nutpie"]
    with tempfile.TemporaryDirectory(prefix="bk_compile_") as root:  # every compile directory, removed at the end
        warm = {way: tempfile.mkdtemp(prefix=f"warm_{way}_", dir=root) for way in ways}
        for way, folder in warm.items():
            run(way, folder, model, args.checkout)  # fills it
        rows: dict = {}
        for _ in range(runs):
            for way in ways:
                cold = tempfile.mkdtemp(prefix="cold_", dir=root)
                rows.setdefault((way, "cold"), []).append(run(way, cold, model, args.checkout))
                rows.setdefault((way, "warm"), []).append(run(way, warm[way], model, args.checkout))
    print("| compile | cache | compile s (median, min–max) | whole process s (median) |")
    print("|---|---|---|---|")
    for (way, cache), results in sorted(rows.items(), key=lambda item: (item[0][1], item[0][0])):
        compile_s = [c for _, c in results]
        print(f"| {way} | {cache} | {statistics.median(compile_s):.2f} ({min(compile_s):.2f}–{max(compile_s):.2f}) "
              f"| {statistics.median(w for w, _ in results):.2f} |")


if __name__ == "__main__":
    main()
