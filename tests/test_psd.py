"""Mercer diagnostics (checks.psd), the GP's refusal of non-PSD kernels, the RKHS, and the zoo kernels' special cases."""

import json
import warnings

import numpy as np
import pytest
from scipy import integrate

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K


# -- checks.psd -----------------------------------------------------------------------------------
def test_psd_check_of_a_well_conditioned_mercer_kernel():
    X = np.array([[0.0], [1.0], [2.5], [4.0]])
    check = bk.checks.psd(K.RBF(0.7), X)
    lam = np.linalg.eigvalsh(ref.rbf(X, X, 0.7))
    np.testing.assert_allclose(check.eigenvalues, lam, rtol=1e-12, atol=1e-14)  # ascending, as numpy's
    assert check.is_psd and check.jitter == 0.0
    np.testing.assert_allclose(check.condition_number, lam[-1] / lam[0], rtol=1e-10)
    np.testing.assert_allclose(check.min_relative, lam[0] / (4 * np.finfo(float).eps * lam[-1]), rtol=1e-8)
    assert "positive definite" in check.verdict and "not" not in check.verdict
    d = json.loads(json.dumps(check.to_dict()))  # plain JSON values, spectrum included
    assert d["is_psd"] is True and len(d["eigenvalues"]) == 4 and d["jitter"] == 0.0


def test_psd_check_of_a_singular_mercer_kernel_reports_jitter():
    """40 points on [0, 1] with ℓ = 1: K is PSD but singular in float64 (λmin ~ 1e-17·λmax)."""
    X = np.linspace(0.0, 1.0, 40)
    check = bk.checks.psd(K.RBF(1.0), X)
    assert check.is_psd, check.verdict
    assert check.condition_number > 1e12
    assert check.jitter is not None and check.jitter > 0.0
    assert "singular" in check.verdict or "jitter" in check.verdict


@pytest.mark.parametrize(
    "kernel, X, lam_min",
    [
        # boxcar on x = 0, 1, 2 with h = 1.5: K = [[1,1,0],[1,1,1],[0,1,1]], eigenvalues 1 ± √2, 1
        (K.Boxcar(1.5), np.array([0.0, 1.0, 2.0]), 1 - np.sqrt(2)),
        # tanh(xx′) on x = 1, 2: [[tanh 1, tanh 2], [tanh 2, tanh 4]], determinant < 0
        (K.Sigmoid(1.0, 0.0), np.array([1.0, 2.0]), np.linalg.eigvalsh(np.tanh(np.outer([1.0, 2.0], [1.0, 2.0])))[0]),
        # b < 0: k(0, 0) = tanh(b) < 0
        (K.Sigmoid(1.0, -0.5), np.array([0.0]), np.tanh(-0.5)),
    ],
    ids=["boxcar", "sigmoid-collinear", "sigmoid-negative-offset"],
)
def test_psd_check_flags_explicit_counterexamples(kernel, X, lam_min):
    check = bk.checks.psd(kernel, X)
    assert not check.is_psd
    np.testing.assert_allclose(check.eigenvalues[0], lam_min, rtol=1e-12)
    assert check.min_relative < -1e10  # ten orders of magnitude beyond round-off
    assert "not positive semi-definite" in check.verdict and "Mercer" in check.verdict
    assert json.loads(json.dumps(check.to_dict()))["is_psd"] is False


def test_sigmoid_is_psd_or_not_depending_on_the_data():
    """tanh(b + a·s) = tanh b + a(1 − tanh²b)·s − a²tanh b(1 − tanh²b)·s² + …: a constant plus a linear
    kernel (rank ≤ d + 1) and higher-order terms of both signs. For small a, on d + 1 = 3 points the
    positive rank-3 part dominates (PSD); on 8 points the negative s² term shows (not PSD)."""
    X = np.random.default_rng(0).uniform(-1, 1, size=(8, 2))
    kernel = K.Sigmoid(0.05, 1.0)
    assert bk.checks.psd(kernel, X[:3]).is_psd
    assert not bk.checks.psd(kernel, X).is_psd


def test_psd_check_names_bad_arguments():
    with pytest.raises(ValueError, match="kernel must be a bayeskern.kernels kernel"):
        bk.checks.psd(np.eye(2), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="X contains NaN"):
        bk.checks.psd(K.RBF(1.0), np.array([0.0, np.nan]))


# -- the GP refuses a kernel that is not PSD --------------------------------------------------------
@pytest.mark.parametrize("kernel", [K.Sigmoid(1.0, 0.0), K.Boxcar(0.6)], ids=["sigmoid", "boxcar"])
def test_gp_posterior_refuses_a_non_psd_kernel_with_a_readable_error(kernel):
    X = np.linspace(0.0, 2.0, 6)
    y = np.sin(X)
    with pytest.raises(ValueError, match=r"is not positive semi-definite on X.*bayeskern\.checks\.psd") as err:
        bk.gp.posterior(kernel, X, y, sigma=0.01)
    assert type(kernel).__name__ in str(err.value)


def test_gp_posterior_keeps_jitter_for_a_nearly_singular_psd_kernel():
    X = np.linspace(0.0, 1.0, 40)
    with pytest.warns(RuntimeWarning, match="jitter"):
        post = bk.gp.posterior(K.RBF(1.0), X, np.sin(X), sigma=0.0)
    assert post.jitter > 0.0


# -- the RKHS ---------------------------------------------------------------------------------------
def _poly2_features(X, c):
    """Explicit features of (xᵀx′ + c)² in 2-D: (x₁², x₂², √2 x₁x₂, √(2c) x₁, √(2c) x₂, c)."""
    x1, x2 = X[:, 0], X[:, 1]
    r = np.sqrt(2 * c)
    return np.column_stack([x1**2, x2**2, np.sqrt(2) * x1 * x2, r * x1, r * x2, np.full(len(X), c)])


def test_rkhs_norm_and_reproducing_property_against_explicit_features():
    """f = Σ αᵢ k(xᵢ, ·) = wᵀφ with w = Φᵀα; the six monomials are independent, so ‖f‖²_H = ‖w‖² and
    ⟨f, k(z, ·)⟩_H = wᵀφ(z) = f(z). Agreement to 1e-10 relative (float64 round-off of sums of ~10 terms)."""
    rng = np.random.default_rng(3)
    X, alpha, Z = rng.uniform(-1, 1, (9, 2)), rng.standard_normal(9), rng.uniform(-1, 1, (4, 2))
    kernel = K.Polynomial(2, c=0.5)
    w = _poly2_features(X, 0.5).T @ alpha
    np.testing.assert_allclose(bk.checks.rkhs_norm(kernel, X, alpha), np.linalg.norm(w), rtol=1e-10)
    for z in Z:
        f_z = w @ _poly2_features(z[None, :], 0.5)[0]  # f(z) from the feature map
        np.testing.assert_allclose(bk.checks.rkhs_inner(kernel, X, alpha, z[None, :], [1.0]), f_z, rtol=1e-10, atol=1e-12)
    # Cauchy–Schwarz in H: |f(z)| = |⟨f, k(z, ·)⟩| ≤ ‖f‖ ‖k(z, ·)‖ = ‖f‖ √k(z, z)
    norm = bk.checks.rkhs_norm(kernel, X, alpha)
    assert np.all(np.abs(ref.polynomial(Z, X, 2, 0.5) @ alpha) <= norm * np.sqrt(np.diag(ref.polynomial(Z, Z, 2, 0.5))) + 1e-12)


def test_rkhs_inner_is_bilinear_and_symmetric():
    rng = np.random.default_rng(4)
    X, Z = rng.uniform(-2, 2, (5, 1)), rng.uniform(-2, 2, (3, 1))
    a, b = rng.standard_normal(5), rng.standard_normal(3)
    k = K.RBF(0.8)
    np.testing.assert_allclose(bk.checks.rkhs_inner(k, X, a, Z, b), bk.checks.rkhs_inner(k, Z, b, X, a), rtol=1e-12)
    np.testing.assert_allclose(bk.checks.rkhs_inner(k, X, a, X, a), bk.checks.rkhs_norm(k, X, a) ** 2, rtol=1e-12)


def test_rkhs_norm_refuses_a_kernel_that_is_not_psd():
    X = np.array([0.0, 1.0, 2.0])
    alpha = np.array([1.0, -np.sqrt(2), 1.0])  # the eigenvector of eigenvalue 1 − √2 < 0
    with pytest.raises(ValueError, match="not positive semi-definite on X and defines no RKHS norm"):
        bk.checks.rkhs_norm(K.Boxcar(1.5), X, alpha)


# -- special cases of the zoo kernels ---------------------------------------------------------------
def test_arccosine_at_zero_inputs():
    """k₀(0, ·) = ½ (θ := π/2); k₁ = k₂ = 0 there; no NaN anywhere; diag agrees with the full matrix."""
    X = np.array([[0.0, 0.0], [1.0, 0.5], [-2.0, 1.0]])
    for order, zero_row in [(0, [0.5, 0.5, 0.5]), (1, [0.0, 0.0, 0.0]), (2, [0.0, 0.0, 0.0])]:
        Kx = K.ArcCosine(order).evaluate(X)
        assert np.all(np.isfinite(Kx))
        np.testing.assert_array_equal(Kx[0], zero_row)
        np.testing.assert_array_equal(Kx[:, 0], zero_row)
        np.testing.assert_allclose(K.ArcCosine(order).evaluate(X, diag=True), np.diag(Kx), rtol=1e-14)
        assert bk.checks.psd(K.ArcCosine(order), X).is_psd


def test_arccosine_at_parallel_and_antiparallel_inputs():
    """cos θ = ±1 exactly or by round-off is clipped: k₀ = 1 (θ = 0) and 0 (θ = π); k₁(x, −x) = 0."""
    X = np.array([[0.3, 0.7], [0.6, 1.4], [-0.3, -0.7]])
    K0, K1 = K.ArcCosine(0).evaluate(X), K.ArcCosine(1).evaluate(X)
    np.testing.assert_allclose(K0[0, 1], 1.0, atol=1e-7)  # θ = O(√ε) from cos round-off
    np.testing.assert_allclose(K0[0, 2], 0.0, atol=1e-7)
    np.testing.assert_allclose(K1[0, 2], 0.0, atol=1e-12)
    np.testing.assert_allclose(K1[0, 1], np.linalg.norm(X[0]) * np.linalg.norm(X[1]), rtol=1e-12)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_arccosine_is_the_integral_of_cho_and_saul(order):
    """k_n(x, y) = 2·E_w[Θ(wᵀx)Θ(wᵀy)(wᵀx)ⁿ(wᵀy)ⁿ], w ~ N(0, I): Monte Carlo with 400 000 draws,
    agreement within 5 standard errors."""
    rng = np.random.default_rng(order)
    X = np.array([[1.0, 0.2, -0.3], [-0.4, 0.9, 0.5]])
    W = rng.standard_normal((400_000, 3))
    H = np.maximum(W @ X.T, 0.0)
    phi = (H > 0) * H**order
    samples = 2 * phi[:, 0] * phi[:, 1]
    se = samples.std() / np.sqrt(len(samples))
    assert abs(samples.mean() - K.ArcCosine(order).evaluate(X[:1], X[1:])[0, 0]) < 5 * se


def test_nngp_of_one_layer_is_the_arccosine_kernel():
    """With σ_b = 0: Σ¹ = σ_w² (1/2π) (σ_w²/d) ‖x‖‖x′‖ J₁(θ) = σ_w⁴/(2d) · k₁(x, x′)."""
    X = np.random.default_rng(5).uniform(-2, 2, (6, 3))
    np.testing.assert_allclose(K.NNGP(1, 1.7, 0.0).evaluate(X), 1.7**2 / 6 * ref.arccosine(X, X, 1), rtol=1e-12)


@pytest.mark.parametrize("rho", [0.3, 0.5, 1.0, 2.0])
def test_probability_product_kernel_against_quadrature(rho):
    """∫ N(z; x, σ²)^ρ N(z; x′, σ²)^ρ dz by adaptive quadrature (1-D, rel. tol. 1e-10) against the closed form."""
    var, x, xp = 0.7, 0.4, -0.9
    pdf = lambda z, m: np.exp(-((z - m) ** 2) / (2 * var)) / np.sqrt(2 * np.pi * var)  # noqa: E731
    value, _ = integrate.quad(lambda z: pdf(z, x) ** rho * pdf(z, xp) ** rho, -np.inf, np.inf, epsrel=1e-12)
    np.testing.assert_allclose(K.ProbabilityProduct(rho, var).evaluate([x], [xp])[0, 0], value, rtol=1e-8)


def test_probability_product_special_cases():
    X = np.random.default_rng(6).uniform(-2, 2, (5, 2))
    # ρ = 1: the expected likelihood N(x; x′, 2σ²I); ρ = ½: Bhattacharyya exp(−‖x − x′‖²/(8σ²))
    from scipy.stats import multivariate_normal

    expected = np.array([[multivariate_normal(b, 2 * 0.8 * np.eye(2)).pdf(a) for b in X] for a in X])
    np.testing.assert_allclose(K.ProbabilityProduct(1.0, 0.8).evaluate(X), expected, rtol=1e-12)
    np.testing.assert_allclose(K.ProbabilityProduct(0.5, 0.8).evaluate(X), np.exp(-ref.sqdist(X, X) / (8 * 0.8)), rtol=1e-12)


def test_set_intersection_counts_common_members():
    """2^|A ∩ B| on 0/1 indicator vectors against counting, and PSD (feature map: the power set)."""
    X = np.random.default_rng(7).integers(0, 2, size=(10, 6)).astype(float)
    np.testing.assert_array_equal(K.SetIntersection().evaluate(X), ref.set_intersection(X, X))
    assert bk.checks.psd(K.SetIntersection(), X).is_psd


def test_mixture_kernel_is_a_feature_kernel_of_the_component_densities():
    """k = Σᵢ p(x|i)p(z|i)p(i) equals φ(x)ᵀ diag(p(i)) φ(z) with φᵢ = p(·|i)."""
    means, scales, weights = np.array([[0.0], [1.5]]), np.array([0.5, 1.0]), np.array([0.4, 0.6])
    X = np.linspace(-2, 3, 7)
    phi = lambda x: np.column_stack([np.exp(-((x - m) ** 2) / (2 * s**2)) / (s * np.sqrt(2 * np.pi)) for m, s in zip(means[:, 0], scales)])  # noqa: E731
    np.testing.assert_allclose(K.Mixture(means, scales, weights).evaluate(X), phi(X) * weights @ phi(X).T, rtol=1e-12)


def test_zoo_kernels_take_random_variable_hyperparameters():
    import pymc as pm

    X = np.random.default_rng(8).uniform(-1, 1, (5, 2))
    with pm.Model() as model:
        sw2 = pm.HalfNormal("sw2", 2.0)
        rho = pm.HalfNormal("rho", 1.0)
        k = K.NTK(2, sw2, 0.1) + K.ProbabilityProduct(rho, 0.5)
        fn = model.compile_fn(model.replace_rvs_by_values([k.full(X)]), point_fn=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (Kx,) = fn({"sw2_log__": np.log(1.3), "rho_log__": np.log(0.7)})
    np.testing.assert_allclose(Kx, ref.relu_network_kernels(X, X, 2, 1.3, 0.1)[1] + ref.probability_product(X, X, 0.7, 0.5), rtol=1e-10)


def test_psd_check_has_passed_like_every_check_and_to_dict_is_json():
    """`passed` is the verdict (λ₁ ≥ −100·n·ε·max|λ|, written out here); `is_psd` its read-only former name;
    to_dict gives JSON values, with None for the condition number λmax/λ₁ = ∞ of a K with λ₁ ≤ 0."""
    good = bk.checks.psd(K.RBF(0.7), np.array([0.0, 1.0, 2.5, 4.0]))
    bad = bk.checks.psd(K.Boxcar(1.5), np.array([0.0, 1.0, 2.0]))
    for check in (good, bad):
        lam = check.eigenvalues
        assert check.passed is bool(lam[0] >= -100 * len(lam) * np.finfo(float).eps * np.max(np.abs(lam)))
        assert check.is_psd is check.passed
    assert good.passed and not bad.passed
    with pytest.raises(AttributeError):
        bad.is_psd = True  # an alias, not a second field
    d = bad.to_dict()
    assert d["passed"] is False and d["is_psd"] is False  # is_psd: the key summary.json has always had
    assert bad.condition_number == np.inf and d["condition_number"] is None  # JSON has no ∞
    assert json.loads(json.dumps(d, allow_nan=False)) == d
