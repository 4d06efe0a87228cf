"""Every kernel against a numpy reference written from its formula, property tests over one list, and the zoo kernels' special cases."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import integrate

import bayeskern as bk
import reference as ref
from bayeskern import features as F
from bayeskern._compile import exact_arithmetic, numpy_function
from bayeskern import kernels as K
from bayeskern.approx.hsgp import hilbert_features

# Tolerances. Stationary kernels with more than 8 input columns form ‖a − b‖² in the centred Gram
# form ‖z‖² + ‖z′‖² − 2zᵀz′ (z = (x − x₁)/ℓ), whose round-off is about 10·ε·max‖z‖² ≈ 1e-14 for
# |x| ≤ 3, ℓ ≥ 0.3 (fewer columns use direct differences, as the references do). Composite
# kernels and the others round at about the same level; RTOL/ATOL leave a margin of 100× over that.
RTOL, ATOL = 1e-10, 1e-12

SIGMA2 = np.array([[1.0, 0.3], [0.3, 0.5]])
S3 = np.array([[1.0, 0.2, 0.0, 0.1], [0.2, 2.0, 0.3, 0.0], [0.0, 0.3, 1.5, 0.2], [0.1, 0.0, 0.2, 0.8]])
CENTERS2 = np.array([[0.0, 0.0], [1.0, -1.0], [-1.0, 0.5]])
ELL10 = np.linspace(1.5, 4.0, 10)


def _plain_features(X):
    return np.column_stack([np.ones(len(X)), X[:, 0] * X[:, 1], np.sin(X[:, 0])])


PLAIN_S = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, 0.1], [0.0, 0.1, 0.7]])

# One list of every kernel: (id, input dimension d, kernel, reference(A, B, same)).
KERNELS = [
    ("rbf", 2, K.RBF(0.7), lambda A, B, s: ref.rbf(A, B, 0.7)),
    ("rbf-bandwidth", 2, K.RBF(bandwidth=0.49), lambda A, B, s: ref.rbf(A, B, 0.7)),
    ("rbf-ard", 2, K.RBF([0.5, 2.0]), lambda A, B, s: ref.rbf(A, B, [0.5, 2.0])),
    # more than 8 columns: the centred Gram-form path of kernels.stationary.scaled_sqdist
    ("rbf-ard-10d", 10, K.RBF(ELL10), lambda A, B, s: ref.rbf(A, B, ELL10)),
    ("matern32-10d", 10, K.Matern32(2.5), lambda A, B, s: ref.matern(A, B, 1.5, 2.5)),
    ("mahalanobis", 2, K.MahalanobisRBF(SIGMA2), lambda A, B, s: ref.mahalanobis_rbf(A, B, SIGMA2)),
    ("matern12", 2, K.Matern12(0.8), lambda A, B, s: ref.matern(A, B, 0.5, 0.8)),
    ("matern32", 2, K.Matern32(0.8), lambda A, B, s: ref.matern(A, B, 1.5, 0.8)),
    ("matern52", 2, K.Matern52(0.8), lambda A, B, s: ref.matern(A, B, 2.5, 0.8)),
    ("ratquad", 2, K.RatQuad(1.5, 0.6), lambda A, B, s: ref.rational_quadratic(A, B, 1.5, 0.6)),
    ("periodic", 2, K.Periodic(1.3, 0.9), lambda A, B, s: ref.periodic(A, B, 1.3, 0.9)),
    ("linear", 2, K.Linear(), lambda A, B, s: ref.linear(A, B)),
    ("polynomial", 2, K.Polynomial(3, c=1.0), lambda A, B, s: ref.polynomial(A, B, 3, 1.0)),
    ("polynomial-homogeneous", 2, K.Polynomial(2, c=0.0), lambda A, B, s: ref.polynomial(A, B, 2, 0.0)),
    ("constant", 2, K.Constant(1.7), lambda A, B, s: ref.constant(A, B, 1.7)),
    ("white", 2, K.White(0.3), lambda A, B, s: ref.white(A, B, 0.3, s)),
    ("prml-2d", 2, K.PRML(2.0, 1.5, 0.5, 0.3), lambda A, B, s: ref.prml(A, B, 2.0, 1.5, 0.5, 0.3)),
    *[
        (f"prml-fig6.5-{i}", 1, K.PRML(*th), lambda A, B, s, th=th: ref.prml(A, B, *th))
        for i, th in enumerate([(1, 4, 0, 0), (9, 4, 0, 0), (1, 64, 0, 0), (1, 0.25, 0, 0), (1, 4, 10, 0), (1, 4, 0, 5)])
    ],
    (
        "sum",
        2,
        2.0 * K.RBF(lengthscale=0.5) + K.Constant(1.0) + K.Linear(),
        lambda A, B, s: 2.0 * ref.rbf(A, B, 0.5) + 1.0 + ref.linear(A, B),
    ),
    ("product", 2, K.RBF(1.0) * K.Polynomial(2, c=1.0), lambda A, B, s: ref.rbf(A, B, 1.0) * ref.polynomial(A, B, 2, 1.0)),
    (
        "feature-polynomial",
        1,
        K.FeatureKernel(F.Polynomial(3), S3),
        lambda A, B, s: ref.poly_features_1d(A, 3) @ S3 @ ref.poly_features_1d(B, 3).T,
    ),
    (
        "feature-gaussian",
        2,
        K.FeatureKernel(F.GaussianBasis(CENTERS2, 0.8, bias=True), 0.5),
        lambda A, B, s: 0.5
        * np.c_[np.ones(len(A)), ref.gaussian_features(A, CENTERS2, 0.8)]
        @ np.c_[np.ones(len(B)), ref.gaussian_features(B, CENTERS2, 0.8)].T,
    ),
    (
        "feature-fourier",
        1,
        K.FeatureKernel(F.Fourier(2, period=2.0), np.array([1.0, 0.5, 0.5, 0.2, 0.2])),
        lambda A, B, s: (ref.fourier_features(A, 2, 2.0) * [1.0, 0.5, 0.5, 0.2, 0.2]) @ ref.fourier_features(B, 2, 2.0).T,
    ),
    (
        "feature-sigmoid",
        1,
        K.FeatureKernel(F.SigmoidBasis([-1.0, 0.0, 1.0], 0.5), 2.0),
        lambda A, B, s: 2.0 * ref.sigmoid_features(A, [-1, 0, 1], 0.5) @ ref.sigmoid_features(B, [-1, 0, 1], 0.5).T,
    ),
    (
        "feature-callable",
        2,
        K.FeatureKernel(_plain_features, PLAIN_S),
        lambda A, B, s: _plain_features(A) @ PLAIN_S @ _plain_features(B).T,
    ),
    # the kernel zoo (issue 6)
    *[(f"arccosine-{n}", 2, K.ArcCosine(n), lambda A, B, s, n=n: ref.arccosine(A, B, n)) for n in (0, 1, 2)],
    ("nngp-1", 2, K.NNGP(1, 1.6, 0.2), lambda A, B, s: ref.relu_network_kernels(A, B, 1, 1.6, 0.2)[0]),
    ("nngp-3", 2, K.NNGP(3, 2.0, 0.1), lambda A, B, s: ref.relu_network_kernels(A, B, 3, 2.0, 0.1)[0]),
    ("ntk-1", 2, K.NTK(1, 1.6, 0.2), lambda A, B, s: ref.relu_network_kernels(A, B, 1, 1.6, 0.2)[1]),
    ("ntk-3", 2, K.NTK(3, 2.0, 0.0), lambda A, B, s: ref.relu_network_kernels(A, B, 3, 2.0, 0.0)[1]),
    ("sigmoid", 2, K.Sigmoid(0.5, 0.3), lambda A, B, s: ref.sigmoid(A, B, 0.5, 0.3)),
    ("boxcar", 2, K.Boxcar(1.25), lambda A, B, s: ref.boxcar(A, B, 1.25)),
    ("set-intersection", 2, K.SetIntersection(), lambda A, B, s: 2.0 ** (A @ B.T)),  # 0/1 inputs: tests/test_psd.py
    ("prob-product-bhattacharyya", 2, K.ProbabilityProduct(0.5, 0.6), lambda A, B, s: ref.probability_product(A, B, 0.5, 0.6)),
    ("prob-product-expected-likelihood", 2, K.ProbabilityProduct(1.0, [0.5, 2.0]), lambda A, B, s: ref.probability_product(A, B, 1.0, [0.5, 2.0])),
    ("prob-product-rho2", 2, K.ProbabilityProduct(2.0, 1.5), lambda A, B, s: ref.probability_product(A, B, 2.0, 1.5)),
    (
        "mixture",
        2,
        K.Mixture(CENTERS2, [0.7, 1.2, 0.5], [0.2, 0.5, 0.3]),
        lambda A, B, s: ref.mixture(A, B, CENTERS2, [0.7, 1.2, 0.5], [0.2, 0.5, 0.3]),
    ),
]
# Kernels that are not Mercer kernels: the property test asserts `checks.psd` flags them on a
# counterexample instead of asserting PSD on random inputs.
NOT_PSD = {
    "sigmoid": np.array([[1.0, 0.0], [2.0, 0.0]]),  # tanh(0.5·xᵀx′ + 0.3) on x = 1, 2: det < 0
    "boxcar": np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]),  # h = 1.25: eigenvalue 1 − √2
}
IDS = [k[0] for k in KERNELS]


def _inputs(d, n, seed):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(n, d))


def _assert_gradient_matches_central_differences(objective, theta, th0, h, rtol, atol):
    """PyTensor's ∂objective/∂theta at th0 against (f(θ + h·e) − f(θ − h·e)) / 2h, coordinate by coordinate."""
    f = pytensor.function([theta], [objective, pytensor.grad(objective, theta)])
    fd = [(f(th0 + h * e)[0] - f(th0 - h * e)[0]) / (2 * h) for e in np.eye(len(th0))]
    np.testing.assert_allclose(f(th0)[1], fd, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,d,kernel,reference", KERNELS, ids=IDS)
def test_kernel_matches_numpy_reference(name, d, kernel, reference):
    X, Xs = _inputs(d, 7, 1), _inputs(d, 5, 2)
    np.testing.assert_allclose(kernel.evaluate(X), reference(X, X, True), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(kernel.evaluate(X, Xs), reference(X, Xs, False), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(kernel.evaluate(X, diag=True), np.diag(reference(X, X, True)), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name,d,kernel,reference", KERNELS, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_kernel_properties_on_random_inputs(name, d, kernel, reference, data):
    n = data.draw(st.integers(2, 9))
    X = data.draw(arrays(np.float64, (n, d), elements=st.floats(-3, 3, allow_nan=False)))
    Kx = kernel.evaluate(X)
    # symmetric to the bit (evaluate mirrors its lower triangle: numpy's vectorised and scalar tanh or sin round apart)
    np.testing.assert_array_equal(Kx, Kx.T)
    # positive semi-definite: eigenvalues ≥ 0 up to round-off n·ε·λmax (1e-10 relative is generous)
    if name not in NOT_PSD:
        lam = np.linalg.eigvalsh(Kx)
        assert lam[0] >= -1e-10 * max(1.0, abs(lam[-1])), lam
    # diagonal consistency: diag=True equals the diagonal of the full matrix
    np.testing.assert_allclose(kernel.evaluate(X, diag=True), np.diag(Kx), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,d,kernel,reference", KERNELS, ids=IDS)
def test_lower_triangle_is_the_reference_on_and_below_the_diagonal_and_zero_above(name, d, kernel, reference):
    """`lower_triangle` (each pair i ≥ j evaluated once: the marginal likelihood's K) against the numpy reference."""
    X = _inputs(d, 7, 3)
    lower = numpy_function([], kernel.lower_triangle(X))()  # the graph's numbers without a Numba compile per kernel
    np.testing.assert_allclose(lower, np.tril(reference(X, X, True)), rtol=RTOL, atol=ATOL)
    assert np.all(np.triu(lower, 1) == 0.0)


@pytest.mark.parametrize("kernel", [K.RBF(0.7), K.RBF([0.5, 2.0]), K.Matern12(0.8), K.Matern52(0.8), K.RatQuad(1.5, 0.6), 2.0 * K.RBF(0.3) + K.White(0.2)], ids=repr)
def test_lower_triangle_of_stationary_kernels_is_the_full_matrix_to_the_bit(kernel):
    """Pairs take the same differences, divisions and sums as `full` (d ≤ 8 columns): the same numbers, not merely close
    (both compiled without fastmath, as the package compiles)."""
    X = _inputs(2, 9, 4) * 1e3 + 5.0
    with exact_arithmetic():
        lower, full = pytensor.function([], [kernel.lower_triangle(X), kernel.full(X)])()
    np.testing.assert_array_equal(lower, np.tril(full))


#: graphs of the package that fill an array with one value, built on (X, ω): `lower_triangle`'s zeros above the diagonal,
#: HSGP's bias column, the diagonals of ones
FILLS = [("lower_triangle", lambda X, omega: K.RBF(0.7).lower_triangle(X)),
         ("hsgp_bias", lambda X, omega: hilbert_features(X, np.zeros(1), np.ones(1), omega, constant=True, linear=False))] + [
    (f"diag-{kernel!r}", lambda X, omega, kernel=kernel: kernel.diag(X))
    for kernel in (K.RBF(0.7), K.Matern32(0.7), K.RatQuad(1.5, 0.7), K.MahalanobisRBF(np.eye(1)), K.Boxcar(0.5))]


@pytest.mark.parametrize("build", [b for _, b in FILLS], ids=[name for name, _ in FILLS])
def test_the_packages_fills_are_not_filled_from_a_0d_value(build):
    """PyTensor's Numba `Alloc` fills a 0-d value by an array assignment, for which Numba compiles a shape-mismatch
    message: ~2.5 s of every cold NUTS compile of a GP model, seconds for a first evaluation on a new machine. The
    package's fills are allocated from a one-element value (`_fills.filled`), as it stays after PyTensor's own Numba
    rewrites — the mode of a user's `pm.sample` and of `compiled`'s graphs, where bayeskern's NUTS mode does not rewrite a
    0-d fill for it (the compile is timed in BENCHMARKS.md, session 32)."""
    X, omega = pt.tensor("X", shape=(None, 1), dtype="float64"), pt.dmatrix("omega")
    f = pytensor.function([X, omega], build(X, omega), mode="NUMBA", on_unused_input="ignore")
    allocs = [node for node in f.maker.fgraph.apply_nodes if type(node.op).__name__ == "Alloc"]
    assert allocs and all(node.inputs[0].ndim == node.outputs[0].ndim for node in allocs)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_lower_pairs_are_numpys_tril_indices_in_order(engine):
    """The pairs i ≥ j that `lower_triangle` evaluates, row by row, and their flat positions i·n + j, for empty, tiny and
    larger n: the numpy `perform` and the Numba loop alike, and the shape PyTensor infers without running it."""
    from bayeskern._lower_pairs import LowerPairs, lower_pairs

    n = pt.lscalar("n")
    outputs = list(lower_pairs(n))
    pairs = numpy_function([n], outputs) if engine == "numpy" else pytensor.function([n], outputs, mode="NUMBA")
    inferred = numpy_function([n], [o.shape[0] for o in outputs])
    assert not any(isinstance(node.op, LowerPairs) for node in inferred.maker.fgraph.apply_nodes)  # shapes without the pairs
    for size in (0, 1, 2, 7, 64):
        rows, cols, flat = pairs(size)
        expected_rows, expected_cols = np.tril_indices(size)
        np.testing.assert_array_equal(rows, expected_rows)
        np.testing.assert_array_equal(cols, expected_cols)
        np.testing.assert_array_equal(flat, np.ravel_multi_index((expected_rows, expected_cols), (size, size)))
        assert all(a.dtype == np.int64 for a in (rows, cols, flat))
        assert [int(s) for s in inferred(size)] == [size * (size + 1) // 2] * 3


def test_lower_triangle_gradient_matches_finite_differences():
    """∂/∂θ Σᵢ≥ⱼ Wᵢⱼ Kᵢⱼ through the pairs (every leaf with its own pair form) against central differences
    (step 1e-6: truncation O(h²) ≈ 1e-12 and round-off ε/h ≈ 1e-10, so rtol 1e-6 leaves a wide margin)."""
    X = _inputs(1, 8, 10) * 3.0
    W = np.tril(np.random.default_rng(11).standard_normal((8, 8)))
    theta = pt.dvector("theta")
    kernel = (
        theta[0] * K.RBF(theta[1]) * K.Periodic(1.0, theta[2]) + theta[3] * K.RatQuad(theta[4], theta[5])
        + K.Linear() * theta[6] + K.Constant(theta[7]) + K.White(theta[8]) + K.Matern32(theta[9])
    )
    th0 = np.array([1.3, 0.8, 0.6, 0.4, 2.5, 1.7, 0.3, 0.9, 0.5, 1.1])
    _assert_gradient_matches_central_differences(pt.sum(W * kernel.lower_triangle(X)), theta, th0, h=1e-6, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(NOT_PSD))
def test_kernels_that_are_not_mercer_are_flagged(name):
    kernel, X = _BY_ID[name][2], NOT_PSD[name]
    check = bk.checks.psd(kernel, X)
    assert not check.is_psd, check.verdict
    assert check.eigenvalues[0] < -0.01 * check.eigenvalues[-1]  # clearly negative, not round-off
    assert "not positive semi-definite" in check.verdict


_BY_ID = {k[0]: k for k in KERNELS}
# A pair from each family (stationary, dot product, constant/white, composite, feature): every
# composition graph is compiled afresh, so the list is kept short.
PAIRS = [
    (_BY_ID[a], _BY_ID[b])
    for a, b in [("rbf-ard", "mahalanobis"), ("linear", "polynomial"), ("white", "prml-2d"),
                 ("sum", "product"), ("periodic", "matern52"), ("ratquad", "linear"), ("feature-fourier", "feature-sigmoid"), ("constant", "feature-callable")]
]


@pytest.mark.parametrize("first,second", PAIRS, ids=[f"{a[0]}+{b[0]}" for a, b in PAIRS])
def test_composition_equals_composition_of_matrices(first, second):
    k1, k2, d = first[2], second[2], first[1]
    X, Xs = _inputs(d, 6, 3), _inputs(d, 4, 4)
    for A, B in [(X, None), (X, Xs)]:
        K1, K2 = k1.evaluate(A, B), k2.evaluate(A, B)
        np.testing.assert_allclose((k1 + k2).evaluate(A, B), K1 + K2, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose((k1 * k2).evaluate(A, B), K1 * K2, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose((2.5 * k1).evaluate(A, B), 2.5 * K1, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose((k1 + k2).evaluate(X, diag=True), k1.evaluate(X, diag=True) + k2.evaluate(X, diag=True))


def test_sum_of_a_list_and_adding_numbers():
    X = _inputs(1, 5, 0)
    ks = [K.RBF(0.5), K.Linear(), K.Constant(2.0)]
    assert (0 + ks[0]) is ks[0]
    np.testing.assert_allclose(sum(ks).evaluate(X), sum(k.evaluate(X) for k in ks), rtol=1e-14)
    np.testing.assert_allclose((K.Linear() + 3.0).evaluate(X), ref.linear(X, X) + 3.0, rtol=1e-14)
    np.testing.assert_allclose((np.float64(2.0) * K.Linear()).evaluate(X), 2.0 * ref.linear(X, X), rtol=1e-14)
    assert repr(2.0 * K.RBF(0.5) + K.Constant(1.0) + K.Linear()) == "2 * RBF(lengthscale=0.5) + Constant(c=1) + Linear()"


def test_prml_is_the_sum_of_its_parts():
    X, Xs = _inputs(2, 6, 5), _inputs(2, 3, 6)
    parts = 1.3 * K.RBF(1 / np.sqrt(2.2)) + K.Constant(0.4) + 0.7 * K.Linear()
    np.testing.assert_allclose(K.PRML(1.3, 2.2, 0.4, 0.7).evaluate(X, Xs), parts.evaluate(X, Xs), rtol=1e-13)


@pytest.mark.parametrize("alpha", [1e9, 1e12, 1e15, 1e20, 1e300])
def test_rational_quadratic_is_exact_towards_its_rbf_limit(alpha):
    """log k = −α log(1 + r²/(2α)) = −r²/2 + r⁴/(8α) − r⁶/(24α²) + …; at α ≥ 1e9 and r² ≤ 50 the terms after r⁴
    are below 1e-15 of log k, so the two-term series is the reference to round-off (rtol 1e-13). PyMC's
    (1 + r²/(2α))^(−α) rounds 1 + r²/(2α) first: off by 4e-5 at α = 1e12, and k = 1 everywhere from 1e16."""
    X = _inputs(1, 8, 3)
    r2 = ref.sqdist(X, X) / 0.6**2
    assert 10.0 < r2.max() < 50.0
    log_k = np.log(K.RatQuad(alpha, 0.6).evaluate(X))
    np.testing.assert_allclose(log_k, -0.5 * r2 + r2**2 / (8.0 * alpha), rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("alpha", [1.5, 1e6])
def test_rational_quadratic_gradient_matches_finite_differences(alpha):
    """∂/∂(log α, log ℓ) of Σᵢⱼ Wᵢⱼ k(xᵢ, xⱼ) against central differences: step 1e-5, truncation O(h²) ≈ 1e-10
    relative, round-off ε·|Σ Wk|/h ≈ 1e-10 absolute (∂/∂log α is only ~1e-7 at α = 1e6)."""
    X = _inputs(1, 7, 4)
    W = np.random.default_rng(3).standard_normal((7, 7))
    log_theta = pt.dvector("log_theta")
    objective = pt.sum(W * K.RatQuad(pt.exp(log_theta[0]), pt.exp(log_theta[1])).full(X))
    _assert_gradient_matches_central_differences(objective, log_theta, np.log([alpha, 0.7]), h=1e-5, rtol=1e-7, atol=1e-10)


def test_kernels_with_random_variable_hyperparameters_in_a_model():
    X = _inputs(1, 6, 7)
    with pm.Model() as model:
        ell = pm.HalfNormal("ell", 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        theta = pm.HalfNormal("theta", 1.0, shape=4)
        k1 = eta**2 * K.RBF(ell) + K.Linear()
        k2 = K.PRML(theta[0], theta[1], theta[2], theta[3])
        k3 = K.RBF(bandwidth=ell)
        outs = model.replace_rvs_by_values([k1.full(X), k2.full(X), k3.full(X), k1.diag(X)])
        fn = model.compile_fn(outs, point_fn=True)
    point = {"ell_log__": np.log(0.6), "eta_log__": np.log(1.5), "theta_log__": np.log([1.0, 4.0, 0.5, 2.0])}
    K1, K2, K3, D1 = fn(point)
    np.testing.assert_allclose(K1, 1.5**2 * ref.rbf(X, X, 0.6) + ref.linear(X, X), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(K2, ref.prml(X, X, 1.0, 4.0, 0.5, 2.0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(K3, ref.rbf(X, X, np.sqrt(0.6)), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(D1, np.diag(K1), rtol=1e-13)


def test_gradient_matches_finite_differences():
    """∂/∂θ Σᵢⱼ Wᵢⱼ K(X)ᵢⱼ from PyTensor against central differences (step 1e-6, error O(h²) ≈ 1e-12)."""
    X = _inputs(2, 6, 8)
    W = np.random.default_rng(9).standard_normal((6, 6))
    theta = pt.dvector("theta")
    kernel = K.PRML(theta[0], theta[1], theta[2], theta[3]) * K.RBF(theta[4])
    th0 = np.array([1.3, 0.8, 0.4, 0.6, 1.7])
    _assert_gradient_matches_central_differences(pt.sum(W * kernel.full(X)), theta, th0, h=1e-6, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: K.RBF(0.0), "lengthscale must be positive"),
        (lambda: K.RBF(-1.0), "lengthscale must be positive"),
        (lambda: K.RBF([1.0, -0.5]), "lengthscale must be positive"),
        (lambda: K.RBF(np.nan), "lengthscale must be finite"),
        (lambda: K.RBF(1e-310), "lengthscale must be at least 2.23e-308"),
        (lambda: K.RBF(bandwidth=0.0), "bandwidth must be positive"),
        (lambda: K.RBF(), "exactly one of lengthscale"),
        (lambda: K.RBF(1.0, bandwidth=1.0), "exactly one of lengthscale"),
        (lambda: K.Polynomial(0), "degree must be an integer ≥ 1"),
        (lambda: K.Polynomial(2.5), "degree must be an integer ≥ 1"),
        (lambda: K.Polynomial(2, c=-1.0), "c must be non-negative"),
        (lambda: K.Constant(-1.0), "c must be non-negative"),
        (lambda: K.White(-0.1), "sigma must be non-negative"),
        (lambda: K.PRML(-1, 1, 0, 0), "theta0 must be non-negative"),
        (lambda: K.PRML(1, 0, 0, 0), "theta1 must be positive"),
        (lambda: K.PRML(1, 1, -2, 0), "theta2 must be non-negative"),
        (lambda: K.PRML(1, 1, 0, np.inf), "theta3 must be finite"),
        (lambda: K.Matern32(0.0), "lengthscale must be positive"),
        (lambda: K.RatQuad(-1.0, 1.0), "alpha must be positive"),
        (lambda: K.Periodic(0.0, 1.0), "period must be positive"),
        (lambda: K.MahalanobisRBF([[1.0, 0.5], [0.2, 1.0]]), "cov must be symmetric"),
        (lambda: K.MahalanobisRBF([[1.0, 2.0], [2.0, 1.0]]), "cov must be positive definite"),
        (lambda: K.MahalanobisRBF([1.0, 2.0]), "cov must be a square"),
        (lambda: -1.0 * K.RBF(1.0), "scale must be non-negative"),
        (lambda: K.FeatureKernel(F.Polynomial(2), np.eye(2)), None),  # valid until evaluated
        (lambda: K.FeatureKernel(F.Polynomial(2), -1.0), "prior_cov must be positive"),
        (lambda: K.FeatureKernel(F.Polynomial(2), [[1.0, 0.3], [0.0, 1.0]]), "prior_cov is not symmetric"),
        (lambda: K.FeatureKernel(F.Polynomial(2), [[1.0, 2.0], [2.0, 1.0]]), "prior_cov is not positive definite"),
        (lambda: K.FeatureKernel("not callable", 1.0), "phi must be a feature map or a callable"),
        (lambda: K.ArcCosine(3), "order must be 0, 1 or 2"),
        (lambda: K.ArcCosine(1.0), "order must be 0, 1 or 2"),
        (lambda: K.NNGP(0), "depth must be an integer ≥ 1"),
        (lambda: K.NTK(2.5), "depth must be an integer ≥ 1"),
        (lambda: K.NNGP(1, weight_variance=-1.0), "weight_variance must be positive"),
        (lambda: K.NTK(1, weight_variance=0.0), "weight_variance must be positive"),
        (lambda: K.NTK(1, bias_variance=-0.1), "bias_variance must be non-negative"),
        (lambda: K.NNGP(1, weight_variance=[1.0, 2.0]), "weight_variance must be a scalar"),
        (lambda: K.Sigmoid(np.nan, 0.0), "a must be finite"),
        (lambda: K.Sigmoid(1.0, [0.0, 1.0]), "b must be a scalar"),
        (lambda: K.Boxcar(0.0), "width must be positive"),
        (lambda: K.ProbabilityProduct(0.0, 1.0), "rho must be positive"),
        (lambda: K.ProbabilityProduct(-0.5, 1.0), "rho must be positive"),
        (lambda: K.ProbabilityProduct(1.0, -1.0), "variance must be positive"),
        (lambda: K.Mixture([[0.0], [1.0]], [1.0, 1.0], [0.5, 0.6]), "weights must sum to 1"),
        (lambda: K.Mixture([[0.0], [1.0]], [1.0, -1.0], [0.5, 0.5]), "scales must be positive"),
        (lambda: K.Mixture([[0.0], [1.0]], 1.0, [1.0]), "weights has 1 entries but means has 2"),
        (lambda: K.Mixture([[0.0], [1.0]], 1.0, [-0.5, 1.5]), "weights must be non-negative"),
    ],
)
def test_bad_hyperparameters_are_named(make, message):
    if message is None:
        make()
        return
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_to_evaluate_are_named():
    X = _inputs(2, 4, 0)
    with pytest.raises(ValueError, match="X contains NaN or infinite values"):
        K.RBF(1.0).evaluate(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="Xs contains NaN or infinite values"):
        K.RBF(1.0).evaluate(X, np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="X is empty"):
        K.RBF(1.0).evaluate(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="Xs has 1 column"):
        K.RBF(1.0).evaluate(X, np.zeros((3, 1)))
    with pytest.raises(ValueError, match="lengthscale has 3 ARD entries but the inputs have 2"):
        K.RBF([1.0, 2.0, 3.0]).evaluate(X)
    with pytest.raises(ValueError, match="cov is 2x2 but the inputs have 1"):
        K.MahalanobisRBF(SIGMA2).evaluate(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="prior_cov has 2 rows but phi gives M=3 features"):
        K.FeatureKernel(F.Polynomial(2), np.eye(2)).evaluate(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="Fourier is defined for 1-D inputs"):
        K.FeatureKernel(F.Fourier(1), 1.0).evaluate(X)
    with pytest.raises(ValueError, match="X must be 1-D"):
        K.RBF(1.0).evaluate(np.zeros((2, 2, 2)))
    with pm.Model():
        ell = pm.HalfNormal("ell")
        with pytest.raises(ValueError, match="'lengthscale' of RBF is symbolic"):
            K.RBF(ell).evaluate(X)


def test_evaluate_compiles_once_per_structure():
    from bayeskern import _compile

    X = _inputs(1, 5, 0)
    K.RBF(0.3).evaluate(X)
    before = len(_compile._CACHE)
    for ell in (0.1, 0.5, 2.0):
        np.testing.assert_allclose(K.RBF(ell).evaluate(X), ref.rbf(X, X, ell), rtol=RTOL, atol=ATOL)
    assert len(_compile._CACHE) == before


def test_a_numba_evaluation_compiles_one_specialisation_for_read_only_strided_and_own_arrays():
    """A read-only X (a model's own copy) or a strided one is another Numba type: without the conversion in
    `_compile.compiled` each compiled the whole graph again (1–2 s on a new machine)."""
    from bayeskern import _compile

    rng = np.random.default_rng(5)
    X, Xs = rng.uniform(-2, 2, (900, 2)), rng.uniform(-2, 2, (700, 2))  # 630 000 pairs: past NUMPY_MAX_SIZE, on Numba
    kernel = K.Matern32(0.7)
    expected = ref.matern(X, Xs, 1.5, 0.7)
    read_only = X.copy()
    read_only.flags.writeable = False
    strided = np.hstack([X, X])[:, :2]
    assert not strided.flags.c_contiguous and np.array_equal(strided, X)
    for A in (X, read_only, strided):
        np.testing.assert_allclose(kernel.evaluate(A, Xs), expected, rtol=RTOL, atol=ATOL)
    [fn] = [f for key, f in _compile._CACHE.items() if key[0][0] == "kernel" and key[0][1] == kernel.signature() and not key[1]]
    assert len(fn.function.vm.jit_fn.signatures) == 1  # (`function`: the PyTensor function under the conversion)


def test_public_surface():
    for name in ["Matern12", "Matern32", "Matern52", "Periodic", "RatQuad", "PRML", "RBF", "Linear", "Constant", "Polynomial", "White", "MahalanobisRBF", "FeatureKernel"]:
        assert hasattr(bk.kernels, name)


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



@pytest.mark.parametrize("order", [0, 1, 2])
def test_arccosine_is_exact_for_nearly_parallel_inputs(order):
    """Hypothesis's counterexample: inputs 6e-8 rad apart. With θ = arccos(cos θ) the angle was off by ~√ε (1e-8)
    and K₀ had an eigenvalue of −1.3e-8; Kahan's θ = 2·atan2(‖u − u′‖, ‖u + u′‖) is exact to rounding."""
    X = np.array([[5.96046448e-08, 0.5], [0.0, 5.96046448e-08], [5.96046448e-08, 1.0]])
    K = bk.kernels.ArcCosine(order).evaluate(X)
    np.testing.assert_allclose(K, ref.arccosine(X, X, order), rtol=1e-14, atol=1e-15)  # numpy, Kahan's formula too
    lam = np.linalg.eigvalsh(K)
    assert lam[0] >= -1e-14 * lam[-1], lam


def test_kernels_of_more_than_31_terms_evaluate_in_numpy_mode():
    """A Periodic kernel on 16 columns and a sum of 40 kernels make elementwise sums of 32 or more operands, which
    Elemwise's Python `perform` refuses (NotImplementedError); the numpy mode folds them. Against numpy's formula (the
    Periodic, within RTOL/ATOL) and the kernels evaluated one by one (the sum, within RTOL: its order of summation)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (6, 16))
    np.testing.assert_allclose(K.Periodic(1.3, 0.9).evaluate(X), ref.periodic(X, X, 1.3, 0.9), rtol=RTOL, atol=ATOL)
    terms = [K.Linear() * float(i + 1) for i in range(40)]
    np.testing.assert_allclose(sum(terms[1:], terms[0]).evaluate(X[:, :2]), sum(k.evaluate(X[:, :2]) for k in terms), rtol=1e-13)
