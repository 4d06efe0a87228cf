"""Feature maps against numpy references written from their formulas, feature maps of kernels (checks.feature_error), and bad input."""

import numpy as np
import pytest

import bayeskern as bk
import reference as ref
from bayeskern import features as F
from bayeskern import kernels as K

RTOL, ATOL = 1e-12, 1e-14  # elementwise formulas: agreement to a few ulps is expected


def test_polynomial_1d_is_powers_of_x():
    x = np.linspace(-2, 2, 9)
    np.testing.assert_allclose(F.Polynomial(4)(x), ref.poly_features_1d(x, 4), rtol=RTOL, atol=ATOL)
    assert F.Polynomial(0)(x).shape == (9, 1)


def test_polynomial_nd_is_every_monomial_up_to_the_degree():
    X = np.random.default_rng(0).uniform(-1, 1, (6, 3))
    ours, theirs = F.Polynomial(3)(X), ref.poly_features(X, 3)
    assert ours.shape == theirs.shape == (6, 20)  # C(3 + 3, 3) monomials
    # same set of columns, whatever the order
    order = lambda A: A[:, np.lexsort(np.round(A, 12))]  # noqa: E731
    np.testing.assert_allclose(order(ours), order(theirs), rtol=RTOL, atol=ATOL)


def test_gaussian_sigmoid_fourier_bases():
    x = np.linspace(-1, 2, 11)
    c = np.linspace(0, 1, 4)
    np.testing.assert_allclose(F.GaussianBasis(c, 0.3)(x), ref.gaussian_features(x[:, None], c, 0.3), rtol=RTOL, atol=ATOL)
    with_bias = F.GaussianBasis(c, 0.3, bias=True)(x)
    np.testing.assert_array_equal(with_bias[:, 0], 1.0)
    np.testing.assert_allclose(F.SigmoidBasis(c, 0.2)(x), ref.sigmoid_features(x, c, 0.2), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(F.Fourier(3, period=1.5)(x), ref.fourier_features(x, 3, 1.5), rtol=RTOL, atol=1e-13)
    X2, C2 = np.random.default_rng(1).normal(size=(5, 2)), np.random.default_rng(2).normal(size=(3, 2))
    np.testing.assert_allclose(F.GaussianBasis(C2, 0.7)(X2), ref.gaussian_features(X2, C2, 0.7), rtol=RTOL, atol=ATOL)


def test_design_matrix_takes_plain_callables():
    x = np.linspace(0, 1, 4)
    np.testing.assert_allclose(F.design_matrix(lambda X: np.c_[X, X**2], x), np.c_[x, x**2])
    with pytest.raises(ValueError, match="phi must map X"):
        F.design_matrix(lambda X: np.ones((2, 2)), x)
    with pytest.raises(ValueError, match="phi returned NaN"):
        F.design_matrix(lambda X: np.log(X - 1), x)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: F.Polynomial(-1), "degree must be an integer ≥ 0"),
        (lambda: F.GaussianBasis([0.0, 1.0], 0.0), "width must be positive"),
        (lambda: F.GaussianBasis([0.0, np.nan], 1.0), "centers contains NaN"),
        (lambda: F.GaussianBasis([], 1.0), "centers is empty"),
        (lambda: F.SigmoidBasis([[0.0, 1.0]], 1.0), "centers must be 1-D"),
        (lambda: F.Fourier(2, period=-1.0), "period must be positive"),
        (lambda: F.Fourier(1.5), "order must be an integer"),
    ],
)
def test_bad_settings_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="X contains NaN"):
        F.Polynomial(2)([0.0, np.nan])
    with pytest.raises(ValueError, match="SigmoidBasis is defined for 1-D inputs"):
        F.SigmoidBasis([0.0], 1.0)(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="centers have 1 column"):
        F.GaussianBasis([0.0, 1.0], 1.0)(np.zeros((3, 2)))


def test_monomials_is_the_canonical_name_of_the_polynomial_basis():
    assert F.Polynomial is F.Monomials and "Monomials" in F.__all__ and "Polynomial" in F.__all__
    x = np.linspace(-2, 2, 9)
    np.testing.assert_allclose(F.Monomials(3)(x), ref.poly_features_1d(x, 3), rtol=RTOL, atol=ATOL)
    assert repr(F.Polynomial(2)) == "Monomials(degree=2)"


def test_maps_differing_only_in_numbers_share_one_compiled_function():
    from bayeskern import _compile
    from bayeskern import kernels as K

    x = np.linspace(-1, 2, 11)
    F.GaussianBasis([0.0, 1.0, 2.0], 0.3)(x)
    K.FeatureKernel(F.GaussianBasis([0.0, 1.0, 2.0], 0.3), 1.0).evaluate(x)
    F.MercerFeatures(K.RBF(0.4), x[::2], n_components=4)(x)
    before = len(_compile._CACHE)
    for width, centers, S in ((0.5, [0.1, 0.4, 0.9], 2.0), (1.5, [-1.0, 0.0, 3.0], 0.5)):
        Phi = F.GaussianBasis(centers, width)(x)
        np.testing.assert_allclose(Phi, ref.gaussian_features(x[:, None], np.asarray(centers), width), rtol=RTOL, atol=ATOL)
        # k = φᵀ S φ: one matrix product on top of Φ, agreement to rounding
        np.testing.assert_allclose(K.FeatureKernel(F.GaussianBasis(centers, width), S).evaluate(x), S * Phi @ Phi.T, rtol=1e-12, atol=1e-14)
    Phi = F.MercerFeatures(K.RBF(0.8), x[::2], n_components=4)(x[::2])
    assert Phi.shape == (6, 4)
    assert len(_compile._CACHE) == before  # nothing compiled afresh: maps, feature kernels and the Mercer basis Gram matrix all reused


def test_map_parameters_copies_the_tree_with_the_map_as_a_child():
    from bayeskern import kernels as K

    k = K.FeatureKernel(F.GaussianBasis([0.0, 1.0], 0.5), 2.0)
    doubled = k.map_parameters(lambda v: 2 * v)
    assert doubled.phi is not k.phi and isinstance(doubled.phi, F.GaussianBasis)
    np.testing.assert_array_equal(doubled.phi.centers, [[0.0], [2.0]])
    assert float(doubled.phi.width) == 1.0 and float(doubled.hyperparameters["prior_cov"]) == 4.0
    assert float(k.phi.width) == 0.5  # the original is unchanged
    x = np.linspace(-1, 3, 5)
    Phi = ref.gaussian_features(x[:, None], np.array([0.0, 2.0]), 1.0)
    np.testing.assert_allclose(doubled.evaluate(x), 4.0 * Phi @ Phi.T, rtol=1e-12, atol=1e-14)


def test_explicit_polynomial_features_reproduce_the_polynomial_kernel():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((9, 2))
    seeds_example = F.PolynomialKernelFeatures(2, c=0.0)
    Phi = seeds_example(X)
    expected = np.stack([X[:, 0] ** 2, np.sqrt(2) * X[:, 0] * X[:, 1], X[:, 1] ** 2], axis=1)  # (x₁², √2x₁x₂, x₂²)
    np.testing.assert_allclose(Phi, expected, rtol=1e-13)
    for degree, c, d in [(2, 0.0, 2), (3, 1.0, 2), (4, 0.5, 3)]:
        Xd = rng.standard_normal((8, d))
        err = bk.checks.feature_error(F.PolynomialKernelFeatures(degree, c), K.Polynomial(degree, c=c), Xd)
        assert err.max_abs_error < 1e-10 * max(1.0, np.abs(ref.polynomial(Xd, Xd, degree, c)).max()), err


def test_mercer_eigen_features_reproduce_the_gram_matrix():
    X = np.linspace(0, 1, 15)[:, None]
    kernel = K.PRML(1.0, 16.0, 0.5, 0.3)
    phi = F.MercerFeatures(kernel, X)
    err = bk.checks.feature_error(phi, kernel, X)
    assert err.rel_frobenius_error < 1e-10 and err.passed
    lam, U = np.linalg.eigh(ref.prml(X, X, 1.0, 16.0, 0.5, 0.3))
    # eigenvalues are accurate to about n·ε·λmax in absolute terms (Weyl), ≈ 5e-14 here
    kept = np.sort(lam[lam > 15 * np.finfo(float).eps * lam[-1]])
    np.testing.assert_allclose(np.sort(phi.eigenvalues), kept, rtol=1e-9, atol=15 * np.finfo(float).eps * lam[-1])
    top = F.MercerFeatures(kernel, X, n_components=3)  # a rank-3 truncation: the error is the 4th eigenvalue on
    truncated = bk.checks.feature_error(top, kernel, X)
    assert truncated.max_abs_error < 2 * np.sort(lam)[::-1][3] + 1e-12
    assert not truncated.passed and truncated.rel_frobenius_error > truncated.rtol  # a rank-3 map is not a feature map of k


def test_set_kernel_equals_power_set_features():
    rng = np.random.default_rng(6)
    X = (rng.uniform(size=(12, 5)) < 0.5).astype(float)
    Kx = K.SetIntersection().evaluate(X)
    counts = X @ X.T  # |x ∩ x′|
    np.testing.assert_array_equal(Kx, 2.0**counts)
    Phi = F.PowerSet()(X)
    assert Phi.shape == (12, 32)
    np.testing.assert_array_equal(Phi @ Phi.T, Kx)  # integers: exact
    assert bk.checks.feature_error(F.PowerSet(), K.SetIntersection(), X).max_abs_error == 0.0


@pytest.mark.parametrize("make", [lambda: F.GaussianBasis(np.linspace(-2, 2, 5), 0.5, bias=True),
                                  lambda: F.SigmoidBasis(np.linspace(-2, 2, 5), 0.5, bias=True)])
def test_the_bias_column_is_not_filled_from_a_0d_value(make):
    """PyTensor's Numba `Alloc` fills a 0-d value by an array assignment, for which Numba compiles a shape-mismatch
    message (a first φ(X) of 200 000 points on a new machine: 5.3 s against 2.6 s, BENCHMARKS.md, session 38). The bias
    column is allocated from a (1, 1) value, as it stays after PyTensor's own Numba rewrites; its ones are ones."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.basic import Alloc

    phi = make()
    X = pt.tensor("X", shape=(None, 1), dtype="float64")
    f = pytensor.function([X], phi.symbolic(X), mode="NUMBA")
    allocs = [node for node in f.maker.fgraph.apply_nodes if isinstance(node.op, Alloc)]
    assert allocs and all(node.inputs[0].ndim == 2 for node in allocs)
    Phi = f(np.linspace(-1, 1, 7)[:, None])
    np.testing.assert_array_equal(Phi[:, 0], np.ones(7))
    # the other columns: φ(X) as the package evaluates it (numpy on 7 points), to 1e-14 relative (Numba's exp is libm's,
    # numpy's its own SIMD loop: the two may differ in the last bit)
    np.testing.assert_allclose(Phi, phi(np.linspace(-1, 1, 7)[:, None]), rtol=1e-14, atol=0)
