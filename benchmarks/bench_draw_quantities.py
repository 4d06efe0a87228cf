"""The MCMC draws' loop (`fit.predictive.draw_quantities`): each draw's GP evaluating its kernel once on X and the
prediction points together (`gp.JOINT_MAX_PAIRS`) against four evaluations apart.

The model of `models/prml_sum_kernel.toml` (the seeds' sum kernel, its priors and its 121-point grid) on `--n` points of
its sinusoid; 2 chains × `--draws` draws of θ around the EB optimum (lognormal, sd 0.1), the LOO densities at every
draw and a full-covariance prediction and draw at the grid at every draw, as `bk.fit.mcmc` asks. The two variants run
alternately in one process (`--rounds`), after one warm-up of each; medians and the ratio pair by pair are reported,
and every output of the two is checked to be the same array.

    .venv/bin/python benchmarks/bench_draw_quantities.py --n 25 100 300 --rounds 5
"""

import argparse
import dataclasses
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

import bayeskern as bk
from bayeskern import spec as specs
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.predictive import draw_quantities
from bayeskern.likelihood import find_likelihood

SPEC = Path(__file__).resolve().parents[1] / "models" / "prml_sum_kernel.toml"


def setting(n: int, draws: int):
    """(PlugIn, posterior draws, the observed variable's name, grid) for the spec's model on n points."""
    spec = specs.load(SPEC)
    spec = dataclasses.replace(spec, data=dataclasses.replace(spec.data, n=n))
    model = spec.model(spec.candidates[0], spec.load_data())
    eb = bk.fit.empirical_bayes(model, restarts=1)
    obs, record = find_likelihood(model)
    rng = np.random.default_rng(0)
    posterior = xr.Dataset({k: (("chain", "draw"), float(v) * np.exp(0.1 * rng.standard_normal((2, draws)))) for k, v in eb.params.items()},
                           coords={"chain": [0, 1], "draw": np.arange(draws)})
    return PlugIn(model, record), posterior, obs.name, spec.grid[:, None]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[25, 100, 300])
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (2 chains)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    limit = bk.gp.JOINT_MAX_PAIRS
    for n in args.n:
        plug_in, posterior, name, grid = setting(n, args.draws)
        seconds, outputs = {"joint": [], "apart": []}, {}
        for r in range(args.rounds + 1):  # round 0 warms both up
            for variant, pairs in (("joint", limit), ("apart", 0)):
                bk.gp.JOINT_MAX_PAIRS = pairs
                started = time.perf_counter()
                log_lik, predictive, _ = draw_quantities(plug_in, posterior, name, "obs_dim", Xnew=grid, seed=0)
                if r:
                    seconds[variant].append(time.perf_counter() - started)
                outputs[variant] = (log_lik, predictive)
        bk.gp.JOINT_MAX_PAIRS = limit
        same = all(a.identical(b) for a, b in zip(outputs["joint"], outputs["apart"], strict=True))
        ratios = [a / b for a, b in zip(seconds["joint"], seconds["apart"], strict=True)]
        joint_used = (n + len(grid)) ** 2 <= limit
        print(f"n = {n}, m = {len(grid)} ({'joint' if joint_used else 'apart: (n + m)² > JOINT_MAX_PAIRS'}), 2 × {args.draws} draws: "
              f"joint {statistics.median(seconds['joint']):.2f} s, apart {statistics.median(seconds['apart']):.2f} s, "
              f"joint / apart pair by pair {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}); "
              f"outputs identical: {same}", flush=True)


if __name__ == "__main__":
    main()
