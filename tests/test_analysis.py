"""run_analysis (bayeskern.analysis) directly: the candidate chosen by evidence, LOO, the grid posterior and the spectrum at the EB optimum."""

import numpy as np
import pytest

import bayeskern as bk
import reference as ref
from bayeskern import spec
from bayeskern.analysis import run_analysis
from bayeskern.datasets import sinusoid

# Two GP candidates, the better one second (so that "always the first" would fail); empirical Bayes
# with one start, no MCMC, no prior draws: seconds, not minutes.
TWO_GPS = """
name = "two"
seed = 4
[data]
source = "sinusoid"
n = 12
noise = 0.1
seed = 2
[priors]
ell = "Gamma(alpha=2.0, beta=4.0)"
eta = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = ["eta * Linear()", "eta * RBF(lengthscale=ell)"]
sigma = "noise"
[fit.empirical_bayes]
restarts = 1
[predict]
start = -0.1
stop = 1.1
num = 9
[checks]
psd = true
[report]
prior_samples = 0
"""

ONE_BLR = """
name = "cubic"
seed = 0
[data]
source = "sinusoid"
n = 12
noise = 0.2
seed = 0
[priors]
a = "HalfNormal(sigma=10.0)"
noise = "HalfNormal(sigma=1.0)"
[model]
kind = "blr"
features = "Polynomial(degree=3)"
prior_cov = "a"
sigma = "noise"
[fit.empirical_bayes]
restarts = 1
[report]
prior_samples = 0
"""


def _run(folder, text):
    """Write the spec into `folder`, load it as `bayeskern run` does, and analyse it."""
    path = folder / "spec.toml"
    path.write_text(text)
    return run_analysis(spec.load(path))


@pytest.fixture(scope="module")
def two_gps(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("two"), TWO_GPS)


def _rbf_at(point):
    """The chosen candidate's kernel η·RBF(ℓ) at the EB optimum, in numpy (tests/reference.py)."""
    return lambda A, B: point["eta"] * ref.rbf(A, B, point["ell"])


def test_the_candidate_with_the_higher_evidence_is_selected(two_gps):
    X, t = sinusoid(12, 0.1, 2)
    lml = [c.log_marginal_likelihood for c in two_gps.candidates]
    assert two_gps.selected == int(np.argmax(lml)) == 1, lml  # a sine is not a line
    assert two_gps.point == two_gps.chosen.eb.params
    # each candidate's evidence against numpy's log N(t | 0, K + σ²I) at its own optimum: one 12 × 12
    # Cholesky against scipy's eigendecomposition, round-off ~1e-14; 1e-9 relative
    p0, p1 = (c.eb.params for c in two_gps.candidates)
    K0, K1 = p0["eta"] * ref.linear(X, X), _rbf_at(p1)(X, X)
    for K, p, value in [(K0, p0, lml[0]), (K1, p1, lml[1])]:
        np.testing.assert_allclose(value, ref.gp_posterior(K, K[:, :1], K[:1, :1], t, p["noise"])[2], rtol=1e-9)
    assert two_gps.idata is None and two_gps.bands is None and two_gps.comparison is None  # no [fit.mcmc]


def test_loo_and_grid_posterior_at_the_optimum(two_gps):
    X, t = sinusoid(12, 0.1, 2)
    p, kernel = two_gps.point, _rbf_at(two_gps.point)
    C = kernel(X, X) + p["noise"] ** 2 * np.eye(12)
    mean, var, _ = ref.gp_loo(C, t)  # R&W 5.12 with an explicit inverse
    # Cholesky against inv on C with cond(C) ≈ 2e2 (σ ≈ 0.12, η ≈ 0.6): agreement ~1e-14; 1e-9 leaves a margin
    np.testing.assert_allclose(two_gps.loo_eb[0], mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(two_gps.loo_eb[1], np.sqrt(var), rtol=1e-9)
    grid = np.linspace(-0.1, 1.1, 9)[:, None]
    post = bk.gp.posterior(p["eta"] * bk.kernels.RBF(p["ell"]), X, t, p["noise"], Xnew=grid, include_noise=two_gps.spec.include_noise)
    # the same formulas at the same hyperparameters (the analysis reuses EB's factor, this one factors anew):
    # only summation order differs, 1e-10 absolute on values of order 1
    np.testing.assert_allclose(two_gps.grid_eb.mean, post.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(two_gps.grid_eb.cov, post.cov, rtol=0, atol=1e-9)
    # and the spectrum of the PSD check: eigenvalues of K (no noise) at the optimum, ascending;
    # Weyl: |Δλ| ≤ ‖ΔK‖ ~ n·ε·λmax, so 1e-9 relative to the largest
    lam = np.linalg.eigvalsh(kernel(X, X))
    np.testing.assert_allclose(two_gps.spectrum, lam, rtol=0, atol=1e-9 * lam[-1])
    assert two_gps.checks["psd"].passed


def test_blr_spectrum_is_that_of_phi_sigma_phi_transpose(tmp_path):
    analysis = _run(tmp_path, ONE_BLR)
    X, t = sinusoid(12, 0.2, 0)
    p = analysis.point
    Phi = ref.poly_features(X, 3)  # 1, x, x², x³
    lam = np.linalg.eigvalsh(p["a"] * Phi @ Phi.T)  # rank 4 of 12: eight eigenvalues are round-off around 0
    # Weyl: |Δλ| ≤ ‖ΔK‖ ~ n·ε·λmax, so 1e-9 relative to the largest eigenvalue
    np.testing.assert_allclose(analysis.spectrum, lam, rtol=0, atol=1e-9 * lam[-1])
    assert analysis.selected == 0 and analysis.grid_eb is None and "psd" not in analysis.checks  # no grid, no PSD check
    # the evidence at the optimum: numpy's log N(t | 0, a·ΦΦᵀ + σ²I) (PRML 3.86), 1e-9 relative as above
    expected = ref.blr_posterior(Phi, t, p["noise"], p["a"] * np.eye(4), Phi)[4]
    np.testing.assert_allclose(analysis.chosen.log_marginal_likelihood, expected, rtol=1e-9)


STANDARDISED_CSV = """
name = "years"
seed = 1
[data]
source = "csv"
path = "series.csv"
x = ["year"]
y = "level"
standardize = true
[priors]
ell = "Gamma(alpha=2.0, beta=2.0)"
eta = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "eta * RBF(lengthscale=ell)"
sigma = "noise"
[fit.empirical_bayes]
restarts = 1
[predict]
start = 1961.0
stop = 1989.0
num = 7
[report]
prior_samples = 0
"""


def write_years(folder, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`folder`/series.csv for STANDARDISED_CSV: n years in 1960–1990 and levels around 300 (a seasonal wiggle, noise)."""
    rng = np.random.default_rng(0)
    year = np.sort(rng.uniform(1960.0, 1990.0, n))
    level = 300.0 + 2.0 * np.sin(year / 3.0) + 0.3 * rng.standard_normal(n)
    (folder / "series.csv").write_text("year,level\n" + "".join(f"{a!r},{b!r}\n" for a, b in zip(year.tolist(), level.tolist())))
    return year, level


def test_a_grid_on_standardised_data_is_given_in_the_inputs_own_units_and_standardised_alike(tmp_path):
    """Years 1960–1990 and levels around 300, standardised: the grid 1961–1989 is in years and is predicted at its
    z-scores (within the data), not at z = 1961… (a prior 1961 sds away). The model's numbers are in z-units, and the
    standardisation is recorded; the reference standardises with numpy and predicts from R&W 2.25–2.26."""
    year, level = write_years(tmp_path, 30)
    analysis = _run(tmp_path, STANDARDISED_CSV)
    z_year, z_level = (year - year.mean()) / year.std(), (level - level.mean()) / level.std()
    z_grid = (np.linspace(1961.0, 1989.0, 7) - year.mean()) / year.std()
    np.testing.assert_allclose(analysis.grid, z_grid, rtol=0, atol=1e-12)  # (numpy's mean and std, the same rounding)
    p = analysis.point
    K = lambda A, B: p["eta"] * ref.rbf(A, B, p["ell"])  # noqa: E731
    mean, cov, _ = ref.gp_posterior(K(z_year[:, None], z_year[:, None]), K(z_year[:, None], z_grid[:, None]),
                                    K(z_grid[:, None], z_grid[:, None]), z_level, p["noise"])
    # the same formulas at the same hyperparameters, Cholesky against plain solves on cond(C) ≲ 1e4: 1e-9 absolute on
    # values of order 1 (the z-scores); at z = 1961… the old code's mean was the prior's 0 and its sd η
    np.testing.assert_allclose(analysis.grid_eb.mean, mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(analysis.grid_eb.std, np.sqrt(np.diag(cov)), rtol=0, atol=1e-9)
    scaled = analysis.data.standardisation.as_dict()
    np.testing.assert_allclose([scaled["x_mean"][0], scaled["x_sd"][0], scaled["y_mean"], scaled["y_sd"]],
                               [year.mean(), year.std(), level.mean(), level.std()], rtol=1e-12)
    assert analysis.data.label("year") == "year (standardised)" and "standardised (every column of X and y to mean 0, sd 1)" in analysis.data.description
