"""Bayesian linear regression: analytic posterior and evidence against numpy, the PyMC likelihoods, bad input."""

import numpy as np
import pymc as pm
import pytest
from scipy.stats import multivariate_normal, norm

import bayeskern as bk
import reference as ref
from bayeskern import features as F

# Both sides solve M × M systems with M ≤ 6 and well-conditioned matrices; the reference uses
# explicit inverses, good to ~1e-12 here. 1e-9 relative leaves a wide margin.
RTOL, ATOL = 1e-9, 1e-11

S4 = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.1], [0.1, 0.0, 0.1, 0.3]])


def _data():
    X, t = bk.datasets.sinusoid(15, 0.25, 1)
    return X, t, np.linspace(-0.1, 1.1, 7)[:, None]


@pytest.mark.parametrize("prior_cov", [0.5, np.array([2.0, 1.0, 0.5, 0.25]), S4], ids=["scalar", "diagonal", "matrix"])
@pytest.mark.parametrize("include_noise", [False, True])
def test_posterior_matches_numpy_reference(prior_cov, include_noise):
    X, t, Xs = _data()
    phi, sigma = F.Polynomial(3), 0.25
    post = bk.blr.posterior(phi, X, t, sigma=sigma, prior_cov=prior_cov, Xnew=Xs, include_noise=include_noise)
    S = prior_cov * np.eye(4) if np.ndim(prior_cov) == 0 else (np.diag(prior_cov) if np.ndim(prior_cov) == 1 else prior_cov)
    mN, SN, mean, cov, lml = ref.blr_posterior(ref.poly_features_1d(X, 3), t, sigma, S, ref.poly_features_1d(Xs, 3))
    if include_noise:
        cov = cov + sigma**2 * np.eye(len(Xs))
    np.testing.assert_allclose(post.weights_mean, mN, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.weights_cov, SN, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.mean, mean, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.cov, cov, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.var, np.diag(cov), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.log_marginal_likelihood, lml, rtol=1e-12)


def test_blr_equals_gp_with_the_feature_kernel():
    """The kernel trick: BLR with (φ, Σ) and the GP with k = φᵀΣφ give one predictive distribution."""
    X, t, Xs = _data()
    phi = F.GaussianBasis(np.linspace(0, 1, 5), 0.2, bias=True)
    S = np.diag([1.0, 2.0, 0.5, 1.5, 0.7, 1.2]) + 0.05
    blr = bk.blr.posterior(phi, X, t, sigma=0.2, prior_cov=S, Xnew=Xs)
    gp = bk.gp.posterior(bk.kernels.FeatureKernel(phi, S), X, t, sigma=0.2, Xnew=Xs)
    np.testing.assert_allclose(blr.mean, gp.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(blr.cov, gp.cov, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(blr.log_marginal_likelihood, gp.log_marginal_likelihood, rtol=1e-10)


def test_collapsed_model_logp_equals_evidence():
    X, t, _ = _data()
    phi, sigma = F.Polynomial(3), 0.3
    with pm.Model() as fixed:
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=S4, sigma=sigma, collapsed=True)
    evidence = bk.blr.posterior(phi, X, t, sigma=sigma, prior_cov=S4).log_marginal_likelihood
    np.testing.assert_allclose(fixed.compile_logp()({}), evidence, rtol=1e-12)

    with pm.Model() as hier:  # an overall prior scale and the noise as random variables
        scale = pm.HalfNormal("scale", 2.0)
        s = pm.HalfNormal("s", 1.0)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=scale * S4, sigma=s, collapsed=True)
    point = {"scale_log__": np.log(1.7), "s_log__": np.log(0.2)}
    expected = bk.blr.posterior(phi, X, t, sigma=0.2, prior_cov=1.7 * S4).log_marginal_likelihood
    np.testing.assert_allclose(hier.compile_logp(vars=[hier["y"]])(point), expected, rtol=1e-12)

    with pm.Model() as scalar:  # Σ = α⁻¹I with α random
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=1 / alpha, sigma=0.3, collapsed=True)
    expected = bk.blr.posterior(phi, X, t, sigma=0.3, prior_cov=1 / 2.5).log_marginal_likelihood
    np.testing.assert_allclose(scalar.compile_logp(vars=[scalar["y"]])({"alpha_log__": np.log(2.5)}), expected, rtol=1e-12)


def test_explicit_weights_model_logp_is_prior_plus_likelihood():
    X, t, _ = _data()
    phi, sigma = F.Polynomial(3), 0.3
    Phi = ref.poly_features_1d(X, 3)
    w = np.array([0.1, 5.0, -14.0, 9.0])
    for S, prior in [(S4, multivariate_normal(np.zeros(4), S4).logpdf(w)), (0.5, norm(0, np.sqrt(0.5)).logpdf(w).sum())]:
        with pm.Model() as model:
            bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=S, sigma=sigma)
        expected = prior + norm(Phi @ w, sigma).logpdf(t).sum()
        np.testing.assert_allclose(model.compile_logp()({"y_weights": w}), expected, rtol=1e-12)


def test_collapsed_prior_predictive_has_the_marginal_covariance():
    """Draws of t from the collapsed model: sample covariance within 5 Monte Carlo standard errors of ΦΣΦᵀ + σ²I."""
    X = np.linspace(0, 1, 4)[:, None]
    phi, sigma, n = F.Polynomial(2), 0.3, 20000
    S = np.array([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 0.8]])
    with pm.Model():
        y = bk.blr.likelihood("y", X=X, y=np.zeros(4), features=phi, prior_cov=S, sigma=sigma, collapsed=True)
        draws = pm.draw(y, draws=n, random_seed=1)
    Phi = ref.poly_features_1d(X, 2)
    C = Phi @ S @ Phi.T + sigma**2 * np.eye(4)
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C**2) / n)
    assert np.all(np.abs(draws.T @ draws / n - C) <= 5 * se)


def test_bad_input_gets_named_errors():
    X, t, _ = _data()
    phi = F.Polynomial(2)
    post = bk.blr.posterior
    with pytest.raises(ValueError, match="prior_cov is not symmetric"):
        post(phi, X, t, 0.1, [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="prior_cov is not positive definite"):
        post(phi, X, t, 0.1, [[1, 2, 0], [2, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="prior_cov must be positive"):
        post(phi, X, t, 0.1, -1.0)
    with pytest.raises(ValueError, match="prior_cov must be positive"):
        post(phi, X, t, 0.1, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="prior_cov has 2 rows but the feature map gives M=3"):
        post(phi, X, t, 0.1, np.eye(2))
    with pytest.raises(ValueError, match="prior_cov must be a square matrix"):
        post(phi, X, t, 0.1, np.ones((3, 2)))
    with pytest.raises(ValueError, match="sigma must be positive"):
        post(phi, X, t, 0.0, 1.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        post(phi, np.r_[X[:-1], [[np.nan]]], t, 0.1, 1.0)
    with pytest.raises(ValueError, match="y contains NaN"):
        post(phi, X, np.r_[t[:-1], np.nan], 0.1, 1.0)
    with pytest.raises(ValueError, match="y has 14 entries but X has 15 rows"):
        post(phi, X, t[:-1], 0.1, 1.0)
    with pytest.raises(ValueError, match="X is empty"):
        post(phi, np.zeros((0, 1)), [], 0.1, 1.0)
    with pytest.raises(ValueError, match="Xnew has 2 column"):
        post(phi, X, t, 0.1, 1.0, Xnew=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="features must be a feature map or a callable"):
        post("poly", X, t, 0.1, 1.0)
    with pm.Model():
        with pytest.raises(ValueError, match="prior_cov has 2 rows"):
            bk.blr.likelihood("y", X, t, phi, np.eye(2), 0.1)
        with pytest.raises(ValueError, match="sigma must be positive"):
            bk.blr.likelihood("y", X, t, phi, 1.0, -0.1)
