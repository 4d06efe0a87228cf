"""Inducing points where the HSGP cannot go: VFE (bk.approx.VFE) with an ARD RBF in 5 input dimensions.

X ~ U[−2, 2]⁵, n = 20 000; f a draw of a GP with k = RBF(ℓ = [0.8, 1.2, 1.6, 2.4, 3.5]) (unit amplitude),
taken through 3000 random Fourier features (an exact draw would need a 20 000² factorisation: the RFF draw
has the RBF's covariance up to O(1/√3000)), y = f + N(0, 0.3²). Priors ℓₖ ~ InvGamma(3, 3), amplitude
~ HalfNormal(2), σ ~ HalfNormal(1). EB with 2 starts and 300 inducing points (k-means, seed 0), twice in
one process: the first call compiles (cold when the PyTensor cache is empty), the second reuses.

    d=$(mktemp -d); PYTENSOR_FLAGS=base_compiledir=$d/c .venv/bin/python benchmarks/bench_vfe.py   # cold, then warm
"""

import argparse
import time

import numpy as np
import pymc as pm

import bayeskern as bk

NOISE = 0.3
LENGTHSCALES = np.array([0.8, 1.2, 1.6, 2.4, 3.5])


def data(n: int, seed: int = 0, n_features: int = 3000):
    rng = np.random.default_rng(seed)
    d = len(LENGTHSCALES)
    X = rng.uniform(-2.0, 2.0, (n, d))
    W = rng.standard_normal((d, n_features)) / LENGTHSCALES[:, None]  # ω ~ N(0, diag(ℓ⁻²)): the RBF's spectral density
    b = rng.uniform(0.0, 2 * np.pi, n_features)
    f = np.sqrt(2.0 / n_features) * np.cos(X @ W + b) @ rng.standard_normal(n_features)
    return X, f + NOISE * rng.standard_normal(n)


def fit(X, y, n_inducing: int):
    t = time.perf_counter()  # from the model's building (k-means for the inducing points) to the fitted result
    with pm.Model() as model:
        ell = pm.InverseGamma("ell", 3.0, 3.0, shape=X.shape[1])
        amp, sigma = pm.HalfNormal("amp", 2.0), pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(lengthscale=ell), sigma, approx=bk.approx.VFE(n_inducing=n_inducing))
    eb = bk.fit.empirical_bayes(model, restarts=2, seed=0)
    return eb, time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--inducing", type=int, default=300)
    args = parser.parse_args()
    X, y = data(args.n)
    for call in ("first", "second"):
        eb, seconds = fit(X, y, args.inducing)
        ell = ", ".join(f"{v:.2f}" for v in eb.params["ell"])
        print(f"n = {args.n}, d = {X.shape[1]}, {args.inducing} inducing points: EB (2 starts, model building included) {call} call "
              f"{seconds:.1f} s, {eb.n_evaluations} evaluations, converged {eb.converged}, sigma {eb.params['sigma']:.4f} "
              f"(true {NOISE}), lengthscales [{ell}] (true {LENGTHSCALES.tolist()}), trace term "
              f"{eb.conditioned.trace_term:.1f}, Nyström residual {eb.conditioned.nystrom_residual:.3g}", flush=True)


if __name__ == "__main__":
    main()
