"""The evidence approximation (fit.evidence): PRML's fixed point against the evidence over polynomial orders, its result's names, bad input."""

import numpy as np
import pytest
import scipy.optimize
import scipy.stats

import bayeskern as bk
import reference as ref
from bayeskern import features as F
from bayeskern.fit import FitWarning, evidence_approximation


@pytest.mark.filterwarnings("ignore:the evidence has .* distinct fixed points")  # true for some orders (the warning is tested below)
def test_log_evidence_against_polynomial_order():
    """The seeds' sinusoid with PRML figure 3.14's α = 5·10⁻³, β = 11.1: the evidence peaks at M ≈ 3, then falls."""
    X, y = bk.datasets.sinusoid(10, 0.3, 0)
    evidence = {
        M: bk.blr.posterior(F.Polynomial(M), X, y, sigma=11.1**-0.5, prior_cov=1 / 5e-3, Xnew=X[:1]).log_marginal_likelihood
        for M in range(10)
    }
    best = max(evidence, key=evidence.get)
    assert best in (3, 4, 5), evidence
    # a polynomial of degree ≤ 2 cannot follow one period of a sine: far less evidence
    assert max(evidence[M] for M in range(3)) < evidence[best] - 2.0, evidence
    # Occam's razor: 10 coefficients from 10 points are penalised
    assert evidence[9] < evidence[best] - 1.0, evidence
    # with α and β re-estimated (the fixed point), each order's evidence is at least that at PRML's values
    for M in range(1, 10):
        assert evidence_approximation(F.Polynomial(M), X, y).log_evidence >= evidence[M] - 1e-9


def test_evidence_approximation_rejects_bad_input():
    X, y = bk.datasets.sinusoid(10, 0.2, 0)
    with pytest.raises(ValueError, match="alpha must be positive"):
        evidence_approximation(F.Polynomial(2), X, y, alpha=0.0)
    with pytest.raises(ValueError, match="beta -> infinity"):  # a cubic fits a noise-free line to round-off
        evidence_approximation(F.Polynomial(3), X, 1.0 + 2.0 * X[:, 0])
    with pytest.warns(FitWarning, match="did not converge in 2 iterations"):
        short = evidence_approximation(F.Polynomial(3), X, y, maxiter=2)
    assert not short.converged and short.n_iterations == 2
    with pytest.raises(ValueError, match="alpha -> infinity"):
        evidence_approximation(F.Polynomial(0), X, y - y.mean())  # a constant cannot explain centred data


def test_evidence_result_names_its_log_marginal_likelihood_as_everywhere():
    """One name per concept: `log_marginal_likelihood` = ln N(t | 0, α̂⁻¹ΦΦᵀ + β̂⁻¹I) (PRML 3.86), `log_evidence` its alias."""
    X, y = bk.datasets.sinusoid(25, 0.3, 2)  # the data of test_evidence_fixed_point_equals_the_general_optimum
    with pytest.warns(FitWarning, match="2 distinct fixed points"):  # ln p = −21.78 and −25.76 (that test)
        fit = evidence_approximation(F.Polynomial(3), X, y)
    assert fit.converged
    Phi = ref.poly_features_1d(X[:, 0], 3)
    reference = scipy.stats.multivariate_normal(np.zeros(len(y)), Phi @ Phi.T / fit.alpha + np.eye(len(y)) / fit.beta).logpdf(y)
    np.testing.assert_allclose(fit.log_marginal_likelihood, reference, rtol=1e-10)  # a 25 × 25 Cholesky: round-off ~1e-14
    assert fit.log_evidence == fit.log_marginal_likelihood



def test_evidence_approximation_keeps_the_highest_of_several_fixed_points():
    """PRML's sinusoid (n = 25, noise 0.2) with a cubic: the evidence has a maximum at ln p = −24.43 (α ≈ 0.64, β ≈ 3.5: the
    noise takes nearly all of t), which the fixed point reaches from α = β = 1 (as scikit-learn's BayesianRidge does from its
    default start), and a higher one at −11.36. The result is the global maximum of ln p(t | α, β) written out in numpy
    (PRML 3.86) and found by a grid over log α, log β refined by SciPy; both maxima are listed and the warning says so."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    Phi = ref.poly_features_1d(X[:, 0], 3)
    N, M = Phi.shape

    def minus_log_evidence(z):
        a, b = np.exp(z)
        A = a * np.eye(M) + b * Phi.T @ Phi  # A = αI + βΦᵀΦ   (PRML 3.81)
        m = b * np.linalg.solve(A, Phi.T @ t)  # m_N = βA⁻¹Φᵀt   (PRML 3.84)
        E = b / 2 * np.sum((t - Phi @ m) ** 2) + a / 2 * m @ m  # E(m_N)   (PRML 3.82)
        return -(M / 2 * np.log(a) + N / 2 * np.log(b) - E - np.linalg.slogdet(A)[1] / 2 - N / 2 * np.log(2 * np.pi))

    grid = [(za, zb) for za in np.linspace(-15, 10, 51) for zb in np.linspace(-5, 10, 31)]
    best = scipy.optimize.minimize(minus_log_evidence, min(grid, key=minus_log_evidence), method="Nelder-Mead",
                                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000})
    with pytest.warns(FitWarning, match="2 distinct fixed points"):
        fit = evidence_approximation(F.Monomials(degree=3), X, t)
    assert fit.converged
    # the same maximum: the fixed point stops at a relative change of 1e-10, Nelder–Mead at 1e-10 in log α, log β
    np.testing.assert_allclose(fit.log_marginal_likelihood, -best.fun, atol=1e-9)
    np.testing.assert_allclose(np.log([fit.alpha, fit.beta]), best.x, atol=1e-6)
    assert [round(o.log_marginal_likelihood, 2) for o in fit.optima] == [-11.36, -24.43]
    np.testing.assert_allclose(fit.optima[1].log_marginal_likelihood, -minus_log_evidence(np.log(list(fit.optima[1].params.values()))), atol=1e-9)
    assert sum(o.starts for o in fit.optima) == 10  # the caller's start and the nine fixed ones, none dropped


def test_the_result_is_a_listed_fixed_point_when_some_start_converged():
    """From the local maximum (−24.43) with maxiter = 5, that start converges and the others do not: the result is that
    fixed point, converged and first in `optima` (a review found an unconverged run returned while `optima` listed only
    the converged one)."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with pytest.warns(FitWarning, match="2 distinct fixed points"):
        lower = evidence_approximation(F.Monomials(degree=3), X, t).optima[1].params
    fit = evidence_approximation(F.Monomials(degree=3), X, t, alpha=lower["alpha"], beta=lower["beta"], maxiter=5)
    assert fit.converged and len(fit.optima) >= 1
    assert (fit.alpha, fit.beta) == (fit.optima[0].params["alpha"], fit.optima[0].params["beta"])
    assert fit.log_marginal_likelihood == fit.optima[0].log_marginal_likelihood
