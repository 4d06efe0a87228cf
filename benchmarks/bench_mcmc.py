"""NUTS on the seeds' sum-kernel GP: bayeskern's likelihood vs the same model with pm.gp.Marginal, one process.

Run: .venv/bin/python benchmarks/bench_mcmc.py [--sizes 200 500] [--draws 500] [--tune 500] [--chains 2] [--seeds 1 2 3]
     [--tuned-peer]

With several `--seeds`, a row per seed (the two libraries alternated within each seed) and, per n, the median of the
ESS/s ratios over the seeds (issue 16's measure: `--draws 1000 --tune 1000 --seeds 1 2 3`).

Model: k = θ0·exp(−θ1/2‖x − x′‖²) + θ2 + θ3·xᵀx′ (PRML 6.63) plus noise σ, with weakly informative
priors; 1-D sinusoid data. Both models are sampled by nutpie (PyMC 6's default sampler), same seed, same settings:
bayeskern's as `bayeskern.fit.mcmc` samples (its compile of nutpie's model, one BLAS thread per chain thread, no
fastmath: `pm.sample`'s draws), PyMC's by `pm.sample` as PyMC 6 does by default. Wall time includes compilation; the
metric is the minimum bulk ESS over the five hyperparameters per second. Posterior means are
compared by z = Δmean / √(se₁² + se₂²), se = sd/√ESS. The time `bayeskern.fit.mcmc` adds after
sampling (exact LOO densities for every draw) is reported separately.
"""

import argparse
import os
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

import bayeskern as bk
from bayeskern._compile import exact_arithmetic
from bayeskern.fit import _nutpie
from bayeskern.fit._plug_in import PlugIn
from bayeskern.fit.predictive import draw_quantities

NAMES = ("theta0", "theta1", "theta2", "theta3", "sigma")


def priors():
    f = np.float64
    return (
        pm.HalfNormal("theta0", f(2.0)),
        pm.Gamma("theta1", f(2.0), f(0.05)),  # inverse squared length scale, mean 40 (ℓ ≈ 0.16)
        pm.HalfNormal("theta2", f(1.0)),
        pm.HalfNormal("theta3", f(1.0)),
        pm.HalfNormal("sigma", f(1.0)),
    )


def bayeskern_model(X, y):
    with pm.Model() as model:
        t0, t1, t2, t3, s = priors()
        bk.gp.marginal_likelihood("y", X, y, bk.kernels.PRML(t0, t1, t2, t3), s)
    return model


def pymc_model(X, y):
    with pm.Model() as model:
        t0, t1, t2, t3, s = priors()
        cov = t0 * pm.gp.cov.ExpQuad(1, ls=1 / pm.math.sqrt(t1)) + pm.gp.cov.Constant(t2) + t3 * pm.gp.cov.Linear(1, c=0.0)
        pm.gp.Marginal(cov_func=cov).marginal_likelihood("y", X=X, y=y, sigma=s)
    return model


def run(model, args, seed, ours):
    t0 = time.perf_counter()
    if ours:  # bayeskern.fit.mcmc's sampling step (its compile, one BLAS thread per chain, no fastmath), no LOO
        _nutpie._MODELS.clear()  # compiled anew each run (from PyTensor's disk cache, as in a new process), as PyMC's is
        with threadpool_limits(1), exact_arithmetic():
            dt = _nutpie.sample(model, args.draws, args.tune, args.chains, seed, progressbar=False)
    elif args.tuned_peer:  # PyMC with bayeskern's settings: a chain per core, one BLAS thread per chain
        with threadpool_limits(1):
            dt = pm.sample(draws=args.draws, tune=args.tune, chains=args.chains, random_seed=seed, model=model,
                           cores=min(args.chains, len(os.sched_getaffinity(0))), progressbar=False, compute_convergence_checks=False)
    else:  # PyMC 6 as a user gets it
        dt = pm.sample(draws=args.draws, tune=args.tune, chains=args.chains, random_seed=seed, model=model,
                       progressbar=False, compute_convergence_checks=False)
    seconds = time.perf_counter() - t0
    ess = az.ess(dt, method="bulk")
    min_ess = min(float(np.min(ess[n].values)) for n in NAMES)
    return dt, seconds, min_ess, ess


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--tuned-peer", action="store_true",
                        help="sample PyMC's model with a chain per core and one BLAS thread per chain, as bayeskern does "
                             "(by default PyMC 6's own settings: half the cores, BLAS threads as they come)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    print(f"draws {args.draws}, tune {args.tune}, chains {args.chains}; sampler: nutpie; PyMC's model with "
          + ("bayeskern's settings (a chain per core, one BLAS thread each)" if args.tuned_peer else "PyMC 6's defaults"))
    print("| n | seed | bk wall (s) | bk min ESS | bk ESS/s | pm.gp.Marginal wall (s) | pm min ESS | pm ESS/s | ratio (ESS/s) "
          "| max |z| of means | bk LOO post-processing (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    import nutpie  # noqa: F401 — both samplers' (and Numba's) import, paid before any timing: else the first run of
    # the first seed, bayeskern's, would pay it for both (~0.3–0.9 s here)

    medians = {}
    for n, seed in ((n, seed) for n in args.sizes for seed in args.seeds):
        X, y = bk.datasets.sinusoid(n, 0.2, seed=n)
        ours, ours_s, ours_ess, ours_ess_all = run(bayeskern_model(X, y), args, seed=seed, ours=True)
        theirs, theirs_s, theirs_ess, theirs_ess_all = run(pymc_model(X, y), args, seed=seed, ours=False)
        z = 0.0
        for name in NAMES:
            a, b = ours["posterior"][name], theirs["posterior"][name]
            se = np.sqrt(float(a.std()) ** 2 / float(ours_ess_all[name]) + float(b.std()) ** 2 / float(theirs_ess_all[name]))
            z = max(z, abs(float(a.mean()) - float(b.mean())) / se)
        model = bayeskern_model(X, y)
        obs = model.observed_RVs[0]
        t0 = time.perf_counter()
        draw_quantities(PlugIn(model, obs.tag.bayeskern), ours["posterior"].to_dataset(), "y", "y_dim_0")
        post_s = time.perf_counter() - t0
        ratio = (ours_ess / ours_s) / (theirs_ess / theirs_s)
        medians.setdefault(n, []).append(ratio)
        print(
            f"| {n} | {seed} | {ours_s:.1f} | {ours_ess:.0f} | {ours_ess / ours_s:.2f} | {theirs_s:.1f} | {theirs_ess:.0f} "
            f"| {theirs_ess / theirs_s:.2f} | {ratio:.2f} | {z:.2f} | {post_s:.1f} |",
            flush=True,
        )
    for n, ratios in medians.items():
        print(f"n = {n}: median ESS/s ratio over seeds {args.seeds}: {float(np.median(ratios)):.2f} ({', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
