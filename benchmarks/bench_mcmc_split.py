"""Where NUTS time goes on the seeds' sum-kernel GP: nutpie compile vs sampling, per leapfrog step.

Run: .venv/bin/python benchmarks/bench_mcmc_split.py [n]   (default n = 200)
Both models of bench_mcmc.py, compiled with `nutpie.compile_pymc_model` and sampled with
`nutpie.sample` (2 chains × 500 tune + 500 draws, seed 1). "per step" = sampling seconds × 2 threads /
post-warm-up leapfrog steps (warm-up steps are not counted by nutpie's n_steps, so it overstates the
cost of one gradient by roughly 2 ×; it is for comparing the two models).
"""

import sys
import time
import warnings

import nutpie

import bayeskern as bk
from bench_mcmc import bayeskern_model, pymc_model


def main():
    warnings.simplefilter("ignore")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    X, y = bk.datasets.sinusoid(n, 0.2, seed=n)
    for name, make in (("bayeskern", bayeskern_model), ("pm.gp.Marginal", pymc_model)):
        t0 = time.perf_counter()
        compiled = nutpie.compile_pymc_model(make(X, y))
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace = nutpie.sample(compiled, draws=500, tune=500, chains=2, seed=1, progress_bar=False)
        sample_s = time.perf_counter() - t0
        steps = int(trace.sample_stats["n_steps"].sum())
        print(f"{name}: compile {compile_s:.1f} s, sampling {sample_s:.1f} s, post-warm-up leapfrog steps {steps}, "
              f"per step {1e3 * sample_s * 2 / steps:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
