"""The evidence approximation (fit.evidence): PRML's fixed point against the evidence over polynomial orders, its result's names, bad input."""

import re
import warnings

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


def _exact_log_evidence(Phi, t, alpha, beta) -> float:
    """ln N(t | 0, ΦΦᵀ/α + I/β) in rational arithmetic (LDLᵀ of the exact C; only the logs are rounded): a reference
    that holds where C's condition number (1e11 here) puts float64's Cholesky 1e-5 off."""
    from fractions import Fraction
    import math

    N = len(t)
    P = [[Fraction(v) for v in row] for row in Phi.tolist()]
    a, b = Fraction(float(alpha)), Fraction(float(beta))
    C = [[sum(p * q for p, q in zip(P[i], P[j], strict=True)) / a + (1 / b if i == j else 0) for j in range(N)] for i in range(N)]
    y, D = [Fraction(v) for v in t.tolist()], []
    for k in range(N):  # Gaussian elimination without pivoting: C is SPD
        D.append(C[k][k])
        for i in range(k + 1, N):
            f = C[i][k] / C[k][k]
            for j in range(k, N):
                C[i][j] -= f * C[k][j]
            y[i] -= f * y[k]
    quad = sum(y[k] * y[k] / D[k] for k in range(N))  # tᵀC⁻¹t = Σ yₖ²/Dₖ
    return -0.5 * float(quad) - 0.5 * sum(math.log(d) for d in D) - N / 2 * math.log(2 * math.pi)


def test_a_start_running_off_to_an_edge_does_not_decide_the_result():
    """Ten points of the sinusoid (noise 0.05), 13 monomials: from the default start α = β = 1 the iteration runs off to
    α → ∞, and the fit used to raise "the features explain nothing of t" although a fixed point has ln p = −9.43 against
    the weights-zero edge's −10.26. The result is the global maximum of the numpy evidence (grid, then Nelder–Mead)."""
    X, t = bk.datasets.sinusoid(n=10, noise=0.05, seed=5)
    Phi = ref.poly_features_1d(X[:, 0], 12)
    N = len(t)

    def minus_log_evidence(z):
        a, b = np.exp(z)
        try:
            return -scipy.stats.multivariate_normal(np.zeros(N), Phi @ Phi.T / a + np.eye(N) / b).logpdf(t)
        except np.linalg.LinAlgError:  # C singular in float64: far out along β, not where the maximum is
            return np.inf

    grid = [(za, zb) for za in np.linspace(-15, 10, 51) for zb in np.linspace(-5, 10, 31)]
    best = scipy.optimize.minimize(minus_log_evidence, min(grid, key=minus_log_evidence), method="Nelder-Mead",
                                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000})
    fit = evidence_approximation(F.Monomials(degree=12), X, t)
    # the same maximum (β ≈ 340: C is well conditioned there); the stops as in the PRML test above
    np.testing.assert_allclose(fit.log_marginal_likelihood, -best.fun, atol=1e-9)
    np.testing.assert_allclose(np.log([fit.alpha, fit.beta]), best.x, atol=1e-6)
    weights_zero = scipy.stats.multivariate_normal(np.zeros(N), t @ t / N * np.eye(N)).logpdf(t)  # α → ∞ at its best β
    assert weights_zero < fit.log_marginal_likelihood - 0.5


def test_the_weights_zero_edge_is_warned_where_it_is_highest():
    """Eight points, a quintic: the only fixed point (ln p = −11.68) is below the evidence's supremum with every weight
    zero, ln N(t | 0, (tᵀt/N)·I) = −8.23 (α → ∞ at its best β): the result is that local maximum, and a FitWarning says so
    with both numbers. Its evidence is checked in numpy."""
    X, t = bk.datasets.sinusoid(n=8, noise=0.2, seed=1)
    weights_zero = scipy.stats.multivariate_normal(np.zeros(8), t @ t / 8 * np.eye(8)).logpdf(t)
    with pytest.warns(FitWarning, match=r"larger with all weights zero \(alpha -> infinity: log evidence \S+ there, \S+ nats more\)") as caught:
        fit = evidence_approximation(F.Monomials(degree=5), X, t)
    Phi = ref.poly_features_1d(X[:, 0], 5)
    local = scipy.stats.multivariate_normal(np.zeros(8), Phi @ Phi.T / fit.alpha + np.eye(8) / fit.beta).logpdf(t)
    np.testing.assert_allclose(fit.log_marginal_likelihood, local, atol=1e-9)
    said = re.search(r"log evidence (\S+) there, (\S+) nats more\) than at the result \((\S+)\)", str(caught[0].message)).groups()
    np.testing.assert_allclose([float(said[0]), float(said[2])], [weights_zero, local], rtol=1e-8)  # (10 digits printed)
    np.testing.assert_allclose(float(said[1]), weights_zero - local, rtol=2e-3)  # (3 digits printed)
    assert fit.converged and local < weights_zero - 3.0


def test_an_edge_as_high_as_the_result_to_round_off_is_not_warned():
    """One point and a cubic: the evidence at the fixed point equals its supremum with every weight zero to 4e-16 nats
    (round-off), which was warned as "larger with all weights zero" with the same number printed twice."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = evidence_approximation(F.Monomials(3), X[:1], t[:1])
    weights_zero = scipy.stats.norm(0, abs(t[0])).logpdf(t[0])  # ln N(t | 0, tᵀt/N) at N = 1
    np.testing.assert_allclose(fit.log_marginal_likelihood, weights_zero, atol=1e-9)


def test_the_fixed_point_is_continued_where_the_evidence_rises_with_beta():
    """Ten points, noise 1e-3, 13 monomials: every start's iteration ends at ln p = −8.71 (β = 4.1e3), yet the evidence,
    α re-estimated, rises as β grows; iterated from there, it reaches a fixed point at β = 1.7e7. That point is a maximum
    of the exact evidence (rational arithmetic: float64's Cholesky is ~1e-5 off at C's condition number 1e11)."""
    X, t = bk.datasets.sinusoid(n=10, noise=1e-3, seed=3)
    Phi = ref.poly_features_1d(X[:, 0], 12)
    with pytest.warns(FitWarning, match="2 distinct fixed points"):
        fit = evidence_approximation(F.Monomials(degree=12), X, t)
    assert fit.beta > 1e7 and [o.starts for o in fit.optima] == [1, 6]  # the continued point, then where six starts ended
    assert fit.optima[1].log_marginal_likelihood < fit.log_marginal_likelihood - 2.0
    exact = _exact_log_evidence(Phi, t, fit.alpha, fit.beta)
    assert abs(exact - fit.log_marginal_likelihood) < 1e-4  # float64 at cond 1e11
    h = 1e-3  # central differences of the exact evidence in log α, log β: a stationary point (truncation ~h²)
    for da, db in ((h, 0.0), (0.0, h)):
        up = _exact_log_evidence(Phi, t, fit.alpha * np.exp(da), fit.beta * np.exp(db))
        down = _exact_log_evidence(Phi, t, fit.alpha * np.exp(-da), fit.beta * np.exp(-db))
        assert abs(up - down) / (2 * h) < 1e-4
        assert max(up, down) < exact  # and a maximum along both axes


@pytest.mark.filterwarnings("ignore:the evidence has 2 distinct fixed points")  # true: 0.077 and −9.56
def test_a_rise_towards_noise_free_beyond_float64_is_warned():
    """Noise-free sin 6x at ten points, 13 monomials (a review's case): the best fixed point, ln p = 0.077 at β = 5.1e4, is
    a local maximum: the evidence is higher as β grows, and the fixed point beyond needs jitter in float64. The warning's
    numbers are checked against the exact evidence."""
    rng = np.random.default_rng(7)
    X = rng.uniform(0, 1, (10, 1))
    t = np.sin(6 * X[:, 0])
    with pytest.warns(FitWarning, match="rises past the best fixed point") as caught:
        fit = evidence_approximation(F.Monomials(degree=12), X, t)
    message = next(str(w.message) for w in caught if "rises past" in str(w.message))
    stated, beta, alpha = (float(v) for v in re.search(r"log evidence (\S+) at beta=(\S+) \(alpha=(\S+) ", message).groups())
    exact = _exact_log_evidence(ref.poly_features_1d(X[:, 0], 12), t, alpha, beta)
    assert abs(exact - stated) < 1e-2  # α, β printed to 4 digits
    assert exact > fit.log_marginal_likelihood + 0.5  # (0.798 at β = 1.6e6 against 0.077: the first half-decade above it)


def test_no_rise_is_warned_where_the_fixed_point_is_the_maximum():
    """PRML's sinusoid with noise, polynomials of degree 1–9 at 10 and 25 points: no false alarm from the probe along β."""
    for n, seed in ((10, 0), (25, 0), (25, 2)):
        X, t = bk.datasets.sinusoid(n=n, noise=0.2, seed=seed)
        for degree in range(1, 10):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                evidence_approximation(F.Monomials(degree=degree), X, t)
            assert not [w for w in caught if "rises past" in str(w.message)], (n, seed, degree)


def test_tol_is_a_relative_change_below_one():
    X, y = bk.datasets.sinusoid(10, 0.2, 0)
    with pytest.raises(ValueError, match="tol must be below 1"):
        evidence_approximation(F.Polynomial(2), X, y, tol=1.0)


def test_the_probe_along_beta_finds_a_maximum_between_decades():
    """A review's random trial (15 points of a sine, noise 1e-5, degree 8): the starts end at ln p = 26.18 (β = 3.3e6);
    the evidence at β·10 and β·100 is lower (26.05, 25.29), but it peaks between them, 27.479 at β = 1.2e8, a fixed point.
    Probed every half decade, the fit reaches it: the global maximum of the numpy evidence (grid, then Nelder–Mead)."""
    x = np.array([0.5046787359253967, 0.05549817295474169, 0.5706266210698466, 0.945357852433657, 0.8530839788143668,
                  0.42250255835444805, 0.7719478146538693, 0.16989412095885914, 0.7101381433671369, 0.17730580302107168,
                  0.08019202877956788, 0.6627210579593166, 0.35586422976907606, 0.5161483830611565, 0.049936542820021024])
    t = np.array([-0.2421979693763728, 0.36383453551596184, -0.6343044994014753, 0.05981591969451577, -0.5305779771966281,
                  0.3019438791557252, -0.8928769161148457, 0.9086053006833127, -0.9986316647589545, 0.9282352475814495,
                  0.5124723777025003, -0.9648871367000873, 0.6844642804759054, -0.31608717473840453, 0.3288239429347038])
    U, sv, _ = np.linalg.svd(ref.poly_features_1d(x, 8), full_matrices=False)  # Φ = U S Wᵀ: C = U(S²/α + I/β)Uᵀ + (I − UUᵀ)/β
    ut, outside = U.T @ t, t - U @ (U.T @ t)

    def minus_log_evidence(z):  # −ln N(t | 0, C) through the SVD: no n × n factorisation to lose at β = 1e8
        a, b = np.exp(z)
        d = sv**2 / a + 1 / b  # C's eigenvalues on the column space of Φ; 1/β off it
        quad = np.sum(ut**2 / d) + b * (outside @ outside)
        logdet = np.sum(np.log(d)) + (15 - len(sv)) * np.log(1 / b)
        return 0.5 * quad + 0.5 * logdet + 15 / 2 * np.log(2 * np.pi)

    grid = [(za, zb) for za in np.linspace(-15, 5, 41) for zb in np.linspace(0, 25, 51)]
    best = scipy.optimize.minimize(minus_log_evidence, min(grid, key=minus_log_evidence), method="Nelder-Mead",
                                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = evidence_approximation(F.Monomials(degree=8), x[:, None], t)
    assert not [w for w in caught if w.category is RuntimeWarning], [str(w.message) for w in caught]
    np.testing.assert_allclose(fit.log_marginal_likelihood, -best.fun, atol=1e-4)  # the BLR's LML at C's condition ~1e9: 1e-4
    assert fit.beta > 1e8


def test_no_raw_numpy_warning_escapes_the_probe():
    """A review: with β held far out, α ran to 0 and eigenvalues clipped to 0 gave 0/0 — numpy's "invalid value" and
    "divide by zero" reached the caller (40 points, 12 Gaussian functions of width 0.3)."""
    X, t = bk.datasets.sinusoid(n=40, noise=0.2, seed=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evidence_approximation(F.GaussianBasis(np.linspace(0, 1, 12)[:, None], 0.3), X, t)
    assert not [w for w in caught if w.category is RuntimeWarning], [str(w.message) for w in caught]


def test_ill_conditioned_features_keep_their_small_directions():
    """A review: 38 noise-free points of sin 6x, 9 Gaussian functions of width 0.457 (cond Φ = 1.1e9, so cond ΦᵀΦ ≈ 1e18):
    ΦᵀΦ's eigendecomposition lost its small eigenvalues, the probe along β stopped on a wrong branch of α, and 162.21 was
    returned without a word where the evidence reaches 252.94 (a direct maximisation through the SVD of Φ). Run on the
    SVD, the probe finds the rise; the fixed point beyond cannot be conditioned in float64, and the warning says so. Its
    stated evidence is checked against the SVD formula written here."""
    X = np.linspace(0, 1, 38)[:, None]
    t = np.sin(6 * X[:, 0])
    features = F.GaussianBasis(np.linspace(0, 1, 9)[:, None], 0.457)
    U, sv, _ = np.linalg.svd(F.design_matrix(features, X), full_matrices=False)
    ut, outside = U.T @ t, t - U @ (U.T @ t)

    def log_evidence(a, b):  # ln N(t | 0, U(S²/α + I/β)Uᵀ + (I − UUᵀ)/β)
        d = sv**2 / a + 1 / b
        return -0.5 * (np.sum(ut**2 / d) + b * outside @ outside) - 0.5 * (np.sum(np.log(d)) + (38 - 9) * np.log(1 / b)) - 19 * np.log(2 * np.pi)

    with pytest.warns(FitWarning, match="rises past the best fixed point") as caught:
        fit = evidence_approximation(features, X, t)
    message = next(str(w.message) for w in caught if "rises past" in str(w.message))
    stated, beta, alpha = (float(v) for v in re.search(r"log evidence (\S+) at beta=(\S+) \(alpha=(\S+) ", message).groups())
    np.testing.assert_allclose(stated, log_evidence(alpha, beta), atol=1e-2)  # α, β printed to 4 digits
    np.testing.assert_allclose(fit.log_marginal_likelihood, log_evidence(fit.alpha, fit.beta), atol=1e-6)
    assert stated > fit.log_marginal_likelihood + 10.0 and "cannot be conditioned in float64" in message
