"""Bad input at every public entry point: a ValueError that names the argument, or a correct finite result (issue 17).

Every public callable of the package (the `__all__` of each public module) has an entry in REGISTRY:
how to call it with good arguments, and the role of each argument (inputs, targets, a scale, a seed,
a model …). Property tests then spoil one argument at a time, by kind — complex values, NaN/±inf,
scales whose square overflows or underflows, wrong shapes, bad seeds, wrong types — and hold every
entry to one contract: a ValueError whose message names the spoilt argument, or (where the input is
valid, e.g. a huge but finite scale) a result whose numbers are all finite. No MCMC runs here:
`pm.sample` and the empirical-Bayes optimiser are replaced by a tripwire, so only the argument checks
that come before them are exercised.
"""

import dataclasses
import re
import sys
import warnings
from collections.abc import Callable
from functools import cache

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayeskern as bk
from bayeskern import kernels as K
from bayeskern.fit._plug_in import PlugIn

PUBLIC_MODULES = (bk.approx, bk.kernels, bk.features, bk.gp, bk.blr, bk.fit, bk.checks, bk.smoothing, bk.ntk, bk.datasets)

#: small and fast: the contract is checked on tiny data, a few examples per (callable, argument, kind)
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SOME = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

X = np.linspace(0.0, 1.0, 6)[:, None]
Y = np.sin(2 * np.pi * X[:, 0])
XNEW = np.linspace(-0.2, 1.2, 4)[:, None]
X2 = np.column_stack([X[:, 0], X[:, 0] ** 2])  # two input columns, for kernels with one parameter per column


# -- the registry ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    """How to call one public callable: `call(**good())` succeeds; `roles` says what each argument is.

    `use(result)`: the numbers the result stands for (a kernel's matrices, a feature map's Φ …), which
    must all be finite; by default the result itself is walked. `samples`: the callable would run MCMC
    or an optimiser on valid input, so only the kinds of bad input that must fail early are tried.
    """

    call: Callable
    good: Callable[[], dict]
    roles: dict
    use: Callable | None = None
    samples: bool = False


# roles: "X" inputs (n, d) · "y" a vector of targets or weights · "scale" a positive scalar whose
# square or reciprocal enters the maths · "real" a real scalar of either sign · "array" a numeric
# hyperparameter array · "prob" a probability · "int" a count · "seed" · "seeds" a sequence of seeds ·
# "flag" a bool · "choice" a string naming an option · "name" a PyMC variable name · "dict" {name: value}
# · and objects: "model", "kernel", "kernels", "features", "object"


def _kernel_use(kernel, X_=X):
    Xs = np.column_stack([XNEW[:, 0]] * X_.shape[1])
    return kernel.evaluate(X_), kernel.evaluate(X_, Xs), kernel.evaluate(X_, diag=True)


def _kernel_case(cls, good: dict, roles: dict, inputs=X):
    return Case(lambda **kw: cls(**kw), lambda: dict(good), roles, use=lambda k: _kernel_use(k, inputs))


def _evaluate_case(make_kernel, inputs=X):
    """k.evaluate(X, Xs) for one kernel: the inputs spoilt, the kernel good."""
    others = np.column_stack([XNEW[:, 0]] * inputs.shape[1])
    return Case(lambda X, Xs: make_kernel().evaluate(X, Xs), lambda: {"X": inputs.copy(), "Xs": others.copy()}, {"X": "X", "Xs": "X"})


def _features_use(phi, X_=X):
    return phi(X_)


def _call_case(make_phi, inputs=X):
    make_phi = cache(make_phi)  # one instance: a MercerFeatures compiles one graph per instance
    return Case(lambda X: make_phi()(X), lambda: {"X": inputs.copy()}, {"X": "X"})


@cache
def _normal_model():
    """x ~ N(μ, σ²) with 20 observations: the generative model of the Fisher kernel."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("x", mu, sigma, observed=np.random.default_rng(0).normal(0.3, 1.2, 20))
    return model


@cache  # built once: the checks under test neither compile nor change it
def _gp_model():
    """A GP marginal likelihood with one free length scale: what bayeskern.fit takes (not compiled here)."""
    with pm.Model() as model:
        ell = pm.HalfNormal("ell", 1.0)
        bk.gp.marginal_likelihood("y", X, Y, K.RBF(ell), sigma=0.1)
    return model


@cache  # built once: the checks under test neither compile nor change it
def _blr_model():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        bk.blr.likelihood("y", X, Y, bk.features.Polynomial(2), prior_cov=1.0, sigma=sigma, collapsed=True)
    return model


@cache  # built once: the checks under test neither compile nor change it
def _gp_sigma_model():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X, Y, K.FeatureKernel(bk.features.Polynomial(2), 1.0), sigma=sigma)
    return model


def _record(model):
    return model.observed_RVs[0].tag.bayeskern


def _in_model(fn):
    """Call a model-building function inside a fresh pm.Model; the result is its record (X, y, …)."""

    def call(**kw):
        with pm.Model():
            obs = fn(**kw)
        return obs

    return call


def _likelihood_use(obs):
    r = obs.tag.bayeskern
    return r.X, r.y, r.sigma


def _fake_mcmc_tree():
    """A DataTree shaped like bayeskern.fit.mcmc's output (2 chains × 50 draws of ell), with no sampling."""
    rng = np.random.default_rng(1)
    coords = {"chain": [0, 1], "draw": np.arange(50)}
    posterior = xr.Dataset({"ell": (("chain", "draw"), 0.5 + 0.05 * rng.standard_normal((2, 50)))}, coords=coords)
    stats = xr.Dataset(
        {"diverging": (("chain", "draw"), np.zeros((2, 50), bool)), "energy": (("chain", "draw"), rng.standard_normal((2, 50)))},
        coords=coords,
    )
    loglik = xr.Dataset({"y": (("chain", "draw", "y_dim_0"), -1.0 + 0.1 * rng.standard_normal((2, 50, 6)))}, coords=coords)
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats, "log_likelihood": loglik})


def _fake_eb():
    """An EmpiricalBayesResult as a record (compare_eb_mcmc checks its arguments before using it)."""
    laplace = bk.fit.Laplace({"ell": 0.1}, np.eye(1), ("ell",), True)
    return bk.fit.EmpiricalBayesResult(
        {"ell": 0.5}, -3.0, -3.0, False, True, 0.0, 0.0, {"ell": False}, 10, 0.0, (), 0.1, 0.1, None, None, laplace_at=lambda: laplace
    )


def _fake_predictive():
    rng = np.random.default_rng(2)
    dims = ("chain", "draw_thinned", "xnew")
    return xr.Dataset({name: (dims, rng.standard_normal((2, 10, 4)) ** (2 if name == "f_var" else 1)) for name in ("f", "y_new", "f_mean", "f_var")})


def _kde_use(kde):
    return kde.pdf(XNEW), kde.logpdf(XNEW), kde.bandwidth


RBF05 = lambda: K.RBF(0.5)  # noqa: E731
POLY2 = lambda: bk.features.Polynomial(2)  # noqa: E731

REGISTRY: dict[str, Case] = {
    # kernels: constructors (hyperparameters), then k.evaluate(X, Xs) (inputs)
    "bayeskern.kernels.NNGP": _kernel_case(K.NNGP, {"depth": 2, "weight_variance": 1.5, "bias_variance": 0.1},
                                           {"depth": "int", "weight_variance": "scale", "bias_variance": "scale"}),
    "bayeskern.kernels.NTK": _kernel_case(K.NTK, {"depth": 2, "weight_variance": 1.5, "bias_variance": 0.1},
                                          {"depth": "int", "weight_variance": "scale", "bias_variance": "scale"}),
    "bayeskern.kernels.PRML": _kernel_case(K.PRML, {"theta0": 1.0, "theta1": 4.0, "theta2": 0.5, "theta3": 0.3},
                                           dict.fromkeys(("theta0", "theta1", "theta2", "theta3"), "scale")),
    "bayeskern.kernels.RBF": _kernel_case(K.RBF, {"lengthscale": 0.5}, {"lengthscale": "scale"}),
    "bayeskern.kernels.RBF[bandwidth]": _kernel_case(K.RBF, {"bandwidth": 0.25}, {"bandwidth": "scale"}),
    "bayeskern.kernels.ArcCosine": _kernel_case(K.ArcCosine, {"order": 1}, {"order": "int"}),
    "bayeskern.kernels.Boxcar": _kernel_case(K.Boxcar, {"width": 0.3}, {"width": "scale"}),
    "bayeskern.kernels.Constant": _kernel_case(K.Constant, {"c": 0.7}, {"c": "scale"}),
    "bayeskern.kernels.FeatureKernel": _kernel_case(K.FeatureKernel, {"phi": POLY2(), "prior_cov": np.array([1.0, 2.0, 0.5])},
                                                    {"phi": "features", "prior_cov": "array"}),
    "bayeskern.kernels.FisherKernel": Case(
        lambda **kw: K.FisherKernel(**kw),
        lambda: {"model": _normal_model(), "point": {"mu": 0.3, "sigma": 1.2}, "information": np.array([[0.7, 0.0], [0.0, 1.4]]),
                 "draws": 100, "seed": 0},
        {"model": "model", "point": "dict", "information": "array", "draws": "int", "seed": "seed"},
        use=lambda k: k.evaluate(X),
    ),
    "bayeskern.kernels.Linear": _kernel_case(K.Linear, {}, {}),
    "bayeskern.kernels.MahalanobisRBF": _kernel_case(K.MahalanobisRBF, {"cov": np.array([[0.5, 0.1], [0.1, 0.3]])}, {"cov": "array"}, inputs=X2),
    "bayeskern.kernels.Matern12": _kernel_case(K.Matern12, {"lengthscale": 0.5}, {"lengthscale": "scale"}),
    "bayeskern.kernels.Matern32": _kernel_case(K.Matern32, {"lengthscale": 0.5}, {"lengthscale": "scale"}),
    "bayeskern.kernels.Matern52": _kernel_case(K.Matern52, {"lengthscale": 0.5}, {"lengthscale": "scale"}),
    "bayeskern.kernels.Mixture": _kernel_case(K.Mixture, {"means": np.array([[0.0], [1.0]]), "scales": np.array([0.5, 0.7]), "weights": np.array([0.3, 0.7])},
                                              {"means": "array", "scales": "array", "weights": "array"}),
    "bayeskern.kernels.Periodic": _kernel_case(K.Periodic, {"period": 1.0, "lengthscale": 0.5}, {"period": "scale", "lengthscale": "scale"}),
    "bayeskern.kernels.Polynomial": _kernel_case(K.Polynomial, {"degree": 2, "c": 1.0}, {"degree": "int", "c": "scale"}),
    "bayeskern.kernels.ProbabilityProduct": _kernel_case(K.ProbabilityProduct, {"rho": 0.5, "variance": 0.3}, {"rho": "scale", "variance": "scale"}),
    "bayeskern.kernels.Product": Case(lambda kernels: K.Product(*kernels) if isinstance(kernels, tuple) else K.Product(kernels),
                                      lambda: {"kernels": (RBF05(), K.Linear())}, {"kernels": "kernels"}, use=_kernel_use),
    "bayeskern.kernels.RatQuad": _kernel_case(K.RatQuad, {"alpha": 2.0, "lengthscale": 0.5}, {"alpha": "scale", "lengthscale": "scale"}),
    "bayeskern.kernels.Scaled": _kernel_case(K.Scaled, {"kernel": RBF05(), "scale": 2.0}, {"kernel": "kernel", "scale": "scale"}),
    "bayeskern.kernels.SetIntersection": _kernel_case(K.SetIntersection, {}, {}),
    "bayeskern.kernels.Sigmoid": _kernel_case(K.Sigmoid, {"a": 0.5, "b": -0.2}, {"a": "real", "b": "real"}),
    "bayeskern.kernels.Sum": Case(lambda kernels: K.Sum(*kernels) if isinstance(kernels, tuple) else K.Sum(kernels),
                                  lambda: {"kernels": (RBF05(), K.Linear())}, {"kernels": "kernels"}, use=_kernel_use),
    "bayeskern.kernels.White": _kernel_case(K.White, {"sigma": 0.1}, {"sigma": "scale"}),
    # features: constructors, then phi(X)
    "bayeskern.features.Fourier": Case(lambda **kw: bk.features.Fourier(**kw), lambda: {"order": 3, "period": 1.0},
                                       {"order": "int", "period": "scale"}, use=_features_use),
    "bayeskern.features.GaussianBasis": Case(lambda **kw: bk.features.GaussianBasis(**kw),
                                             lambda: {"centers": np.array([0.0, 0.5, 1.0]), "width": 0.3, "bias": True},
                                             {"centers": "X", "width": "scale", "bias": "flag"}, use=_features_use),
    "bayeskern.features.MercerFeatures": Case(lambda **kw: bk.features.MercerFeatures(**kw),
                                              lambda: {"kernel": RBF05(), "X_basis": X.copy(), "n_components": 3},
                                              {"kernel": "kernel", "X_basis": "X", "n_components": "int"},
                                              use=lambda phi: (phi.eigenvalues, phi.eigenvectors)),  # phi(X): MercerFeatures.__call__
    "bayeskern.features.Monomials": Case(lambda **kw: bk.features.Monomials(**kw), lambda: {"degree": 3}, {"degree": "int"}, use=_features_use),
    "bayeskern.features.Polynomial": Case(lambda **kw: bk.features.Polynomial(**kw), lambda: {"degree": 3}, {"degree": "int"}, use=_features_use),
    "bayeskern.features.PolynomialKernelFeatures": Case(lambda **kw: bk.features.PolynomialKernelFeatures(**kw), lambda: {"degree": 2, "c": 1.0},
                                                        {"degree": "int", "c": "scale"}, use=_features_use),
    "bayeskern.features.PowerSet": Case(lambda: bk.features.PowerSet(), dict, {}, use=_features_use),
    "bayeskern.features.RandomFourier": Case(lambda **kw: bk.features.RandomFourier(**kw),
                                             lambda: {"n_features": 20, "lengthscale": 0.5, "input_dim": 1, "seed": 0},
                                             {"n_features": "int", "lengthscale": "scale", "input_dim": "int", "seed": "seed"}, use=_features_use),
    "bayeskern.features.SigmoidBasis": Case(lambda **kw: bk.features.SigmoidBasis(**kw),
                                            lambda: {"centers": np.array([0.0, 0.5, 1.0]), "width": 0.3, "bias": False},
                                            {"centers": "X", "width": "scale", "bias": "flag"}, use=_features_use),
    "bayeskern.features.design_matrix": Case(bk.features.design_matrix, lambda: {"phi": POLY2(), "X": X.copy()}, {"phi": "features", "X": "X"}),
    "bayeskern.features.design_tensor": Case(bk.features.design_tensor, lambda: {"phi": POLY2(), "X": X.copy()}, {"phi": "features", "X": "X"},
                                             use=lambda v: v.data),  # numeric X: a constant
    "bayeskern.features.n_features": Case(bk.features.n_features, lambda: {"phi": POLY2(), "d": 2}, {"phi": "features", "d": "int"}),
    # gp and blr
    "bayeskern.gp.marginal_likelihood": Case(_in_model(bk.gp.marginal_likelihood),
                                             lambda: {"name": "y", "X": X.copy(), "y": Y.copy(), "kernel": RBF05(), "sigma": 0.1},
                                             {"name": "name", "X": "X", "y": "y", "kernel": "kernel", "sigma": "scale"}, use=_likelihood_use),
    "bayeskern.gp.posterior": Case(bk.gp.posterior,
                                   lambda: {"kernel": RBF05(), "X": X.copy(), "y": Y.copy(), "sigma": 0.1, "Xnew": XNEW.copy(), "include_noise": False},
                                   {"kernel": "kernel", "X": "X", "y": "y", "sigma": "scale", "Xnew": "X", "include_noise": "flag"}),
    "bayeskern.gp.prior_samples": Case(bk.gp.prior_samples, lambda: {"kernel": RBF05(), "X": X.copy(), "n": 2, "seed": 0},
                                       {"kernel": "kernel", "X": "X", "n": "int", "seed": "seed"}),
    "bayeskern.blr.likelihood": Case(_in_model(bk.blr.likelihood),
                                     lambda: {"name": "y", "X": X.copy(), "y": Y.copy(), "features": POLY2(), "prior_cov": 1.0, "sigma": 0.1, "collapsed": True},
                                     {"name": "name", "X": "X", "y": "y", "features": "features", "prior_cov": "array", "sigma": "scale"},
                                     use=_likelihood_use),
    "bayeskern.blr.posterior": Case(bk.blr.posterior,
                                    lambda: {"features": POLY2(), "X": X.copy(), "y": Y.copy(), "sigma": 0.1, "prior_cov": 1.0, "Xnew": XNEW.copy(),
                                             "include_noise": True},
                                    {"features": "features", "X": "X", "y": "y", "sigma": "scale", "prior_cov": "array", "Xnew": "X",
                                     "include_noise": "flag"}),
    # fit: the models are built (cheap) but never compiled or sampled here
    "bayeskern.gp.condition": Case(bk.gp.condition, lambda: {"kernel": RBF05(), "X": X.copy(), "y": Y.copy(), "sigma": 0.1},
                                   {"kernel": "kernel", "X": "X", "y": "y", "sigma": "scale"}, use=lambda c: (c.predict(XNEW).mean, c.loo)),
    "bayeskern.gp.condition.predict": Case(lambda Xnew, include_noise, full_cov: _conditioned_gp().predict(Xnew, include_noise, full_cov),
                                           lambda: {"Xnew": XNEW.copy(), "include_noise": False, "full_cov": True},
                                           {"Xnew": "X", "include_noise": "flag", "full_cov": "flag"}),
    "bayeskern.gp.condition.sample": Case(lambda Xnew, n, seed: _conditioned_gp().sample(Xnew, n, seed),
                                          lambda: {"Xnew": XNEW.copy(), "n": 2, "seed": 0}, {"Xnew": "X", "n": "int", "seed": "seed"}),
    "bayeskern.blr.condition": Case(bk.blr.condition, lambda: {"features": POLY2(), "X": X.copy(), "y": Y.copy(), "sigma": 0.1, "prior_cov": 1.0},
                                    {"features": "features", "X": "X", "y": "y", "sigma": "scale", "prior_cov": "array"},
                                    use=lambda c: (c.predict(XNEW).mean, c.loo)),
    "bayeskern.blr.condition.predict": Case(lambda Xnew, include_noise, full_cov: _conditioned_blr().predict(Xnew, include_noise, full_cov),
                                            lambda: {"Xnew": XNEW.copy(), "include_noise": True, "full_cov": False},
                                            {"Xnew": "X", "include_noise": "flag", "full_cov": "flag"}),
    "bayeskern.blr.condition.sample": Case(lambda Xnew, n, seed: _conditioned_blr().sample(Xnew, n, seed),
                                           lambda: {"Xnew": XNEW.copy(), "n": 2, "seed": 0}, {"Xnew": "X", "n": "int", "seed": "seed"}),
    # internal, but given a record from outside by the fitters: the same promises
    "bayeskern.fit._plug_in.PlugIn": Case(lambda model, record: PlugIn(model, record),
                                          lambda: (lambda m: {"model": m, "record": _record(m)})(_gp_model()),
                                          {"model": "model", "record": "object"}, use=lambda p: p.condition({"ell": 0.5}).predict().mean),
    "bayeskern.fit._plug_in.PlugIn.numeric": Case(lambda params: _plug_in().numeric(params), lambda: {"params": {"ell": 0.5}},
                                                  {"params": "dict"}, use=lambda r: (r.sigma, r.kernel.evaluate(X))),
    "bayeskern.fit.compare_eb_mcmc": Case(bk.fit.compare_eb_mcmc, lambda: {"eb": _fake_eb(), "dt": _fake_mcmc_tree(), "prob": 0.9},
                                          {"eb": "object", "dt": "object", "prob": "prob"}, samples=True),
    "bayeskern.fit.diagnose": Case(bk.fit.diagnose, lambda: {"dt": _fake_mcmc_tree(), "rhat_max": 1.01, "ess_min": 10.0, "ebfmi_min": 0.3, "warn": False},
                                   {"dt": "object", "rhat_max": "scale", "ess_min": "scale", "ebfmi_min": "scale", "warn": "flag"},
                                   use=lambda d: (d.ebfmi, [v.values for v in d.table.data_vars.values()])),
    "bayeskern.fit.check_chains_moved": Case(bk.fit.check_chains_moved, lambda: {"dt": _fake_mcmc_tree()}, {"dt": "object"}),
    "bayeskern.fit.empirical_bayes": Case(bk.fit.empirical_bayes,
                                          lambda: {"model": _gp_model(), "restarts": 2, "seed": 0, "include_prior": False, "maxiter": 50},
                                          {"model": "model", "restarts": "int", "seed": "seed", "include_prior": "flag", "maxiter": "int"},
                                          samples=True),
    "bayeskern.fit.evidence_approximation": Case(bk.fit.evidence_approximation,
                                                 lambda: {"features": POLY2(), "X": X.copy(), "y": Y.copy(), "alpha": 1.0, "beta": 1.0, "tol": 1e-8,
                                                          "maxiter": 200},
                                                 {"features": "features", "X": "X", "y": "y", "alpha": "scale", "beta": "scale", "tol": "scale",
                                                  "maxiter": "int"}),
    "bayeskern.fit.mcmc": Case(bk.fit.mcmc, lambda: {"model": _gp_model(), "draws": 10, "tune": 10, "chains": 1, "seed": 0, "sampler": "pymc",
                                                     "Xnew": XNEW.copy(), "thin": 1, "target_accept": 0.8,
                                                     "compute_convergence_checks": False},
                               {"model": "model", "draws": "int", "tune": "int", "chains": "int", "seed": "seed", "sampler": "choice",
                                "Xnew": "X", "thin": "int", "target_accept": "prob", "compute_convergence_checks": "flag"}, samples=True),
    "bayeskern.fit.predictive_bands": Case(bk.fit.predictive_bands, lambda: {"predictive": _fake_predictive(), "prob": 0.9},
                                           {"predictive": "object", "prob": "prob"}, use=lambda ds: [v.values for v in ds.data_vars.values()]),
    # checks
    "bayeskern.checks.approximation_error": Case(
        bk.checks.approximation_error,
        lambda: {"kernel": RBF05(), "approx": bk.approx.HSGP(m=10, c=1.5), "X": X.copy(), "y": Y.copy(), "sigma": 0.1, "Xnew": XNEW.copy(),
                 "subsample": 50, "seed": 0, "mean_tol": 1e-2, "var_tol": 0.05, "lml_tol": 1e-3},
        {"kernel": "kernel", "approx": "object", "X": "X", "y": "y", "sigma": "scale", "Xnew": "X", "subsample": "int", "seed": "seed",
         "mean_tol": "scale", "var_tol": "scale", "lml_tol": "scale"},
        use=lambda r: (r.mean_error, r.var_error, r.lml_error)),
    "bayeskern.approx.HSGP": Case(bk.approx.HSGP, lambda: {"m": 10, "c": 1.5}, {"m": "int", "c": "scale"}),
    "bayeskern.approx.VFE": Case(bk.approx.VFE, lambda: {"n_inducing": 10, "seed": 0}, {"n_inducing": "int", "seed": "seed"}),
    "bayeskern.approx.check_approx": Case(bk.approx.check_approx, lambda: {"approx": bk.approx.HSGP(m=10, c=1.5)}, {"approx": "object"}),
    "bayeskern.checks.feature_error": Case(bk.checks.feature_error, lambda: {"phi": POLY2(), "kernel": K.Polynomial(2), "X": X.copy(), "rtol": 1e-8},
                                           {"phi": "features", "kernel": "kernel", "X": "X", "rtol": "scale"}),
    "bayeskern.checks.kernel_trick": Case(bk.checks.kernel_trick,
                                          lambda: {"phi": POLY2(), "prior_cov": np.array([1.0, 2.0, 0.5]), "X": X.copy(), "y": Y.copy(), "sigma": 0.1,
                                                   "Xnew": XNEW.copy(), "rtol": 1e-6},
                                          {"phi": "features", "prior_cov": "array", "X": "X", "y": "y", "sigma": "scale", "Xnew": "X", "rtol": "scale"},
                                          use=lambda r: (r.max_abs_diff, r.rel_diff)),
    "bayeskern.checks.kernel_trick_mcmc": Case(bk.checks.kernel_trick_mcmc,
                                               lambda: {"blr_model": _blr_model(), "gp_model": _gp_sigma_model(), "shared": ["sigma"], "z_max": 4.0,
                                                        "p_min": 1e-3, "seed": 0, "draws": 10, "tune": 10, "chains": 1},
                                               {"blr_model": "model", "gp_model": "model", "shared": "object", "z_max": "scale", "p_min": "scale",
                                                "seed": "seed", "draws": "int"}, samples=True),
    "bayeskern.checks.psd": Case(bk.checks.psd, lambda: {"kernel": RBF05(), "X": X.copy()}, {"kernel": "kernel", "X": "X"},
                                 use=lambda r: (r.eigenvalues, r.min_relative, r.asymmetry)),
    "bayeskern.checks.ridge_duality": Case(bk.checks.ridge_duality, lambda: {"phi": POLY2(), "X": X.copy(), "y": Y.copy(), "lam": 0.1, "Xnew": XNEW.copy(),
                                                                          "rtol": 1e-6},
                                           {"phi": "features", "X": "X", "y": "y", "lam": "scale", "Xnew": "X", "rtol": "scale"}),
    "bayeskern.checks.rff_convergence": Case(bk.checks.rff_convergence,
                                             lambda: {"X": X.copy(), "y": Y.copy(), "sigma": 0.1, "Xnew": XNEW.copy(), "lengthscale": 0.5,
                                                      "n_features": (5, 10), "seeds": (0,), "slope_tolerance": 0.25},
                                             {"X": "X", "y": "y", "sigma": "scale", "Xnew": "X", "lengthscale": "scale", "n_features": "object",
                                              "seeds": "seeds", "slope_tolerance": "scale"},
                                             use=lambda r: (r.kernel_error, r.mean_error)),
    "bayeskern.checks.rkhs_inner": Case(bk.checks.rkhs_inner, lambda: {"kernel": RBF05(), "X": X.copy(), "alpha": Y.copy(), "Z": XNEW.copy(),
                                                                    "beta": np.ones(4)},
                                        {"kernel": "kernel", "X": "X", "alpha": "y", "Z": "X", "beta": "y"}),
    "bayeskern.checks.rkhs_norm": Case(bk.checks.rkhs_norm, lambda: {"kernel": RBF05(), "X": X.copy(), "alpha": Y.copy()},
                                       {"kernel": "kernel", "X": "X", "alpha": "y"}),
    # smoothing
    "bayeskern.smoothing.KDE": Case(lambda **kw: bk.smoothing.KDE(**kw), lambda: {"X": X.copy(), "bandwidth": 0.3},
                                    {"X": "X", "bandwidth": "scale"}, use=_kde_use),
    "bayeskern.smoothing.KDE.logpdf": Case(lambda Xnew: bk.smoothing.KDE(X, 0.3).logpdf(Xnew), lambda: {"Xnew": XNEW.copy()}, {"Xnew": "X"}),
    "bayeskern.smoothing.KDE.sample": Case(lambda n, seed: bk.smoothing.KDE(X, 0.3).sample(n, seed), lambda: {"n": 3, "seed": 0},
                                           {"n": "int", "seed": "seed"}),
    "bayeskern.smoothing.KDE.loo_log_likelihood": Case(lambda bandwidth: bk.smoothing.KDE(X, 0.3).loo_log_likelihood(bandwidth),
                                                       lambda: {"bandwidth": 0.2}, {"bandwidth": "scale"}),
    "bayeskern.smoothing.compare_smoothers": Case(bk.smoothing.compare_smoothers,
                                                  lambda: {"X": X.copy(), "y": Y.copy(), "Xnew": XNEW.copy(), "kernel": "gaussian", "bandwidth": 0.2,
                                                           "lengthscale": 0.3, "lam": 0.1},
                                                  {"X": "X", "y": "y", "Xnew": "X", "kernel": "choice", "bandwidth": "scale", "lengthscale": "scale",
                                                   "lam": "scale"},
                                                  use=lambda r: (r.smoother.mean, r.mercer.mean)),
    "bayeskern.smoothing.default_bandwidth_grid": Case(bk.smoothing.default_bandwidth_grid, lambda: {"X": X.copy(), "num": 5}, {"X": "X", "num": "int"}),
    "bayeskern.smoothing.default_lam_grid": Case(bk.smoothing.default_lam_grid, lambda: {"K": RBF05().evaluate(X), "num": 5}, {"K": "array", "num": "int"}),
    "bayeskern.smoothing.kde_orders": Case(bk.smoothing.kde_orders,
                                           lambda: {"x0": 0.5, "hs_bias": np.array([0.1, 0.2]), "hs_var": np.array([0.05, 0.1]), "ns": np.array([20, 40]),
                                                    "n_fixed": 20, "h_fixed": 0.1, "reps": 3, "seed": 0},
                                           {"x0": "real", "hs_bias": "array", "hs_var": "array", "n_fixed": "int", "h_fixed": "scale", "reps": "int",
                                            "seed": "seed"},
                                           use=lambda r: (r.bias2, r.var_h, r.var_n)),
    "bayeskern.smoothing.kernel_ridge": Case(bk.smoothing.kernel_ridge,
                                             lambda: {"kernel": RBF05(), "X": X.copy(), "y": Y.copy(), "lam": 0.1, "Xnew": XNEW.copy(), "cv": 3, "seed": 0,
                                                      "loo": True},
                                             {"kernel": "kernel", "X": "X", "y": "y", "lam": "scale", "Xnew": "X", "seed": "seed", "loo": "flag"},
                                             use=lambda r: (r.mean, r.alpha)),
    "bayeskern.smoothing.kernel_ridge[grid]": Case(bk.smoothing.kernel_ridge,
                                                   lambda: {"kernel": RBF05(), "X": X.copy(), "y": Y.copy(), "lam": None, "Xnew": XNEW.copy(), "cv": 3,
                                                            "seed": 0},
                                                   {"seed": "seed", "cv": "choice"}, use=lambda r: (r.mean, r.alpha)),
    "bayeskern.smoothing.nadaraya_watson": Case(bk.smoothing.nadaraya_watson,
                                                lambda: {"X": X.copy(), "y": Y.copy(), "Xnew": XNEW.copy(), "bandwidth": 0.3, "kernel": "gaussian", "loo": True},
                                                {"X": "X", "y": "y", "Xnew": "X", "bandwidth": "scale", "kernel": "choice", "loo": "flag"},
                                                use=lambda r: r.mean),
    "bayeskern.smoothing.smoothing_kernel": Case(bk.smoothing.smoothing_kernel, lambda: {"kernel": "gaussian"}, {"kernel": "choice"},
                                                 use=lambda k: k.constant(1)),
    "bayeskern.smoothing.smoothing_weights": Case(bk.smoothing.smoothing_weights,
                                                  lambda: {"X": X.copy(), "Xnew": XNEW.copy(), "bandwidth": 0.3, "kernel": "gaussian"},
                                                  {"X": "X", "Xnew": "X", "bandwidth": "scale", "kernel": "choice"}),
    # ntk and datasets
    "bayeskern.ntk.dynamics": Case(bk.ntk.dynamics,
                                   lambda: {"kernel": K.NTK(2), "X": X.copy(), "y": Y.copy(), "Xnew": XNEW.copy(), "eta": 0.5, "t": np.array([0.0, 1.0, 10.0]),
                                            "f0": np.zeros(6), "f0_new": np.zeros(4)},
                                   {"kernel": "kernel", "X": "X", "y": "y", "Xnew": "X", "eta": "scale", "t": "array", "f0": "y", "f0_new": "y"}),
    "bayeskern.datasets.sinusoid": Case(bk.datasets.sinusoid, lambda: {"n": 5, "noise": 0.3, "seed": 0}, {"n": "int", "noise": "scale", "seed": "seed"}),
    "bayeskern.datasets.load": Case(bk.datasets.load, lambda: {"source": "sinusoid", "n": 5, "seed": 0, "noise": 0.3},
                                    {"source": "choice", "n": "int", "seed": "seed", "noise": "scale"}, use=lambda d: (d.X, d.y)),
}

# k.evaluate(X, Xs) and phi(X) for every kernel and feature map class (the inputs spoilt, the object good)
_EVALUATE = {
    "NNGP": lambda: K.NNGP(2), "NTK": lambda: K.NTK(2), "PRML": lambda: K.PRML(1.0, 4.0, 0.5, 0.3), "RBF": RBF05, "ArcCosine": lambda: K.ArcCosine(1),
    "Boxcar": lambda: K.Boxcar(0.3), "Constant": lambda: K.Constant(0.7), "FeatureKernel": lambda: K.FeatureKernel(POLY2(), 1.0),
    "Linear": K.Linear, "Matern12": lambda: K.Matern12(0.5), "Matern32": lambda: K.Matern32(0.5), "Matern52": lambda: K.Matern52(0.5),
    "Mixture": lambda: K.Mixture([0.0, 1.0], 0.5, [0.4, 0.6]), "Periodic": lambda: K.Periodic(1.0, 0.5), "Polynomial": lambda: K.Polynomial(2),
    "ProbabilityProduct": lambda: K.ProbabilityProduct(0.5, 0.3), "Product": lambda: RBF05() * K.Linear(), "RatQuad": lambda: K.RatQuad(2.0, 0.5),
    "Scaled": lambda: 2.0 * RBF05(), "SetIntersection": K.SetIntersection, "Sigmoid": lambda: K.Sigmoid(0.5, -0.2), "Sum": lambda: RBF05() + K.Linear(),
    "White": lambda: K.White(0.1),
}
REGISTRY.update({f"bayeskern.kernels.{name}.evaluate": _evaluate_case(make) for name, make in _EVALUATE.items()})
REGISTRY["bayeskern.kernels.MahalanobisRBF.evaluate"] = _evaluate_case(lambda: K.MahalanobisRBF(np.array([[0.5, 0.1], [0.1, 0.3]])), inputs=X2)
REGISTRY["bayeskern.kernels.FisherKernel.evaluate"] = Case(
    lambda X: K.FisherKernel(_normal_model(), {"mu": 0.3, "sigma": 1.2}, information=np.eye(2)).evaluate(X), lambda: {"X": X.copy()}, {"X": "X"}
)
_CALL = {
    "Fourier": lambda: bk.features.Fourier(3), "GaussianBasis": lambda: bk.features.GaussianBasis([0.0, 0.5, 1.0], 0.3),
    "MercerFeatures": lambda: bk.features.MercerFeatures(RBF05(), X), "Monomials": lambda: bk.features.Monomials(3),
    "Polynomial": lambda: bk.features.Polynomial(3),
    "PolynomialKernelFeatures": lambda: bk.features.PolynomialKernelFeatures(2, 1.0), "PowerSet": bk.features.PowerSet,
    "RandomFourier": lambda: bk.features.RandomFourier(20, 0.5), "SigmoidBasis": lambda: bk.features.SigmoidBasis([0.0, 0.5, 1.0], 0.3),
}
REGISTRY.update({f"bayeskern.features.{name}.__call__": _call_case(make) for name, make in _CALL.items()})


@cache
def _plug_in():
    model = _gp_model()
    return PlugIn(model, _record(model))


@cache
def _conditioned_gp():
    return bk.gp.condition(RBF05(), X, Y, 0.1)


@cache
def _conditioned_blr():
    return bk.blr.condition(POLY2(), X, Y, 0.1, 1.0)


#: public names with no bad-input case of their own, and why
EXEMPT = {
    # abstract bases: they only define the interface; every concrete subclass has its cases
    "bayeskern.kernels.Kernel": "abstract base of the kernels",
    "bayeskern.features.FeatureMap": "abstract base of the feature maps",
    # results: frozen records that functions return; users read them, they do not build them from input
    "bayeskern.gp.GPPosterior": "result", "bayeskern.blr.BLRPosterior": "result", "bayeskern.fit.Diagnostics": "result",
    "bayeskern.fit.EBvsMCMC": "result", "bayeskern.fit.EmpiricalBayesResult": "result", "bayeskern.fit.EvidenceResult": "result",
    "bayeskern.fit.Laplace": "result", "bayeskern.fit.Optimum": "result", "bayeskern.checks.FeatureError": "result", "bayeskern.checks.ApproximationError": "result",
    "bayeskern.checks.KernelTrickResult": "result", "bayeskern.checks.PSDCheck": "result", "bayeskern.checks.RFFConvergence": "result",
    "bayeskern.checks.RidgeDualityResult": "result", "bayeskern.checks.SamplingCheckResult": "result", "bayeskern.smoothing.KDEOrders": "result",
    "bayeskern.smoothing.KernelRidgeResult": "result", "bayeskern.smoothing.NadarayaWatsonResult": "result",
    "bayeskern.smoothing.SmootherComparison": "result", "bayeskern.ntk.NTKDynamics": "result", "bayeskern.datasets.Data": "result", "bayeskern.datasets.Standardisation": "result",
    # a record of profile functions, built by smoothing_kernel(name), which has its cases
    "bayeskern.smoothing.SmoothingKernel": "built by smoothing_kernel",
    # solvers and likelihood records: built by condition() / the likelihood functions, which have their cases
    "bayeskern.gp.ExactGP": "built by gp.condition", "bayeskern.blr.WeightSpaceBLR": "built by blr.condition",
    "bayeskern.gp.GPLikelihood": "built by gp.marginal_likelihood", "bayeskern.blr.BLRLikelihood": "built by blr.likelihood",
    # warning classes
    "bayeskern.fit.FitWarning": "warning", "bayeskern.smoothing.SmoothingWarning": "warning",
}


def _public_callables() -> list[str]:
    return [f"{m.__name__}.{name}" for m in PUBLIC_MODULES for name in m.__all__ if callable(getattr(m, name))]


def test_every_public_callable_has_bad_input_cases():
    """A new public function or class cannot ship without an entry here (or a reasoned exemption)."""
    missing = [name for name in _public_callables() if name not in EXEMPT and not any(k == name or k.startswith((name + ".", name + "[")) for k in REGISTRY)]
    assert not missing, f"public callables without bad-input cases in REGISTRY (or a reason in EXEMPT): {missing}"
    stale = sorted(set(EXEMPT) - set(_public_callables()))
    assert not stale, f"EXEMPT names that are no longer public callables: {stale}"
    for name in EXEMPT:  # exemptions are only for what takes no user data: bases, results, warnings
        obj = eval(name, {"bayeskern": bk})  # noqa: S307
        assert isinstance(obj, type), name


def test_every_good_call_succeeds():
    """The registry's good arguments are good: each case runs (the MCMC/optimiser ones up to the tripwire)."""
    for key, case in REGISTRY.items():
        if case.samples:
            continue
        _assert_finite(_result(case, case.good()), key)


# -- the contract --------------------------------------------------------------------------------------
class _Tripwire(Exception):
    """Raised where MCMC sampling or the empirical-Bayes optimisation would start."""


@pytest.fixture(autouse=True)
def _no_sampling(monkeypatch):
    def tripwire(*args, **kwargs):
        raise _Tripwire("reached sampling/optimisation: the bad argument was not caught before it")

    monkeypatch.setattr(pm, "sample", tripwire)
    monkeypatch.setattr(sys.modules["bayeskern.fit.empirical_bayes"], "_Objective", tripwire)


def _result(case: Case, kwargs: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jitter notes, FitWarnings, SmoothingWarnings: allowed
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # never: a complex value silently made real
        result = case.call(**kwargs)
        return case.use(result) if case.use is not None else result


def _assert_finite(value, where: str) -> None:
    """Every number in a result is finite (arrays, floats, dataclass fields, dicts, tuples)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" or isinstance(value, float | np.floating):
        assert np.all(np.isfinite(value)), f"{where}: non-finite numbers in the result: {value!r}"
    elif isinstance(value, np.ndarray) and value.dtype.kind == "c":
        raise AssertionError(f"{where}: a complex result")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name not in _MAY_BE_INFINITE:
                _assert_finite(getattr(value, f.name), f"{where}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            _assert_finite(v, f"{where}[{k!r}]")
    elif isinstance(value, tuple | list):
        for i, v in enumerate(value):
            _assert_finite(v, f"{where}[{i}]")


#: result fields that are infinite by definition in some valid cases
_MAY_BE_INFINITE = {"condition_number"}  # PSDCheck: λmax/λmin is inf for a singular K


def _names(message: str, arg: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(arg)}(?!\w)", message) is not None


def _holds(key: str, arg: str, value, must_raise: bool) -> None:
    """The contract for one spoilt argument: a ValueError naming `arg`, or (unless `must_raise`) a finite result."""
    case = REGISTRY[key]
    kwargs = case.good()
    kwargs[arg] = value
    try:
        result = _result(case, kwargs)
    except ValueError as err:
        assert _names(str(err), arg), f"{key}({arg}={value!r}): the ValueError does not name {arg!r}: {err}"
        return
    assert not must_raise, f"{key} accepted {arg}={value!r} and returned {result!r}"
    _assert_finite(result, f"{key}({arg}={value!r})")


def _pairs(*roles: str, sampling: bool = True) -> list:
    """(case, argument) for every argument in one of `roles`; without `sampling`, not the MCMC/optimiser cases."""
    return [
        pytest.param(key, arg, id=f"{key.removeprefix('bayeskern.')}:{arg}")
        for key, case in REGISTRY.items()
        if sampling or not case.samples
        for arg, role in case.roles.items()
        if role in roles
    ]


def _as_array(value) -> np.ndarray:
    return np.array(value, dtype=np.float64)


def _spoil_entries(value, entry):
    """`value` (an array or a {name: number} dict) with `entry(a)` applied to its numbers."""
    if isinstance(value, dict):
        first = next(iter(value))
        return {**value, first: entry(_as_array(value[first]))}
    return entry(_as_array(value))


# -- complex ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key, arg", _pairs("X", "y", "scale", "real", "array", "prob", "dict"))
@FEW
@given(imag=st.floats(-10.0, 10.0, allow_nan=False))
def test_complex_values_are_refused(key, arg, imag):
    """Complex input is never cast to real: x + i·b, even with b = 0, gets a ValueError naming the argument."""
    _holds(key, arg, _spoil_entries(REGISTRY[key].good()[arg], lambda a: a + 1j * imag), must_raise=True)


# -- NaN and ±inf -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("key, arg", _pairs("X", "y", "scale", "real", "array", "prob", "dict"))
@FEW
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), where=st.integers(0, 100))
def test_non_finite_values_are_refused(key, arg, bad, where):
    def spoil(a):
        a = np.array(a, dtype=np.float64)
        a.flat[where % a.size] = bad
        return a

    _holds(key, arg, _spoil_entries(REGISTRY[key].good()[arg], spoil), must_raise=True)


# -- overflow and underflow of scales ------------------------------------------------------------------------
HUGE = st.floats(1e154, 1e308)  # s² overflows float64
TINY = st.floats(5e-324, 1e-154)  # s² underflows to 0 (subnormal s among them)


@pytest.mark.parametrize("key, arg", _pairs("scale", sampling=False))
@SOME
@given(value=st.one_of(HUGE, TINY))
def test_extreme_scales_are_named_or_finite(key, arg, value):
    """σ = 1e200 squares to inf, σ = 1e-200 to 0: a ValueError naming the scale, or a finite answer."""
    _holds(key, arg, value, must_raise=False)


@pytest.mark.parametrize("key, arg", _pairs("X", "y", "array", sampling=False))
@FEW
@given(factor=st.floats(1e100, 1e300))
def test_huge_data_are_named_or_finite(key, arg, factor):
    """Inputs, targets and hyperparameter arrays multiplied by up to 1e300: named, or finite results."""
    _holds(key, arg, _spoil_entries(REGISTRY[key].good()[arg], lambda a: a * factor), must_raise=False)


# -- shapes ---------------------------------------------------------------------------------------------------
def _wrong_shapes(role: str, good):
    a = _as_array(good)
    if role == "X":
        return [a.reshape(a.shape[0], -1)[:, :, None] * np.ones(2), np.zeros((0, a.reshape(a.shape[0], -1).shape[1]))]
    if role == "y":
        return [np.append(a, 0.0), np.column_stack([a, a]), a[:0]]
    if role in ("scale", "real", "prob"):
        return [np.full((2, 2), a), np.array([])]
    return [np.ones((2, 2, 2)), np.array([])]  # "array": no hyperparameter here is 3-D


@pytest.mark.parametrize("key, arg", _pairs("X", "y", "scale", "real", "array", "prob"))
def test_wrong_shapes_are_refused(key, arg):
    for bad in _wrong_shapes(REGISTRY[key].roles[arg], REGISTRY[key].good()[arg]):
        _holds(key, arg, bad, must_raise=True)


# -- seeds ------------------------------------------------------------------------------------------------------
BAD_SEEDS = st.one_of(
    st.integers(max_value=-1), st.floats(allow_nan=True), st.text(max_size=3), st.booleans(), st.complex_numbers(max_magnitude=10),
    st.just([1, 2]), st.just(np.random.RandomState(0)),
)


@pytest.mark.parametrize("key, arg", _pairs("seed", "seeds"))
@FEW
@given(seed=BAD_SEEDS)
def test_bad_seeds_are_refused(key, arg, seed):
    """The one rule for seeds: None, a non-negative int, or a numpy Generator; anything else is named."""
    _holds(key, arg, (seed,) if REGISTRY[key].roles[arg] == "seeds" else seed, must_raise=True)


@pytest.mark.parametrize("key, arg", _pairs("seed", sampling=False))
def test_good_seeds_are_taken(key, arg):
    """A Generator and None are seeds too (no TypeError from SeedSequence); an int seed repeats its result."""
    for seed in (None, np.random.default_rng(3), 2**40):
        _holds(key, arg, seed, must_raise=False)


# -- integers, flags, options ----------------------------------------------------------------------------------
BAD_INTS = st.one_of(st.integers(-1000, -1), st.floats(allow_nan=True), st.text(max_size=3), st.booleans(), st.complex_numbers(max_magnitude=10))


@pytest.mark.parametrize("key, arg", _pairs("int"))
@FEW
@given(value=BAD_INTS)
def test_bad_integers_are_refused(key, arg, value):
    _holds(key, arg, value, must_raise=True)


@pytest.mark.parametrize("key, arg", _pairs("flag"))
@pytest.mark.parametrize("value", ["yes", 1, 0.0, None, np.array([True, False])])
def test_non_booleans_are_refused_as_flags(key, arg, value):
    _holds(key, arg, value, must_raise=True)


# -- wrong types -------------------------------------------------------------------------------------------------
_WRONG_TYPES = {  # role → values of the wrong type for it
    **dict.fromkeys(("X", "y", "real", "array"), ("abc", {"a": 1}, object())),
    **dict.fromkeys(("scale", "prob"), ("abc", {"a": 1}, object(), True)),  # a truth value is no scale (it was taken as 1)
    "name": (7, object(), ""),
    "dict": ("abc", object(), 7, {"a": "abc"}),  # a dict is the right type: its entries are wrong
    **dict.fromkeys(("model", "kernel", "kernels", "features", "object", "choice"), ("abc", {"a": 1}, object(), 7)),
}


@pytest.mark.parametrize(
    "key, arg, value",
    [pytest.param(*p.values, value, id=f"{p.id}={type(value).__name__}") for p in _pairs(*_WRONG_TYPES)
     for value in _WRONG_TYPES[REGISTRY[p.values[0]].roles[p.values[1]]]],
)
def test_wrong_types_are_refused(key, arg, value):
    """A string for `model`/`kernel`, a dict for X, an object for σ …: a ValueError naming the argument."""
    _holds(key, arg, value, must_raise=True)


# -- the findings of the fuzzing campaign, one by one -------------------------------------------------------------
FINDINGS = [
    ("bayeskern.gp.posterior", "sigma", 1e200),
    ("bayeskern.blr.posterior", "sigma", 1e200),
    ("bayeskern.checks.kernel_trick", "sigma", 1e200),
    ("bayeskern.gp.posterior", "sigma", 1e-200),
    ("bayeskern.gp.prior_samples", "seed", -1),
    ("bayeskern.gp.prior_samples", "seed", 1.5),
    ("bayeskern.features.RandomFourier", "seed", "a"),
    ("bayeskern.fit.empirical_bayes", "model", "model"),
    ("bayeskern.kernels.Constant", "c", np.ones((2, 2))),
    ("bayeskern.kernels.White", "sigma", np.ones((2, 2))),
    ("bayeskern.kernels.RatQuad", "alpha", [0.5]),
    ("bayeskern.kernels.Periodic", "period", np.ones((2, 2))),
    ("bayeskern.gp.posterior", "X", X + 1j),
    ("bayeskern.gp.posterior", "Xnew", XNEW + 0j),
]


@pytest.mark.parametrize("key, arg, value", FINDINGS, ids=[f"{k.removeprefix('bayeskern.')}:{a}" for k, a, _ in FINDINGS])
def test_fuzz_findings(key, arg, value):
    _holds(key, arg, value, must_raise=True)


def test_evidence_approximation_on_huge_inputs_names_the_features():
    """x·1e300 made ΦᵀΦ overflow and np.linalg.eigh raise LinAlgError; x·1e150 overflowed only ΦᵀΦ."""
    for scale in (1e300, 1e150):
        with pytest.raises(ValueError, match=r"features.* of X.*not finite"):
            bk.fit.evidence_approximation(POLY2(), X * scale, Y)


def test_a_kernel_that_overflows_is_named_in_the_error():
    """k(x, x) = x·x overflows for x = 1e200: a ValueError naming the kernel (its description is built only then)."""
    with pytest.raises(ValueError, match=r"Linear\(\) evaluated on X is not finite: it overflows float64"):
        bk.kernels.Linear().evaluate(np.array([[1e200], [1.0]]))
    with pytest.raises(ValueError, match=r"RBF\(.*\) \+ Linear\(\) evaluated on X and Xs is not finite"):
        (bk.kernels.RBF(lengthscale=1.0) + bk.kernels.Linear()).evaluate(np.array([[1e200]]), np.array([[1e200], [2.0]]))


def test_blr_with_ill_conditioned_features_names_the_cause():
    """Polynomial(12) on x ∈ [0, 1000]: B = I + ΨᵀΨ/σ² (entries ~1e74) is not PD in float64; a LinAlgError before."""
    with pytest.raises(ValueError, match=r"features .*of X are (too ill-conditioned|numerically rank-deficient)"):
        bk.blr.posterior(bk.features.Polynomial(12), X * 1e3, Y, sigma=0.1, prior_cov=1.0)


# -- results finite where the maths is: bounded kernels on any finite input ------------------------------------------
BOUNDED = {  # 0 ≤ k ≤ k(x, x) ≤ a constant: the Gram matrix is finite for every finite input and scale
    "RBF": lambda s: K.RBF(s), "Matern12": lambda s: K.Matern12(s), "Matern32": lambda s: K.Matern32(s),
    "Matern52": lambda s: K.Matern52(s), "RatQuad": lambda s: K.RatQuad(2.0, s), "Periodic": lambda s: K.Periodic(1.0, s),
    "Boxcar": lambda s: K.Boxcar(s), "ProbabilityProduct": lambda s: K.ProbabilityProduct(0.5, s),
}


@pytest.mark.parametrize("name", BOUNDED)
@FEW
@given(factor=st.floats(1e100, 1e300), scale=st.one_of(st.just(0.5), st.floats(1e-300, 1e-100), st.floats(1e100, 1e300)))
def test_bounded_kernels_stay_finite(name, factor, scale):
    """Far-apart inputs (|x| up to 1e300) and extreme length scales give k ∈ [0, k(x, x)], never NaN/inf."""
    kernel = BOUNDED[name](scale)
    K_ = kernel.evaluate(X * factor)
    assert np.all(np.isfinite(K_)), f"{kernel!r} on X·{factor:g}: {K_}"
    assert np.all(K_ >= 0.0) and np.all(K_ <= np.diag(K_)[:, None] * (1 + 1e-12) + 1e-300)


def test_a_random_variable_where_a_number_is_needed_is_named():
    """Conditioning at fixed hyperparameters with a PyMC random variable as σ: a ValueError naming sigma and what to do
    instead (a TypeError from float() of a TensorVariable before)."""
    with pm.Model():
        s = pm.HalfNormal("s", 1.0)
        calls = [lambda: bk.gp.posterior(K.RBF(0.3), X, Y, sigma=s), lambda: bk.gp.condition(K.RBF(0.3), X, Y, sigma=s),
                 lambda: bk.blr.posterior(POLY2(), X, Y, sigma=s, prior_cov=1.0), lambda: bk.blr.condition(POLY2(), X, Y, sigma=s, prior_cov=1.0),
                 lambda: bk.checks.approximation_error(K.RBF(0.3), bk.approx.HSGP(m=20, c=2.0), X, Y, sigma=s)]
        for call in calls:
            with pytest.raises(ValueError, match=r"sigma must be a number here, got the symbolic s .*marginal_likelihood"):
                call()


def test_symbolic_hyperparameters_are_still_taken():
    """The layer checks numbers only: random variables keep flowing into kernels and likelihoods."""
    with pm.Model():
        s = pm.HalfNormal("s", 1.0)
        k = K.Constant(s) + K.White(s) + K.Scaled(K.RBF(s), s)
        assert k.full(pt.as_tensor_variable(X)).ndim == 2
        with pytest.raises(ValueError, match="c must be a scalar"):
            K.Constant(pm.HalfNormal("v", 1.0, shape=2))


def test_a_prior_that_allows_negative_values_is_refused_for_a_positive_parameter():
    """σ with a Normal prior fitted to σ = −0.019 (σ enters as σ²), and a Normal amplitude makes the kernel indefinite (a
    review): a free random variable whose prior puts mass below 0 (no PyMC transform, or an interval reaching below 0)
    is refused where a positive (non-negative) parameter is asked for; positive priors and expressions pass."""
    refused = [lambda: pm.Normal("v", 0.3, 1.0), lambda: pm.StudentT("v", nu=3.0, mu=1.0, sigma=1.0), lambda: pm.Uniform("v", -1.0, 1.0)]
    taken = [lambda: pm.HalfNormal("v", 1.0), lambda: pm.Gamma("v", 2.0, 1.0), lambda: pm.Uniform("v", 0.01, 1.0),
             lambda: pm.Beta("v", 2.0, 2.0), lambda: pm.math.exp(pm.Normal("v", 0.0, 1.0)),
             lambda: pm.HalfNormal("v", 1.0, default_transform=None),  # the support decides, not the model's transform
             lambda: pm.TruncatedNormal("v", 0.0, 1.0, lower=0.0)]
    uses = {"sigma": lambda v: bk.gp.marginal_likelihood("y", X, Y, K.RBF(0.3), v),
            "lengthscale": lambda v: K.RBF(v), "scale": lambda v: v * K.RBF(0.3)}
    for arg, use in uses.items():
        sign = "non-negative" if arg == "scale" else "positive"
        for make in refused:
            with pm.Model(), pytest.raises(ValueError, match=rf"{arg} must be {sign}, but its prior \(v: \w+\) puts mass below 0"):
                use(make())
        for make in taken:
            with pm.Model():
                use(make())
    with pm.Model(), pytest.raises(ValueError, match=r"lengthscale must be positive, but its prior \(v: Uniform\)"):
        K.RBF(pm.Uniform("v", np.array([-1.0, 0.5]), 2.0, shape=2))  # ARD length scales: a vector bound, by its smallest


def test_a_model_built_in_single_precision_is_refused_by_name_before_any_fit():
    """Under floatX = float32 PyMC's random variables are float32: empirical Bayes and MCMC refuse the model with a
    ValueError naming the variables and the setting (they failed deep inside with PyTensor's TypeError), also when the
    model comes from the context."""
    import pytensor

    X, y = bk.datasets.sinusoid(10, 0.2, seed=0)
    with pytensor.config.change_flags(floatX="float32"), pm.Model() as model:
        ell, s = pm.HalfNormal("ell", 1.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X, y, bk.kernels.RBF(ell), s)
    for fit in (bk.fit.empirical_bayes, bk.fit.mcmc):
        with pytest.raises(ValueError, match=r"ell \(float32\), s \(float32\).*floatX = float64"):
            fit(model)
        with model, pytest.raises(ValueError, match="less than double precision"):
            fit()
