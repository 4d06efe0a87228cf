"""Small problems on a 2-core machine: BLAS threads in the MCMC draws' loop (idle and beside busy cores), and nutpie's
chains in one thread or two.

Part "draws": `bayeskern.fit.predictive.draw_quantities` over the 2 × 1000 draws of the shipped PRML spec's model
(n = 25, predictions at 121 points), with the package's rule (every BLAS pool on one thread up to
`bayeskern._blas.SMALL_PROBLEM_MAX_N` rows) against the rule switched off (SciPy's pool on its two threads, numpy's on
one: the behaviour before session 28), alternated, on an idle machine and beside two busy processes (`--busy 2`
starts two Python loops for the run). The posterior is the spec's own NUTS draws, sampled once here.

Part "chains": nutpie on the seeds' sum kernel (bench_mcmc's model and priors), 2 chains × 1000 + 1000, the chains
in one thread against two threads (`bayeskern.fit._nutpie.SEQUENTIAL_CHAINS_MAX_N` set to force either), alternated,
for each n of `--sizes`. Sampling only (the compiled model is reused after the first run).

    .venv/bin/python benchmarks/bench_small_problems.py draws [--busy 2] [--repeats 3]
    .venv/bin/python benchmarks/bench_small_problems.py chains [--sizes 25 50 100 200] [--repeats 3]
"""

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

import bayeskern as bk
from bayeskern import _blas, spec
from bayeskern._compile import exact_arithmetic
from bayeskern.fit import _nutpie
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.predictive import draw_quantities
from bayeskern.likelihood import find_likelihood


def _alternate(variants: dict, repeats: int) -> dict:
    """{name: [seconds]}: each variant once per round, in turn."""
    times = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return times


def draws(repeats: int, busy: int) -> None:
    s = spec.load("models/prml_sum_kernel.toml")
    model = s.model(s.candidates[0], s.load_data())
    obs, record = find_likelihood(model)
    posterior = bk.fit.mcmc(model, draws=1000, tune=1000, chains=2, seed=0)["posterior"].to_dataset()
    Xnew = np.linspace(-0.1, 1.1, 121)[:, None]
    plug_in = PlugIn(model, record)

    def loop(limit):
        def run():
            saved, _blas.SMALL_PROBLEM_MAX_N = _blas.SMALL_PROBLEM_MAX_N, limit
            try:
                draw_quantities(plug_in, posterior, obs.name, f"{obs.name}_dim_0", Xnew=Xnew, seed=1)
            finally:
                _blas.SMALL_PROBLEM_MAX_N = saved
        return run

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        times = _alternate({"one thread (the rule)": loop(_blas.SMALL_PROBLEM_MAX_N), "SciPy's two threads (before)": loop(0)}, repeats)
    finally:
        for hog in hogs:
            hog.kill()
    print(f"draws' loop, PRML spec (n = 25, 2000 draws, 121 points), {busy} busy processes beside it, {repeats} rounds")
    print("| BLAS | median s | runs |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.2f} | {', '.join(f'{v:.2f}' for v in t)} |")


def chains(sizes: list, repeats: int) -> None:
    sys.path.insert(0, "benchmarks")
    import bench_mcmc

    print(f"nutpie, 2 chains × 1000 + 1000, sampling seconds (medians of {repeats}, alternated)")
    print("| n | one thread | two threads | two / one |\n|---|---|---|---|")
    for n in sizes:
        rng = np.random.default_rng(0)
        X = np.sort(rng.uniform(0, 1, n))[:, None]
        y = np.sin(2 * np.pi * X[:, 0]) + 0.2 * rng.standard_normal(n)
        model = bench_mcmc.bayeskern_model(X, y)

        def run(sequential):
            def go():
                with exact_arithmetic():
                    _nutpie.sample(model, 1000, 1000, 2, 1, False, problem_size=0 if sequential else 10**9)
            return go

        saved, _nutpie.SEQUENTIAL_CHAINS_MAX_N = _nutpie.SEQUENTIAL_CHAINS_MAX_N, 0  # problem_size decides: 0 ≤ 0
        try:
            run(True)()  # compile (or load) once, not timed
            times = _alternate({"one": run(True), "two": run(False)}, repeats)
        finally:
            _nutpie.SEQUENTIAL_CHAINS_MAX_N = saved
        one, two = statistics.median(times["one"]), statistics.median(times["two"])
        print(f"| {n} | {one:.2f} | {two:.2f} | {two / one:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["draws", "chains"])
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200])
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    if args.part == "draws":
        draws(args.repeats, args.busy)
    else:
        with threadpool_limits(1):  # as bk.fit.mcmc samples with nutpie
            chains(args.sizes, args.repeats)


if __name__ == "__main__":
    main()
