"""Checks: the kernel trick (property tests, a mismatched pair), ridge duality, sampling level, random-feature convergence, results as JSON."""

import numpy as np
import pymc as pm
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

import bayeskern as bk
import reference as ref
from bayeskern import features as F
from bayeskern import kernels as K

f64 = np.float64


def _random_spd(rng, M):
    A = rng.standard_normal((M, M))
    return A @ A.T / M + 0.1 * np.eye(M)  # non-diagonal, condition number ≲ 1e2


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), M=st.integers(1, 6), n=st.integers(3, 25), log_sigma=st.floats(-2.5, 0.5), bias=st.booleans())
def test_weight_and_function_space_agree_on_random_problems(seed, M, n, log_sigma, bias):
    """Random feature maps (Gaussian bases with random centers and width), random SPD Σ, random σ."""
    rng = np.random.default_rng(seed)
    phi = F.GaussianBasis(rng.uniform(-2, 2, (M, 2)), width=rng.uniform(0.3, 2.0), bias=bias)
    X, Xnew = rng.uniform(-2, 2, (n, 2)), rng.uniform(-2, 2, (7, 2))
    y = rng.standard_normal(n)
    result = bk.checks.kernel_trick(phi, _random_spd(rng, M + bias), X, y, sigma=np.exp(log_sigma), Xnew=Xnew)
    # the bar: 1e-8 relative on mean, covariance and log marginal likelihood
    assert result.passed and result.rtol == 1e-8, result.rel_diff
    assert set(result.rel_diff) == {"mean", "cov", "log_marginal_likelihood"}
    assert result.M == M + bias and result.N == n
    assert result.expected_cheaper == ("weight_space" if M + bias < n else "function_space")


def test_a_plain_callable_feature_map_is_audited_too():
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((1, 4)), rng.standard_normal(4)
    X, y = bk.datasets.sinusoid(15, 0.2, 0)
    result = bk.checks.kernel_trick(lambda Z: np.tanh(Z @ A + b), _random_spd(rng, 4), X, y, sigma=0.3)
    assert result.passed and result.M == 4, result.rel_diff


def test_a_mismatched_kernel_is_reported_as_failing():
    X, y = bk.datasets.sinusoid(20, 0.2, 0)
    phi = F.Polynomial(3)
    good = bk.checks.kernel_trick(phi, 2.0, X, y, sigma=0.2, kernel=K.FeatureKernel(phi, 2.0))
    bad = bk.checks.kernel_trick(phi, 2.0, X, y, sigma=0.2, kernel=K.FeatureKernel(phi, 2.1))  # Σ off by 5 %
    assert good.passed and not bad.passed
    assert bad.rel_diff["log_marginal_likelihood"] > 1e-4
    assert set(bad.to_dict()) >= {"passed", "max_abs_diff", "rel_diff", "seconds", "cheaper"}


def test_quantities_near_zero_are_compared_at_their_scale():
    """A log density of ~1e-15 nats (the data scaled by c, found by brentq, until log p(t) = 0) and a posterior covariance
    at round-off (8 points, 11 features, σ = 1e-7, predicted at the data: cov ~ σ² against a prior variance ~ 0.3): both
    sides agree to 1e-13 in absolute terms, and the check passes, where a difference relative to |log p| or max |cov|
    alone made it fail (relative differences 9.0 and 0.02). A 5 % error in Σ is still caught at that scale."""
    X, t = bk.datasets.sinusoid(n=20, noise=0.2, seed=1)
    phi = F.PolynomialKernelFeatures(degree=3, c=1.0)
    lml = lambda c: bk.blr.posterior(phi, X, t * c, sigma=0.5 * c, prior_cov=c * c).log_marginal_likelihood  # noqa: E731
    c = scipy.optimize.brentq(lml, 0.2, 0.6, xtol=1e-15)
    assert abs(lml(c)) < 1e-12
    at_zero = bk.checks.kernel_trick(phi, c * c, X, t * c, sigma=0.5 * c, kernel=K.Polynomial(degree=3, c=1.0) * (c * c))
    assert at_zero.passed and at_zero.max_abs_diff["log_marginal_likelihood"] < 1e-12, at_zero.rel_diff
    off = bk.checks.kernel_trick(phi, c * c, X, t * c, sigma=0.5 * c, kernel=K.Polynomial(degree=3, c=1.0) * (1.05 * c * c))
    assert not off.passed and off.rel_diff["log_marginal_likelihood"] > 1e-3
    X, t = bk.datasets.sinusoid(n=8, noise=0.2, seed=0)
    tiny = bk.checks.kernel_trick(F.GaussianBasis(np.linspace(0, 1, 11), 0.1), 0.3, X, t, sigma=1e-7)
    assert np.max(np.abs(bk.blr.posterior(F.GaussianBasis(np.linspace(0, 1, 11), 0.1), X, t, 1e-7, 0.3).cov)) < 1e-12
    assert tiny.passed and tiny.max_abs_diff["cov"] < 1e-13, tiny.rel_diff


class _CrossOff(K.Polynomial):
    """The polynomial kernel scaled by `scale`, right on K(X, X) and k(x*, x*) but 2 % off on the cross block K(X*, X)."""

    scale, n = 1.0, 20

    def _values(self, X, Xs=None, diag=False):
        out = self.scale * np.array(super()._values(X, Xs, diag=diag), dtype=float)
        if Xs is not None and not diag:
            out = 1.02 * out
        elif Xs is None and not diag and out.shape[0] > self.n:  # [X; X*] stacked: its off-diagonal blocks
            out[: self.n, self.n :] *= 1.02
            out[self.n :, : self.n] *= 1.02
        return out


def test_a_small_posterior_mean_off_by_two_percent_fails():
    """Σ = 1e-10 against σ = 1: the posterior mean is ~1e-9 of max |y|, the covariance and log p agree to round-off at
    their scales; a kernel 2 % off on K(X*, X) alone makes the mean 2 % off, which the check catches (relative to the
    mean itself, not to max |y|, where it would be 2e-11: a review's case)."""
    X, t = bk.datasets.sinusoid(20, 0.2, 1)
    kernel = _CrossOff(degree=3, c=1.0)
    kernel.scale = 1e-10
    result = bk.checks.kernel_trick(F.PolynomialKernelFeatures(degree=3, c=1.0), 1e-10, X, t, sigma=1.0,
                                    Xnew=np.linspace(0, 1, 7)[:, None], kernel=kernel)
    assert not result.passed and result.rel_diff["mean"] == pytest.approx(0.02, rel=0.05)
    assert result.rel_diff["cov"] < 1e-8 and result.rel_diff["log_marginal_likelihood"] < 1e-8


def test_primal_and_dual_ridge_agree_and_equal_the_gp_mean():
    X, y = bk.datasets.sinusoid(30, 0.2, 1)
    Xnew = np.linspace(-0.1, 1.1, 13)[:, None]
    phi = F.GaussianBasis(np.linspace(0, 1, 9), 0.15, bias=True)
    result = bk.checks.ridge_duality(phi, X, y, lam=0.05, Xnew=Xnew)
    assert result.passed, result.rel_diff
    # and against numpy written from the two formulas
    Phi, Phi_new = ref.gaussian_features(X, np.linspace(0, 1, 9)[:, None], 0.15), ref.gaussian_features(Xnew, np.linspace(0, 1, 9)[:, None], 0.15)
    Phi, Phi_new = np.hstack([np.ones((30, 1)), Phi]), np.hstack([np.ones((13, 1)), Phi_new])
    w = np.linalg.solve(Phi.T @ Phi + 0.05 * np.eye(10), Phi.T @ y)
    np.testing.assert_allclose(result.primal, Phi_new @ w, rtol=1e-9, atol=1e-12)
    a = np.linalg.solve(Phi @ Phi.T + 0.05 * np.eye(30), y)
    np.testing.assert_allclose(result.dual, Phi_new @ Phi.T @ a, rtol=1e-9, atol=1e-12)


def _twin_models(X, y, phi, scale_prior_blr, scale_prior_gp):
    """The prior scales are data and the initial points fixed, so that two GP models of different prior scales are one
    structure, whose sampler `bk.fit.mcmc` compiles once (nutpie's compile is most of this test's time)."""
    with pm.Model() as blr_model:
        scale = pm.HalfNormal("scale", pm.Data("scale_prior", f64(scale_prior_blr)), initval=f64(1.0))
        sigma = pm.HalfNormal("sigma", f64(0.5))
        bk.blr.likelihood("y", X, y, phi, prior_cov=scale, sigma=sigma, collapsed=True)
    with pm.Model() as gp_model:
        scale = pm.HalfNormal("scale", pm.Data("scale_prior", f64(scale_prior_gp)), initval=f64(1.0))
        sigma = pm.HalfNormal("sigma", f64(0.5))
        bk.gp.marginal_likelihood("y", X, y, K.FeatureKernel(phi, scale), sigma)
    return blr_model, gp_model


def test_sampling_level_agreement_and_a_prior_mismatch_caught():
    X, y = bk.datasets.sinusoid(12, 0.3, 2)
    phi = F.Polynomial(3)
    Xnew = np.linspace(0, 1, 5)[:, None]
    settings_ = dict(draws=400, tune=300, chains=2, seed=4)
    same = bk.checks.kernel_trick_mcmc(*_twin_models(X, y, phi, 2.0, 2.0), shared=("scale", "sigma"), Xnew=Xnew, **settings_)
    assert same.passed, same
    differ = bk.checks.kernel_trick_mcmc(*_twin_models(X, y, phi, 2.0, 0.05), shared=("scale", "sigma"), **settings_)
    assert not differ.passed and differ.z["scale"] > differ.z_max


def test_the_sampling_checks_warnings_point_at_its_caller():
    """`kernel_trick_mcmc` samples through `bk.fit.mcmc`, whose convergence warning (2 × 30 draws: too few) is reported
    at the caller's line, not at the line inside the package that called mcmc (checks/sampling.py)."""
    X, y = bk.datasets.sinusoid(12, 0.3, 2)
    with pytest.warns(bk.fit.FitWarning, match="diagnostics failed") as said:
        bk.checks.kernel_trick_mcmc(*_twin_models(X, y, F.Polynomial(3), 2.0, 2.0), shared=("scale", "sigma"),
                                    draws=30, tune=30, chains=2, seed=4)
    assert {w.filename for w in said if issubclass(w.category, bk.fit.FitWarning)} == {__file__}


def test_random_fourier_features_converge_at_about_one_over_root_d():
    X, y = bk.datasets.sinusoid(30, 0.2, 5)
    result = bk.checks.rff_convergence(X, y, 0.2, np.linspace(0, 1, 11)[:, None], lengthscale=0.3,
                                       n_features=(50, 200, 800, 3200), seeds=range(8))
    # Monte Carlo error of a kernel estimate ∝ D^(−½): the fitted slope within ±0.15 of −½ (measured −0.53 and −0.57 for
    # the mean here; 30 points and D ≤ 3200 features: the BLR factorises the 30 × 30 D, 0.2 s for the 32 fits)
    assert abs(result.kernel_slope + 0.5) < 0.15, result.to_dict()
    assert abs(result.mean_slope + 0.5) < 0.2, result.to_dict()
    assert result.kernel_error[-1] < result.kernel_error[0] / 4
    assert result.passed  # both slopes within the default ±0.25 of −½


def test_checks_reject_bad_input():
    X, y = bk.datasets.sinusoid(10, 0.2, 0)
    with pytest.raises(ValueError, match="kernel must be a bayeskern.kernels kernel"):
        bk.checks.kernel_trick(F.Polynomial(2), 1.0, X, y, 0.1, kernel="rbf")
    with pytest.raises(ValueError, match="lam must be positive"):
        bk.checks.ridge_duality(F.Polynomial(2), X, y, lam=0.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        bk.checks.kernel_trick(F.Polynomial(2), 1.0, np.full((3, 1), np.nan), [1, 2, 3], 0.1)
    with pytest.raises(ValueError, match="need at least two feature counts"):
        bk.checks.rff_convergence(X, y, 0.1, X, n_features=(10,))


def test_every_check_result_to_dict_is_plain_json():
    """One convention (bayeskern._json.jsonable): arrays as lists, numpy scalars as Python, NaN and ±inf as None."""
    import json

    X = np.linspace(-1, 1, 8)[:, None]
    y = np.sin(3 * X[:, 0])
    phi = F.PolynomialKernelFeatures(2, 1.0)
    results = [
        bk.checks.kernel_trick(phi, 1.0, X, y, sigma=0.3),
        bk.checks.ridge_duality(phi, X, y, lam=0.1),  # primal, dual, gp_mean: arrays
        bk.checks.feature_error(phi, K.Polynomial(2, c=1.0), X),
        bk.checks.rff_convergence(X, y, 0.3, X[:3], lengthscale=0.5, n_features=(5, 10), seeds=(0,)),
        bk.checks.SamplingCheckResult(False, {"scale": np.float64(np.nan)}, {"scale": np.float64(0.5)}, np.inf, 4.0, 1e-3),
    ]
    for result in results:
        d = result.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d, type(result).__name__
    duality = results[1].to_dict()
    np.testing.assert_array_equal(duality["primal"], results[1].primal)
    assert isinstance(duality["primal"], list)
    assert results[4].to_dict()["z"] == {"scale": None} and results[4].to_dict()["predictive_z"] is None


def test_the_kernel_trick_times_each_side_by_its_fastest_of_several_runs():
    """A first run that pays one-time costs (0.3 s here: a user trial's feature map took 0.208 s on its first call and
    0.0017 s after) does not decide the timing: fast sides run up to TIMED_RUNS times and the fastest counts; a slow side
    (over TIMED_SECONDS) runs once."""
    import importlib
    import time

    module = importlib.import_module("bayeskern.checks.kernel_trick")  # (bayeskern.checks.kernel_trick is also a function)

    calls = []

    def first_slow():
        calls.append(None)
        time.sleep(0.3 if len(calls) == 1 else 0.0)
        return len(calls)

    result, seconds = module._timed(first_slow)
    assert len(calls) == module.TIMED_RUNS and result == module.TIMED_RUNS and seconds < 0.01
    calls.clear()
    _, seconds = module._timed(lambda: (calls.append(None), time.sleep(module.TIMED_SECONDS))[1])
    assert len(calls) == 1 and seconds >= module.TIMED_SECONDS
