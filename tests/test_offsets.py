"""Kernels and posteriors at inputs far from 0: exact for stationary kernels, a clear warning or error otherwise (issue 17)."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import graph_inputs

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K
from bayeskern._compile import exact_arithmetic, numpy_function
from bayeskern.kernels.stationary import scaled_sqdist

OFFSETS = [1e3, 1e6, 1e9]
SIGMA = 0.1
SIGMA2 = np.array([[0.3, 0.1], [0.1, 0.2]])
ELL10 = np.linspace(1.5, 4.0, 10)

# Every stationary kernel, (id, d, kernel, numpy reference(A, B)); d = 10 takes the Gram-form path
# of `scaled_sqdist` (more than DIFFERENCE_COLUMNS columns), the others direct differences.
STATIONARY = [
    ("rbf", 1, K.RBF(0.3), lambda A, B: ref.rbf(A, B, 0.3)),
    ("rbf-ard-2d", 2, K.RBF([0.3, 0.5]), lambda A, B: ref.rbf(A, B, [0.3, 0.5])),
    ("matern12", 1, K.Matern12(0.3), lambda A, B: ref.matern(A, B, 0.5, 0.3)),
    ("matern32", 1, K.Matern32(0.3), lambda A, B: ref.matern(A, B, 1.5, 0.3)),
    ("matern52", 1, K.Matern52(0.3), lambda A, B: ref.matern(A, B, 2.5, 0.3)),
    ("ratquad", 1, K.RatQuad(1.5, 0.3), lambda A, B: ref.rational_quadratic(A, B, 1.5, 0.3)),
    ("periodic", 1, K.Periodic(1.3, 0.9), lambda A, B: ref.periodic(A, B, 1.3, 0.9)),
    ("mahalanobis", 2, K.MahalanobisRBF(SIGMA2), lambda A, B: ref.mahalanobis_rbf(A, B, SIGMA2)),
    ("prml-stationary-part", 1, K.PRML(1.0, 4.0, 0.5, 0.0), lambda A, B: ref.prml(A, B, 1.0, 4.0, 0.5, 0.0)),
    ("rbf-ard-10d-gram", 10, K.RBF(ELL10), lambda A, B: ref.rbf(A, B, ELL10)),
]


def _data(d: int, seed: int = 0):
    """Inputs u in [0, 3]^d (the issue's 50-point grid for d = 1), targets t, and 7 prediction points."""
    rng = np.random.default_rng(seed)
    u = np.linspace(0.0, 3.0, 50)[:, None] if d == 1 else rng.uniform(0.0, 3.0, (40, d))
    t = np.sin(3.0 * u[:, 0]) + 0.5 * np.cos(2.0 * u[:, -1])
    return u, t, rng.uniform(-0.5, 3.5, (7, d))


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("name,d,kernel,kref", STATIONARY, ids=[s[0] for s in STATIONARY])
def test_stationary_posterior_is_exact_at_any_offset(name, d, kernel, kref, offset):
    u, t, unew = _data(d)
    X, Xnew = offset + u, offset + unew
    # The fair reference: the same (rounded) points moved back to 0. X − offset is exact in float64
    # (Sterbenz: X and offset are within a factor 2), whereas u itself was rounded on adding offset.
    X0, Xnew0 = X - offset, Xnew - offset
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no jitter, no offset warning: nothing is wrong here
        post = bk.gp.posterior(kernel, X, t, SIGMA, Xnew=Xnew)
    at_zero = bk.gp.posterior(kernel, X0, t, SIGMA, Xnew=Xnew0)
    mean, cov, lml = ref.gp_posterior(kref(X0, X0), kref(X0, Xnew0), kref(Xnew0, Xnew0), t, SIGMA)
    # Tolerance 1e-9 (the issue asks for 1e-6): at the offset and at 0 the kernel sees the same
    # differences x − x′ bit for bit, so only the round-off of the solves separates the results
    # (~1e-13 at cond(C) ≲ 1e4); the numpy reference differs by its own round-off, as in test_gp.
    # The distance ‖x‖² + ‖x′‖² − 2xᵀx′ used before missed by 1.3e-3 (mean) and 0.04 (LML) at 1e6.
    for other_mean, other_var, other_lml in [(at_zero.mean, at_zero.var, at_zero.log_marginal_likelihood), (mean, np.diag(cov), lml)]:
        np.testing.assert_allclose(post.mean, other_mean, rtol=0, atol=1e-9)
        np.testing.assert_allclose(post.var, other_var, rtol=0, atol=1e-9)
        np.testing.assert_allclose(post.log_marginal_likelihood, other_lml, rtol=0, atol=1e-9)
    assert post.jitter == 0.0


@pytest.mark.parametrize("d", [1, 3, 10])
def test_scaled_sqdist_is_exactly_symmetric_with_zero_diagonal(d):
    """r² from direct differences (d ≤ 8) and from the centred Gram form (d = 10), at an offset of 1e6."""
    Xt = pt.tensor("X", shape=(None, d))
    f = pytensor.function([Xt], scaled_sqdist(Xt, None, np.linspace(0.5, 1.5, d)))
    X = 1e6 + np.random.default_rng(5).uniform(0.0, 3.0, (30, d))
    r2 = f(X)
    u, ell = X - 1e6, np.linspace(0.5, 1.5, d)  # u: the same points moved to 0 (exact, Sterbenz)
    np.testing.assert_array_equal(r2, r2.T)  # bit for bit, not only to round-off
    np.testing.assert_array_equal(np.diag(r2), np.zeros(30))
    # and it is the squared distance of the exactly shifted points, to the Gram form's round-off
    # 10·ε·max‖z‖² ≈ 1e-13 (differences: exact)
    np.testing.assert_allclose(r2, ref.sqdist(u / ell, u / ell), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@pytest.mark.parametrize("d, ard", [(1, False), (1, True), (3, False), (3, True)])
def test_scaled_sqdist_is_the_squared_ratio_to_the_bit_at_any_scale(d, ard, engine):
    """Each term ((xₖ − x′ₖ)/ℓₖ)² to the bit, as numpy computes it, for inputs and length scales from 1e-150 to 1e150.
    One column is compared bit for bit; over three columns the compiled sum may add the exact terms in another order,
    two roundings apart (2ε relative). (r² formed as tₖ²·ℓₖ⁻² or tₖ·ℓₖ⁻¹ is 3–5 ulp away.) Both engines without
    fastmath, as the package compiles."""
    Xt = pt.tensor("X", shape=(None, d))
    ell_t = pt.vector("ell") if ard else pt.scalar("ell")
    if engine == "numpy":
        f = numpy_function([Xt, ell_t], scaled_sqdist(Xt, None, ell_t))
    else:
        with exact_arithmetic():
            f = pytensor.function([Xt, ell_t], scaled_sqdist(Xt, None, ell_t))
    rng = np.random.default_rng(3)
    for scale in [1e-150, 1e-5, 1.0, 1e5, 1e150]:
        X = scale * (rng.uniform(-3.0, 3.0, (25, d)) + 10.0 * rng.standard_normal())
        ell = scale * rng.uniform(0.1, 2.0, d if ard else None)
        t = (X[:, None, :] - X[None, :, :]) / (np.ones(d) * ell)
        np.testing.assert_allclose(f(X, ell), np.sum(t**2, axis=2), rtol=0 if d == 1 else 2 * np.finfo(float).eps, atol=0)


@pytest.mark.parametrize("name,d,kernel,kref", STATIONARY, ids=[s[0] for s in STATIONARY])
def test_stationary_gram_matrix_is_symmetric_with_unit_diagonal(name, d, kernel, kref):
    X = 1e6 + np.random.default_rng(5).uniform(0.0, 3.0, (30, d))
    Kx = kernel.evaluate(X)
    # r² is exactly symmetric; k(r²) is too unless a vectorised and a scalar exp/sin round differently
    np.testing.assert_allclose(Kx, Kx.T, rtol=2.3e-16, atol=0)
    np.testing.assert_array_equal(np.diag(Kx), np.full(30, kernel.evaluate(X[:1], diag=True)[0]))


def _shared_input(model) -> SharedVariable:
    (X_data,) = [v for v in graph_inputs([model.logp()]) if isinstance(v, SharedVariable) and v.name == "y_X"]
    return X_data


def test_model_log_density_and_gradient_are_exact_at_an_offset():
    """The PyMC marginal likelihood (symbolic X) at 1e6 + u equals the one at the exactly shifted inputs."""
    u, t, _ = _data(1)
    offset = 1e6
    with pm.Model() as model:
        ell = pm.HalfNormal("ell", 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        bk.gp.marginal_likelihood("y", offset + u, t, eta**2 * K.RBF(ell) + K.Matern32(ell), sigma)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    point = {"ell_log__": np.log(0.3), "eta_log__": np.log(1.2), "sigma_log__": np.log(SIGMA)}
    far = logp(point), dlogp(point)
    _shared_input(model).set_value((offset + u) - offset)  # the same points at 0, same compiled function
    near = logp(point), dlogp(point)
    # 1e-9 relative: the same differences x − x′ reach the same solves (see the test above)
    np.testing.assert_allclose(far[0], near[0], rtol=1e-9)
    np.testing.assert_allclose(far[1], near[1], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "d, make, theta",
    [
        (10, lambda th: K.RBF(th), ELL10),  # the Gram-form path, one ARD length scale per column
        (1, lambda th: K.Matern52(th[0]) * K.RatQuad(th[1], th[2]), np.array([0.8, 1.5, 0.6])),
        (1, lambda th: K.Periodic(th[0], th[1]), np.array([1.3, 0.9])),  # ∂/∂T through the exact mod T
        (2, lambda th: K.MahalanobisRBF(pt.stack([pt.stack([th[0], th[1]]), pt.stack([th[1], th[2]])])), np.array([0.3, 0.1, 0.2])),
    ],
    ids=["rbf-10d", "matern52*ratquad", "periodic", "mahalanobis"],
)
def test_gradient_at_an_offset_matches_finite_differences(d, make, theta):
    """∂/∂θ Σᵢⱼ Wᵢⱼ K(X)ᵢⱼ at X = 1e6 + u against central differences (step 1e-6, error O(h²) ≈ 1e-12)."""
    u = np.random.default_rng(3).uniform(0.0, 3.0, (8, d))
    W = np.random.default_rng(4).standard_normal((8, 8))
    th = pt.dvector("theta")
    objective = pt.sum(W * make(th).full(1e6 + u))
    f = pytensor.function([th], [objective, pytensor.grad(objective, th)])
    _, grad = f(theta)
    h = 1e-6
    fd = [(f(theta + h * e)[0] - f(theta - h * e)[0]) / (2 * h) for e in np.eye(len(theta))]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


# (d, kernel): every stationary kernel, and the Gram-form path at d = 10
TINY = [(1, K.RBF(1e-300)), (1, K.Matern12(1e-300)), (1, K.Matern32(1e-300)), (1, K.Matern52(1e-300)),
        (1, K.RatQuad(1.0, 1e-300)), (1, K.Periodic(2.5, 1e-300)), (2, K.MahalanobisRBF(1e-300 * np.eye(2))),
        (10, K.RBF(np.full(10, 1e-300)))]  # fmt: skip
UNIT = [(1, K.RBF(1.0)), (1, K.Matern12(1.0)), (1, K.Matern32(1.0)), (1, K.Matern52(1.0)), (1, K.RatQuad(1.0, 1.0)),
        (2, K.MahalanobisRBF(np.eye(2))), (10, K.RBF(np.ones(10)))]  # fmt: skip


@pytest.mark.parametrize("d, kernel", TINY, ids=[f"{type(k).__name__}-{d}d" for d, k in TINY])
def test_tiny_lengthscale_gives_the_identity_not_nan(d, kernel):
    X = np.vstack([np.zeros(d), np.ones(d)])
    # k = exp(−½(1/1e-300)²) etc. is 0 in float64 off the diagonal, and k(x, x) = 1 exactly
    np.testing.assert_array_equal(kernel.evaluate(X), np.eye(2))
    np.testing.assert_array_equal(kernel.evaluate(X, X), np.eye(2))
    np.testing.assert_array_equal(kernel.evaluate(X, diag=True), np.ones(2))


@pytest.mark.parametrize("d, kernel", UNIT, ids=[f"{type(k).__name__}-{d}d" for d, k in UNIT])
def test_huge_inputs_give_the_identity_not_nan(d, kernel):
    X = np.vstack([np.full(d, 1e200), np.zeros(d)])
    # ‖x − x′‖ = 1e200 length scales: k = 0 exactly; x² would overflow in ‖x‖² + ‖x′‖² − 2xᵀx′
    np.testing.assert_array_equal(kernel.evaluate(X), np.eye(2))
    np.testing.assert_array_equal(kernel.evaluate(X, X[::-1]), np.eye(2)[::-1])


@pytest.mark.parametrize("kernel, kref", [(K.RBF(0.7), lambda r2: np.exp(-0.5 * r2)), (K.RatQuad(0.5, 0.7), lambda r2: (1 + r2)**-0.5),
                                          (K.Matern12(0.7), lambda r2: np.exp(-np.sqrt(r2)))], ids=["rbf", "ratquad", "matern12"])
def test_a_difference_that_overflows_leaves_the_other_pairs_exact(kernel, kref):
    """±1e308 differ by ∞: that pair's k is 0, and the pairs of 0 and 1 keep their values (a rescaling of the
    differences by max|t| loses them; within 1e-12 relative)."""
    X = np.array([[-1e308], [1e308], [0.0], [1.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        r2 = ((X - X.T) / 0.7) ** 2  # ∞ where a − b overflows
        expected = np.where(np.isinf(r2), 0.0, kref(np.where(np.isinf(r2), 0.0, r2)))
    np.testing.assert_allclose(kernel.evaluate(X), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("far", [1e8, 1e20, 1e160, 1e200, 1e300])
@pytest.mark.parametrize("kernel", [K.RBF(np.linspace(1.5, 4.0, 10)), K.Matern32(2.5)], ids=["rbf-ard", "matern32"])
def test_a_far_point_leaves_the_near_pairs_of_the_gram_form_exact(kernel, far):
    """Ten columns (the Gram form ‖z‖² + ‖z′‖² − 2zᵀz′, rescaled where ‖z‖² would overflow): one point `far` away,
    first or last, leaves every pair of the near points as it is without it (within 1e-12 relative: the Gram form's
    round-off is ε·max‖z‖² ≈ 1e-14 here), and is 0 against them. A rescaling by max|z| made the near points' squares
    underflow, so that from about 1e160 they were all at distance 0 (k = 1); centred on the first row, a far first
    point spoilt them all from about 1e4 (0.37 off at 1e8)."""
    rng = np.random.default_rng(3)
    X, Xs = rng.uniform(-2, 2, (30, 10)), rng.uniform(-2, 2, (12, 10))
    with_far, far_point = np.vstack([X, Xs]), np.zeros((1, 10))
    far_point[0, 4] = far
    near = kernel.evaluate(with_far)
    last = kernel.evaluate(np.vstack([with_far, far_point]))
    np.testing.assert_allclose(last[:-1, :-1], near, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(last[-1], np.eye(len(last))[-1])
    first = kernel.evaluate(np.vstack([far_point, with_far]))
    np.testing.assert_allclose(first[1:, 1:], near, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(first[0], np.eye(len(first))[0])
    for points in (np.vstack([Xs, far_point]), np.vstack([far_point, Xs])):
        cross = kernel.evaluate(X, points)
        near_columns = ~np.all(points == far_point, axis=1)
        np.testing.assert_allclose(cross[:, near_columns], kernel.evaluate(X, Xs), rtol=1e-12, atol=0)
        np.testing.assert_array_equal(cross[:, ~near_columns], 0.0)
    far_rows = kernel.evaluate(np.vstack([far_point, X]), Xs)  # the centre comes from the first input set
    np.testing.assert_allclose(far_rows[1:], kernel.evaluate(X, Xs), rtol=1e-12, atol=0)


@pytest.mark.parametrize("ell, far", [(1e-300, 1e10), (1e-10, 1e300)])
def test_a_scaled_input_that_overflows_gives_the_identity_in_the_gram_form(ell, far):
    """(x − c)/ℓ overflowing to ±∞ for one point: every pair is then 1e150 length scales apart or more, k = 0 off the
    diagonal, as the direct differences of up to 8 columns give. It made the rescaling infinite and every r² 0, so
    that K was all ones."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (5, 9))
    X[-1, 0] = far
    np.testing.assert_array_equal(K.RBF(ell).evaluate(X), np.eye(5))
    np.testing.assert_array_equal(K.RBF(ell).evaluate(X[:, :8]), np.eye(5))  # (the direct differences: the same)
    np.testing.assert_array_equal(K.RBF(ell).evaluate(X[:4, :3], X[[0, 4], :3]), [[1, 0], [0, 0], [0, 0], [0, 0]])


@pytest.mark.parametrize("make", [K.RBF, K.Matern52, lambda ell: K.RatQuad(2.0, ell), lambda ell: K.Periodic(1.0, ell)],
                         ids=["rbf", "matern52", "ratquad", "periodic"])
@pytest.mark.parametrize("far", [1.0, 1e100, 1e300])
def test_the_lengthscale_gradient_is_finite_from_1e_160_to_1e_300_whatever_the_spread_of_the_inputs(make, far):
    """∂ Σ W∘K / ∂ℓ at X = [0, 1, far] is finite for ℓ from 1e-160 to 1e300: the clip keeps (t/ℓ)'s square apart from
    its quotient, so that PyTensor does not fold the gradient into t·t/ℓ³ (ℓ³ underflows from ℓ ≈ 1e-108; t·t overflows
    for t = 1e300). A rescaling of the differences by max|t| made it NaN from ℓ ≈ 1e-8 down at far = 1e100."""
    ell = pt.scalar("ell")
    X = np.array([[0.0], [1.0], [far]])
    W = np.random.default_rng(1).standard_normal((3, 3))
    gradient = numpy_function([ell], pytensor.grad(pt.sum(W * make(ell).full(X)), ell))
    with np.errstate(all="ignore"):
        values = [float(gradient(10.0**e)) for e in range(-160, 301, 4)]
    assert np.all(np.isfinite(values))


def test_periodic_reduces_huge_differences_exactly():
    # 1e200 is an integer, so a whole number of periods T = 1 (and of T = 0.5) away from 0: k = 1.
    # sin(π·1e200) formed directly is round-off noise (PyMC's Periodic gives 0.66 here)
    X = np.array([[1e200], [0.0], [0.3]])
    for period in (1.0, 0.5):
        K_ = K.Periodic(period, 1.0).evaluate(X)
        np.testing.assert_array_equal(K_[:2, :2], np.ones((2, 2)))
        # and near 0 the folding changes nothing: the numpy formula to round-off
        np.testing.assert_allclose(K_[1, 2], ref.periodic(X[1:2], X[2:3], period, 1.0)[0, 0], rtol=1e-14)


# -- kernels that are not shift-invariant ----------------------------------------------------------
def test_non_stationary_kernel_far_from_zero_warns_and_says_to_centre():
    u, t, _ = _data(1)
    for kernel in (K.Linear() + K.RBF(1.0), K.PRML(1.0, 4.0, 0.0, 1.0)):
        # at 1e4 rounding n·ε·max|K| is no longer small against σ²: say so
        with pytest.warns(RuntimeWarning, match=r"may be inaccurate.*far from zero.*Centre X"):
            bk.gp.posterior(kernel, 1e4 + u, t, SIGMA)
        # at 1e6 the posterior mean would be off by ~1e-2 (against a Sherman–Morrison reference), and C is
        # singular to round-off (1/cond₁ ≤ n·ε, the package's one factorisation rule, under which the
        # likelihood's Op gives −inf): a ValueError with the same advice, not a number
        with pytest.raises(ValueError, match=r"not positive definite in floating point.*far from zero.*Centre X"):
            bk.gp.posterior(kernel, 1e6 + u, t, SIGMA)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            bk.gp.posterior(kernel, u, t, SIGMA)  # near 0
            bk.gp.posterior(kernel, 1e3 + u, t, SIGMA)  # rounding n·ε·max|K| ≈ 1e-8 ≪ σ²: accurate to ~1e-8


@pytest.mark.parametrize("kernel, offset", [(K.Linear() + K.RBF(1.0), 1e9), (K.Polynomial(3), 1e6)], ids=["linear+rbf", "polynomial"])
def test_non_stationary_kernel_that_rounding_breaks_is_a_value_error(kernel, offset):
    u, t, _ = _data(1)
    # K(X, X) + σ²I fails to factor only through rounding: a ValueError with advice, not jitter of 1e8
    with pytest.raises(ValueError, match=r"not positive definite in floating point.*far from zero.*Centre X"):
        bk.gp.posterior(kernel, offset + u, t, SIGMA)


def test_blr_polynomial_features_far_from_zero_is_a_value_error():
    u, t, _ = _data(1)
    phi = bk.features.Polynomial(3)
    with pytest.raises(ValueError, match=r"features Monomials\(degree=3\) of X are too ill-conditioned.*centre it"):
        bk.blr.posterior(phi, 1e6 + u, t, SIGMA, prior_cov=1.0)
    # at 1e2 the factorisation still "succeeds" but B is singular to round-off (1/cond ≈ 2e-16): refused too
    with pytest.raises(ValueError, match=r"too ill-conditioned"):
        bk.blr.posterior(phi, 1e2 + u, t, SIGMA, prior_cov=1.0)
    centred = bk.blr.posterior(phi, u - u.mean(), t, SIGMA, prior_cov=1.0)
    assert np.all(np.isfinite(centred.mean))


def test_blr_model_far_from_zero_warns_and_says_to_centre():
    """In a PyMC model σ and Σ are still unknown, so the check is on the data alone: polynomial features
    of x ≈ 1e6 are singular to round-off (cond of the column-scaled Φ ≈ 1e19 > 1/√ε) and warn; the same
    features of centred x, and Gaussian-basis features at the same offset (well conditioned), do not."""
    u, t, _ = _data(1)
    with pm.Model(), pytest.warns(RuntimeWarning, match=r"singular to round-off.*centre it"):
        bk.blr.likelihood("y", 1e6 + u, t, bk.features.Polynomial(3), prior_cov=1.0, sigma=SIGMA, collapsed=True)
    with pm.Model(), warnings.catch_warnings():
        warnings.simplefilter("error")
        bk.blr.likelihood("y", u - u.mean(), t, bk.features.Polynomial(3), prior_cov=1.0, sigma=SIGMA, collapsed=True)
        centers = 1e6 + np.linspace(u.min(), u.max(), 5)
        bk.blr.likelihood("z", 1e6 + u, t, bk.features.GaussianBasis(centers, 0.5), prior_cov=1.0, sigma=SIGMA, collapsed=True)


@pytest.mark.parametrize("x, x_other, period", [(1e8, 0.3, 1.0), (1e12 + 0.1, 0.1, 1.0), (1e15 + 0.2, 0.1, 1.0),
                                                (9007199254740994.0, 0.5, 3.0), (1e308, -1e308, 1.0), (1e308, 0.25, 0.7)])
def test_periodic_is_exact_for_inputs_far_apart(x, x_other, period):
    """Each input reduced modulo T before the two are subtracted: k(x, x′) against the difference reduced exactly in
    rational arithmetic (fractions.Fraction of the two floats and T), then sin² in float64, within 1e-15 relative. With
    x − x′ formed first the phase carried its rounding: 4e-9 off at 1e8, 0.2 at 9e15, and ±1e308 overflowed."""
    from fractions import Fraction

    u = (Fraction(x) - Fraction(x_other)) % Fraction(period)  # in [0, T), exactly
    u = float(min(u, Fraction(period) - u))
    expected = np.exp(-0.5 * np.sin(np.pi * u / period) ** 2 / 0.9**2)
    K_ = K.Periodic(period, 0.9).evaluate(np.array([[x]]), np.array([[x_other]]))
    np.testing.assert_allclose(K_[0, 0], expected, rtol=1e-15)
    np.testing.assert_allclose(K.Periodic(period, 0.9).evaluate(np.array([[x], [x_other]]))[0, 1], expected, rtol=1e-15)
