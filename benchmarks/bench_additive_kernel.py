"""A 4-component additive kernel (11 hyperparameters) on a simulated seasonal series: bayeskern vs scikit-learn.

The kernel of scikit-learn's Mauna Loa example, period fixed at 1:
    a₁²·RBF(ℓ₁) + a₂²·RBF(ℓ₂)·ExpSineSquared(ℓₚ, 1) + a₃²·RatQuad(α, ℓ₃) + a₄²·RBF(ℓ₄) + σ²I.
Both start from the same point (scikit-learn's initial kernel, `initval` in PyMC), one start each,
on the same data, in one process. bayeskern's first fit includes compiling (reported apart); the
timed fits alternate with scikit-learn's, `--repeats` times, medians reported. PyMC's Periodic has
½ in its exponent where ExpSineSquared has 2: ℓₚ(PyMC) = ℓₚ(sklearn)/2.

    .venv/bin/python benchmarks/bench_additive_kernel.py --n 500 --repeats 3 [--per-evaluation 500 2000] [--times monthly]

`--kernel sum`: the seeds' sum kernel θ0·exp(−θ1/2‖x−x′‖²) + θ2 + θ3·xᵀx′ on PRML's sinusoid instead,
scikit-learn's ConstantKernel·RBF + ConstantKernel + ConstantKernel·DotProduct(σ₀ = 0) + WhiteKernel
started at the same function.
"""

import argparse
import statistics
import time
import warnings

import numpy as np
import pymc as pm
import scipy.linalg
import scipy.optimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

import bayeskern as bk

#: scikit-learn's Mauna Loa starting kernel: (a₁, ℓ₁, a₂, ℓ₂, ℓₚ, a₃, α, ℓ₃, a₄, ℓ₄, σ)
START = dict(a1=50.0, l1=50.0, a2=2.0, l2=100.0, lp=1.0, a3=0.5, alpha=1.0, l3=1.0, a4=0.1, l4=0.1, s=0.1)


def seasonal_series(n: int, seed: int = 0, times: str = "random"):
    """A series over ~40 years: smooth trend + a seasonal cycle whose shape drifts + wiggles + noise. `times`: "random"
    (n sorted uniform times in [0, 40]) or "monthly" (x = i/12, i < n: the sampling of the Mauna Loa record)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 40, n)) if times == "random" else np.arange(n) / 12.0
    y = 0.02 * (x - 20) ** 2 + 1.5 * x + 3 * np.sin(2 * np.pi * x) * (1 + 0.2 * np.sin(x / 7)) + np.sin(x / 1.3)
    return x[:, None], y - y.mean() + 0.3 * rng.standard_normal(n)


def sklearn_kernel():
    s = START
    return (
        s["a1"] ** 2 * skk.RBF(s["l1"])
        + s["a2"] ** 2 * skk.RBF(s["l2"]) * skk.ExpSineSquared(2 * s["lp"], 1.0, periodicity_bounds="fixed")
        + s["a3"] ** 2 * skk.RationalQuadratic(s["l3"], s["alpha"])
        + s["a4"] ** 2 * skk.RBF(s["l4"])
        + skk.WhiteKernel(s["s"] ** 2)
    )


#: the seeds' sum kernel θ0·exp(−θ1/2‖x−x′‖²) + θ2 + θ3·xᵀx′ + σ²I, started at θ = (1, 16, 1, 1), σ = 0.1
SUM_START = dict(theta0=1.0, theta1=16.0, theta2=1.0, theta3=1.0, s=0.1)


def sum_model(X, y):
    with pm.Model() as m:
        v = {name: pm.HalfNormal(name, 10 * value, initval=value) for name, value in SUM_START.items()}
        kernel = bk.kernels.PRML(v["theta0"], v["theta1"], v["theta2"], v["theta3"])
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=kernel, sigma=v["s"])
    return m


def sum_sklearn_kernel():
    """The same function class in scikit-learn's parameters: θ0·RBF(ℓ = θ1^−½) + θ2 + θ3·DotProduct(σ₀ = 0) + σ²."""
    s = SUM_START
    return (
        skk.ConstantKernel(s["theta0"]) * skk.RBF(s["theta1"] ** -0.5)
        + skk.ConstantKernel(s["theta2"])
        + skk.ConstantKernel(s["theta3"]) * skk.DotProduct(0.0, sigma_0_bounds="fixed")
        + skk.WhiteKernel(s["s"] ** 2)
    )


def sum_data(n: int):
    return bk.datasets.sinusoid(n=n, noise=0.2, seed=0)


def sklearn_fit(X, y, kernel):
    evaluations = []

    def optimizer(obj_func, initial_theta, bounds):  # scikit-learn's default (L-BFGS-B), counting evaluations
        res = scipy.optimize.minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds)
        evaluations.append(res.nfev)
        return res.x, res.fun

    gp = GaussianProcessRegressor(kernel, optimizer=optimizer, normalize_y=False).fit(X, y)
    gp.n_evaluations = sum(evaluations)
    return gp


def model(X, y):
    K = bk.kernels
    with pm.Model() as m:
        v = {name: pm.HalfNormal(name, 10 * value, initval=value) for name, value in START.items()}
        kernel = (
            v["a1"] ** 2 * K.RBF(lengthscale=v["l1"])
            + v["a2"] ** 2 * K.RBF(lengthscale=v["l2"]) * K.Periodic(period=1.0, lengthscale=v["lp"])
            + v["a3"] ** 2 * K.RatQuad(alpha=v["alpha"], lengthscale=v["l3"])
            + v["a4"] ** 2 * K.RBF(lengthscale=v["l4"])
        )
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=kernel, sigma=v["s"])
    return m


def per_evaluation(n: int, repeats: int = 21, times: str = "random") -> tuple[float, float, float]:
    """Seconds of one value-and-gradient evaluation (at perturbed points) and of one Cholesky of an n × n SPD matrix,
    medians, and the median of their ratios: the two alternate, so that a drift of the machine's speed reaches both."""
    from bayeskern._reused_arrays import reused_arrays
    from bayeskern.fit.empirical_bayes import _Objective
    from bayeskern.likelihood import find_likelihood

    m = model(*seasonal_series(n, times=times))
    objective = _Objective(m, find_likelihood(m)[0], include_prior=False)
    z = objective.flat(objective.point)
    objective(z)  # compiles
    rng = np.random.default_rng(0)
    C = np.cov(rng.standard_normal((n, 2 * n)))
    values, choleskys = [], []
    with reused_arrays():  # as empirical_bayes evaluates it: large temporaries kept from one evaluation to the next
        for _ in range(repeats):
            values.append(timed(lambda: objective(z + 1e-3 * rng.standard_normal(len(z))))[0])
            choleskys.append(timed(lambda: scipy.linalg.cholesky(C, lower=True))[0])
    ratio = statistics.median(v / c for v, c in zip(values, choleskys, strict=True))
    return statistics.median(values), statistics.median(choleskys), ratio


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


PROBLEMS = {"additive": (seasonal_series, model, sklearn_kernel), "sum": (sum_data, sum_model, sum_sklearn_kernel)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3, help="timed fits of each library (0: none)")
    parser.add_argument("--kernel", choices=sorted(PROBLEMS), default="additive")
    parser.add_argument("--per-evaluation", type=int, nargs="*", default=[], metavar="N",
                        help="also time one evaluation against one Cholesky at these n")
    parser.add_argument("--times", choices=["random", "monthly"], default="random",
                        help="the additive kernel's series: random times, or monthly (on a grid)")
    args = parser.parse_args()
    for n in args.per_evaluation:
        value, cholesky, ratio = per_evaluation(n, times=args.times)
        print(f"n = {n} ({args.times} times): one evaluation {1e3 * value:.1f} ms = {ratio:.1f} Choleskys (median of {1e3 * cholesky:.1f} ms; "
              "the ratio is the median of alternated pairs)")
    if args.repeats < 1:  # --per-evaluation alone
        return
    data, make_model, make_kernel = PROBLEMS[args.kernel]
    X, y = data(args.n, times=args.times) if args.kernel == "additive" else data(args.n)
    warnings.simplefilter("ignore")
    first, first_fit = timed(lambda: bk.fit.empirical_bayes(make_model(X, y), restarts=1))
    ours, theirs = [], []
    for _ in range(args.repeats):
        ours.append(timed(lambda: bk.fit.empirical_bayes(make_model(X, y), restarts=1)))
        theirs.append(timed(lambda: sklearn_fit(X, y, make_kernel())))
    eb, sk = ours[-1][1], theirs[-1][1]
    t_ours, t_sk = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in theirs)
    print(f"{args.kernel} kernel, n = {args.n}{f' ({args.times} times)' if args.kernel == 'additive' else ''}, one start each, medians of {args.repeats}")
    print("| | bayeskern | scikit-learn |")
    print("|---|---|---|")
    print(f"| fit s (warm) | {t_ours:.2f} | {t_sk:.2f} |")
    print(f"| first fit s (compiling; its compile part) | {first:.2f} ({first_fit.compile_seconds:.2f}) | |")
    print(f"| log p(t | θ̂) | {eb.log_marginal_likelihood:.6f} | {sk.log_marginal_likelihood_value_:.6f} |")
    print(f"| evaluations | {eb.n_evaluations} | {sk.n_evaluations} |")
    print(f"| converged | {eb.converged} (predicted gain {eb.predicted_gain:.2g}, max |g| {eb.grad_norm:.2g}) | |")
    print(f"ratio bayeskern / scikit-learn (warm): {t_ours / t_sk:.2f}; first fit / scikit-learn: {first / t_sk:.2f}")


if __name__ == "__main__":
    main()
