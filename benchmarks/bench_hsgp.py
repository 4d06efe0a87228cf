"""Large n through the kernel trick: the collapsed HSGP (bk.approx.HSGP) against the exact GP and PyMC's latent HSGP.

The seeds' sum kernel θ0·RBF(ℓ) + θ2 + θ3·xᵀx′ with priors θ0, θ2 ~ HalfNormal(2), ℓ ~ HalfNormal(2),
θ3, σ ~ HalfNormal(1), on a series drawn from that GP (n ≤ 5000: an exact draw) or, for larger n, on
a smooth signal of the same character (sines on a trend) plus N(0, 0.3²) noise.

    .venv/bin/python benchmarks/bench_hsgp.py accuracy            # n = 3000: HSGP(m=120, c=1.5) vs exact EB
    .venv/bin/python benchmarks/bench_hsgp.py large --n 100000     # EB (2 starts), first and second call
    .venv/bin/python benchmarks/bench_hsgp.py large --n 1000000    # its own process: peak memory is the process's
    .venv/bin/python benchmarks/bench_hsgp.py nuts --n 10000       # NUTS over θ vs PyMC's pm.gp.HSGP latent model
    .venv/bin/python benchmarks/bench_hsgp.py auto --n 10000       # m and c left to the package, Matérn-5/2
    .venv/bin/python benchmarks/bench_hsgp.py basis --n 10000      # the evidence's error over m and c on auto's smooth data
"""

import argparse
import resource
import sys
import time
import warnings

import numpy as np
import pymc as pm

import bayeskern as bk

NOISE = 0.3
M, C = 120, 1.5


def series(n: int, seed: int = 1):
    """x ∈ [0, 10]; y = f + ε with f drawn from θ0 = 1, ℓ = 0.8, θ2 = 0.5, θ3 = 0.05 (exact draw up to n = 5000)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, n))
    if n <= 5000:
        K = bk.kernels.PRML(1.0, 1 / 0.8**2, 0.5, 0.05).evaluate(x) + 1e-10 * np.eye(n)
        f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    else:  # a smooth path with the same scales, where an exact draw would need an n × n factorisation
        f = np.sin(1.3 * x) + 0.5 * np.sin(3.1 * x + 1.0) + 0.2 * (x - 5) + 0.3
    return x, f + NOISE * rng.standard_normal(n)


def model(x, y, approx):
    with pm.Model() as m:
        theta0, ell, theta2 = pm.HalfNormal("theta0", 2.0), pm.HalfNormal("ell", 2.0), pm.HalfNormal("theta2", 2.0)
        theta3, sigma = pm.HalfNormal("theta3", 1.0), pm.HalfNormal("sigma", 1.0)
        kernel = theta0 * bk.kernels.RBF(ell) + bk.kernels.Constant(theta2) + theta3 * bk.kernels.Linear()
        bk.gp.marginal_likelihood("y", x, y, kernel, sigma, approx=approx)
    return m


def fitted_kernel(p):
    return p["theta0"] * bk.kernels.RBF(p["ell"]) + bk.kernels.Constant(p["theta2"]) + p["theta3"] * bk.kernels.Linear()


def timed_fit(x, y, approx, restarts=2):
    t = time.perf_counter()
    eb = bk.fit.empirical_bayes(model(x, y, approx), restarts=restarts, seed=0)
    return eb, time.perf_counter() - t


def accuracy(args):
    x, y = series(args.n)
    grid = np.linspace(0, 10, 400)
    approx = bk.approx.HSGP(m=M, c=C)
    hs, hs_s = timed_fit(x, y, approx)
    ex, ex_s = timed_fit(x, y, None)
    print(f"n = {args.n}: HSGP(m={M}, c={C}) EB {hs_s:.1f} s ({hs.n_evaluations} evaluations), exact EB {ex_s:.1f} s "
          f"({ex.n_evaluations}); both converged: {hs.converged and ex.converged}")
    print("| parameter | HSGP | exact | relative difference |\n|---|---|---|---|")
    for name in hs.params:
        print(f"| {name} | {hs.params[name]:.6g} | {ex.params[name]:.6g} | {hs.params[name] / ex.params[name] - 1:.2e} |")
    diff = np.max(np.abs(hs.conditioned.predict(grid).mean - ex.conditioned.predict(grid).mean)) / np.std(y)
    audit = bk.checks.approximation_error(fitted_kernel(hs.params), approx, x, y, hs.params["sigma"], Xnew=grid)
    print(f"max |Δ mean| on the 400-point grid / sd(y): {diff:.2e} (goal ≤ 1e-2); LML {hs.log_marginal_likelihood:.6f} vs "
          f"{ex.log_marginal_likelihood:.6f}")
    print(f"approximation_error at the HSGP optimum (subsample 2000): mean_error {audit.mean_error:.2e}, var_error "
          f"{audit.var_error:.2e}, lml_error {audit.lml_error:.2e}, passed {audit.passed}")


def large(args):
    x, y = series(args.n)
    approx = bk.approx.HSGP(m=M, c=C)
    for call in ("first", "second"):
        eb, seconds = timed_fit(x, y, approx)
        print(f"n = {args.n}: EB (2 starts) {call} call {seconds:.1f} s, {eb.n_evaluations} evaluations, converged "
              f"{eb.converged}, sigma {eb.params['sigma']:.4f} (true {NOISE})", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB → GB (Linux)
    print(f"peak resident memory of the process: {peak:.2f} GB")


def nuts(args):
    import arviz as az

    x, y = series(args.n)
    names = ("theta0", "ell", "theta2", "theta3", "sigma")

    def pymc_latent():
        with pm.Model() as m:
            theta0, ell, theta2 = pm.HalfNormal("theta0", 2.0), pm.HalfNormal("ell", 2.0), pm.HalfNormal("theta2", 2.0)
            theta3, sigma = pm.HalfNormal("theta3", 1.0), pm.HalfNormal("sigma", 1.0)
            gp = pm.gp.HSGP(m=[M], c=C, cov_func=theta0 * pm.gp.cov.ExpQuad(1, ls=ell))
            f = gp.prior("f", X=x[:, None])
            # θ2 + θ3·xᵀx′ as the latent intercept b ~ N(0, θ2) and slope w ~ N(0, θ3)
            b, w = pm.Normal("b", 0.0, 1.0), pm.Normal("w", 0.0, 1.0)
            pm.Normal("y", f + pm.math.sqrt(theta2) * b + pm.math.sqrt(theta3) * w * x, sigma, observed=y)
        return m

    rows = []
    for label, build in (("bayeskern collapsed HSGP", lambda: model(x, y, bk.approx.HSGP(m=M, c=C))), ("PyMC pm.gp.HSGP latent", pymc_latent)):
        m = build()
        t = time.perf_counter()
        dt = pm.sample(draws=args.draws, tune=args.tune, chains=args.chains, random_seed=1, model=m, nuts_sampler="nutpie",
                       progressbar=False, compute_convergence_checks=False)
        seconds = time.perf_counter() - t
        ess = az.ess(dt, method="bulk")
        min_ess = min(float(np.min(ess[name].values)) for name in names)
        means = {name: float(dt.posterior[name].mean()) for name in names}
        rows.append((label, seconds, min_ess, means))
        print(f"| {label} | {seconds:.1f} | {min_ess:.0f} | {min_ess / seconds:.2f} | "
              + ", ".join(f"{k} {v:.3g}" for k, v in means.items()) + " |", flush=True)
    print(f"min bulk ESS/s ratio (bayeskern / PyMC), compile included: {(rows[0][2] / rows[0][1]) / (rows[1][2] / rows[1][1]):.1f}")


def basis(args):
    """log p(t | θ) of HSGP(m, c) minus the exact GP's on the auto case's ℓ = range/2 data at its fitted point, over m and c."""
    rng = np.random.default_rng(3)  # the data of `auto` for fraction 2
    grid = np.linspace(0, 10, 2000)
    K = bk.kernels.Matern52(5.0).evaluate(grid) + 1e-9 * np.eye(len(grid))
    f_grid = np.linalg.cholesky(K) @ rng.standard_normal(len(grid))
    x = np.sort(rng.uniform(0, 10, args.n))
    y = np.interp(x, grid, f_grid) + 0.2 * rng.standard_normal(args.n)
    kernel, sigma = 1.982**2 * bk.kernels.Matern52(6.62), 0.197  # the automatic HSGP's EB optimum at n = 10⁴
    exact = bk.gp.condition(kernel, x[:, None], y, sigma).log_marginal_likelihood
    ms = (20, 40, 80, 160, 320, 540)
    print(f"log p(t | θ̂) − exact ({exact:.3f}), n = {args.n}; rows c, columns m = {ms}")
    for c in (3, 4.5, 6, 9, 13, 18.3):
        print(f"c = {c:5}: " + " ".join(f"{bk.gp.condition(kernel, x[:, None], y, sigma, approx=bk.approx.HSGP(m=m, c=c)).log_marginal_likelihood - exact:9.3f}" for m in ms), flush=True)


def auto(args):
    """Matérn-5/2 draws with ℓ = range/50 and range/2: HSGP with m, c from the package vs the exact GP on 1000 points."""
    for fraction in (50, 2):
        rng = np.random.default_rng(3)
        ell = 10.0 / fraction
        # f from the GP on a 2000-point grid (exact draw), interpolated linearly to n points: the grid is ≥ 4 points per ℓ/50
        grid = np.linspace(0, 10, 2000)
        K = bk.kernels.Matern52(ell).evaluate(grid) + 1e-9 * np.eye(len(grid))
        f_grid = np.linalg.cholesky(K) @ rng.standard_normal(len(grid))
        x = np.sort(rng.uniform(0, 10, args.n))
        y = np.interp(x, grid, f_grid) + 0.2 * rng.standard_normal(args.n)

        def build(xs, ys, approx):
            with pm.Model() as m:
                eta = pm.HalfNormal("eta", 2.0)
                ls = pm.LogNormal("ell", np.log(ell), 0.5)  # a prior centred at the truth, ±1σ = ×1.65
                sigma = pm.HalfNormal("sigma", 1.0)
                bk.gp.marginal_likelihood("y", xs, ys, eta**2 * bk.kernels.Matern52(ls), sigma, approx=approx)
            return m

        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = build(x, y, bk.approx.HSGP())
            eb = bk.fit.empirical_bayes(m, restarts=2, seed=0)
        seconds = time.perf_counter() - t
        basis = eb.conditioned.features
        print(f"ℓ = range/{fraction}: n = {args.n}, automatic HSGP m = {basis.m[0]}, L = {basis.parameters()['L'][0]:.3g} "
              f"(c = {basis.parameters()['L'][0] / 5:.3g}); EB {seconds:.1f} s, params "
              + ", ".join(f"{k} {v:.4g}" for k, v in eb.params.items())
              + (f"; warnings: {[str(w.message)[:80] for w in caught]}" if caught else ""))
        sub = np.sort(rng.choice(args.n, 1000, replace=False))
        hs = bk.fit.empirical_bayes(build(x[sub], y[sub], bk.approx.HSGP()), restarts=2, seed=0)
        ex = bk.fit.empirical_bayes(build(x[sub], y[sub], None), restarts=2, seed=0)
        print("  1000-point subsample, automatic HSGP vs exact: "
              + ", ".join(f"{k} {hs.params[k]:.4g} vs {ex.params[k]:.4g} ({hs.params[k] / ex.params[k] - 1:+.2%})" for k in ex.params),
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("accuracy", "large", "nuts", "auto", "basis"))
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    args = parser.parse_args()
    args.n = args.n or {"accuracy": 3000, "large": 100_000, "nuts": 10_000, "auto": 10_000, "basis": 10_000}[args.what]
    warnings.simplefilter("ignore", category=FutureWarning)
    {"accuracy": accuracy, "large": large, "nuts": nuts, "auto": auto, "basis": basis}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
