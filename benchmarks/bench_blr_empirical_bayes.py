"""Empirical Bayes of a collapsed BLR (Σ = s·I, noise σ) against scikit-learn's BayesianRidge on the same features.

Run: .venv/bin/python benchmarks/bench_blr_empirical_bayes.py [--sizes 2000 200000] [--features 12] [--repeats 5]

Gaussian-basis features (M centres on [−1, 1], width 0.2) of N points, t = sin 3x + N(0, 0.2²). bayeskern:
`bk.fit.empirical_bayes` of `bk.blr.likelihood(..., collapsed=True)` with HalfNormal priors on s and σ (EB ignores them:
it maximises log p(t | s, σ); its default starts), the features computed inside (as a user's fit does). scikit-learn:
`BayesianRidge(fit_intercept=False)` with flat hyperpriors (alpha_1 = alpha_2 = lambda_1 = lambda_2 = 0: the same
evidence maximised, α = 1/s, λ = 1/σ²), tol 1e-10, on Φ computed outside its timing. One process, the two alternated,
medians of `--repeats`; the log evidence each reaches is evaluated by the same formula (bayeskern's conditioned model).
"""

import argparse
import statistics
import time
import warnings

import numpy as np
import pymc as pm
from sklearn.linear_model import BayesianRidge

import bayeskern as bk


def data(N: int):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (N, 1))
    return X, np.sin(3 * X[:, 0]) + 0.2 * rng.standard_normal(N)


def bayeskern_fit(X, y, features):
    with pm.Model() as model:
        scale, sigma = pm.HalfNormal("scale", 2.0), pm.HalfNormal("sigma", 0.5)
        bk.blr.likelihood("y", X, y, features, prior_cov=scale, sigma=sigma, collapsed=True)
    fit = bk.fit.empirical_bayes(model)
    return fit.params["scale"], fit.params["sigma"], fit.n_evaluations


def sklearn_fit(Phi, y):
    model = BayesianRidge(fit_intercept=False, alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0, tol=1e-10, max_iter=1000)
    model.fit(Phi, y)
    return 1 / model.lambda_, np.sqrt(1 / model.alpha_), model.n_iter_  # sklearn's alpha_ is the noise precision


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 200000])
    parser.add_argument("--features", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    features = bk.features.GaussianBasis(np.linspace(-1, 1, args.features), 0.2)
    print("| N | bayeskern EB (s) | evaluations | scikit-learn (s) | iterations | ratio sklearn/bayeskern | log p bayeskern | log p scikit-learn |")
    print("|---|---|---|---|---|---|---|---|")
    for N in args.sizes:
        X, y = data(N)
        Phi = bk.features.design_matrix(features, X)
        bayeskern_fit(X, y, features)  # the structure's first compile, apart
        times, results = {"bk": [], "sk": []}, {}
        for _ in range(args.repeats):
            for name, fit in (("bk", lambda: bayeskern_fit(X, y, features)), ("sk", lambda: sklearn_fit(Phi, y))):
                t0 = time.perf_counter()
                results[name] = fit()
                times[name].append(time.perf_counter() - t0)
        log_p = {name: bk.blr.condition(features, X, y, r[1], r[0]).log_marginal_likelihood for name, r in results.items()}
        bk_s, sk_s = statistics.median(times["bk"]), statistics.median(times["sk"])
        print(f"| {N} | {bk_s:.3f} | {results['bk'][2]} | {sk_s:.3f} | {results['sk'][2]} | {sk_s / bk_s:.2f} "
              f"| {log_p['bk']:.8f} | {log_p['sk']:.8f} |", flush=True)


if __name__ == "__main__":
    main()
