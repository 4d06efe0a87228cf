"""GP: the exact posterior against numpy and scikit-learn, the PyMC likelihood, prior samples, refusal of a kernel that is not PSD, bad input."""

import numpy as np
import pymc as pm
import pytest

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K

# Tolerances: both sides are Cholesky/solve computations on matrices with condition number ≲ 1e4
# here, so agreement to ~1e-12 is expected; 1e-9 relative leaves a wide margin.
RTOL, ATOL = 1e-9, 1e-10


def _data(n=12, seed=0):
    X, t = bk.datasets.sinusoid(n, 0.2, seed)
    return X, t, np.linspace(-0.2, 1.2, 9)[:, None]


@pytest.mark.parametrize("sigma", [0.2, 0.05])
@pytest.mark.parametrize(
    "kernel, kref",
    [
        (K.PRML(1.0, 16.0, 0.5, 0.3), lambda A, B: ref.prml(A, B, 1.0, 16.0, 0.5, 0.3)),
        (2.0 * K.RBF(0.3) + K.Linear(), lambda A, B: 2.0 * ref.rbf(A, B, 0.3) + ref.linear(A, B)),
    ],
)
@pytest.mark.parametrize("include_noise", [False, True])
def test_posterior_matches_numpy_reference(kernel, kref, sigma, include_noise):
    X, t, Xs = _data()
    post = bk.gp.posterior(kernel, X, t, sigma=sigma, Xnew=Xs, include_noise=include_noise)
    mean, cov, lml = ref.gp_posterior(kref(X, X), kref(X, Xs), kref(Xs, Xs), t, sigma)
    if include_noise:
        cov = cov + sigma**2 * np.eye(len(Xs))
    np.testing.assert_allclose(post.mean, mean, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.cov, cov, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.var, np.diag(cov), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.log_marginal_likelihood, lml, rtol=1e-12)
    assert post.include_noise is include_noise and post.jitter == 0.0


def test_posterior_at_training_inputs_by_default_and_noise_free_interpolation():
    X, t, _ = _data(8)
    kernel = K.RBF(0.3)
    post = bk.gp.posterior(kernel, X, t, sigma=0.0)
    # noise-free: the posterior mean interpolates the data, with zero variance there
    np.testing.assert_allclose(post.mean, t, rtol=0, atol=1e-8)
    assert np.all(post.var >= 0) and np.max(post.var) < 1e-8
    mean, cov, lml = ref.gp_posterior(ref.rbf(X, X, 0.3), ref.rbf(X, X, 0.3), ref.rbf(X, X, 0.3), t, 0.0)
    np.testing.assert_allclose(post.log_marginal_likelihood, lml, rtol=1e-9)


def test_variances_are_never_negative():
    X = np.linspace(0, 1, 40)[:, None]  # a smooth RBF on a dense grid: K is numerically singular
    t = np.sin(6 * X[:, 0])
    post = bk.gp.posterior(K.RBF(1.0), X, t, sigma=1e-9, Xnew=X)
    assert np.all(post.var >= 0)
    assert np.all(np.diag(post.cov) >= 0)


def test_jitter_is_added_only_when_needed_and_reported():
    X = np.linspace(0, 1, 30)[:, None]
    t = np.sin(6 * X[:, 0])
    with pytest.warns(RuntimeWarning, match="added jitter"):
        post = bk.gp.posterior(K.RBF(2.0), X, t, sigma=0.0)
    assert post.jitter > 0
    assert bk.gp.posterior(K.RBF(2.0), X, t, sigma=0.1).jitter == 0.0


def test_posterior_equals_scikit_learn_gpr():
    sk = pytest.importorskip("sklearn.gaussian_process")
    kern = pytest.importorskip("sklearn.gaussian_process.kernels")
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(25, 2))
    t = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(25)
    Xs = rng.uniform(-2.5, 2.5, size=(10, 2))
    t0, t1, t2, t3, sigma = 1.5, 2.0, 0.3, 0.4, 0.1
    cases = [
        (K.PRML(t0, t1, t2, t3),
         kern.ConstantKernel(t0) * kern.RBF(1 / np.sqrt(t1)) + kern.ConstantKernel(t2) + kern.ConstantKernel(t3) * kern.DotProduct(sigma_0=0.0)),
        (K.RBF([0.7, 1.9]), kern.RBF([0.7, 1.9])),
        (K.Polynomial(2, c=0.5), kern.DotProduct(sigma_0=np.sqrt(0.5)) ** 2),
    ]
    for ours, theirs in cases:
        gpr = sk.GaussianProcessRegressor(theirs, alpha=sigma**2, optimizer=None, normalize_y=False).fit(X, t)
        mean, std = gpr.predict(Xs, return_std=True)
        post = bk.gp.posterior(ours, X, t, sigma=sigma, Xnew=Xs)
        # scikit-learn's std is that of f (alpha is not added at prediction)
        np.testing.assert_allclose(post.mean, mean, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(post.std, std, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(post.log_marginal_likelihood, gpr.log_marginal_likelihood_value_, rtol=1e-10)


def test_model_logp_equals_analytic_log_marginal_likelihood():
    X, t, _ = _data(15)
    kernel, sigma = K.PRML(1.0, 9.0, 0.2, 0.5), 0.25
    with pm.Model() as fixed:
        bk.gp.marginal_likelihood("y", X=X, y=t, kernel=kernel, sigma=sigma)
    analytic = bk.gp.posterior(kernel, X, t, sigma=sigma).log_marginal_likelihood
    _, _, lml = ref.gp_posterior(ref.prml(X, X, 1.0, 9.0, 0.2, 0.5), ref.prml(X, X, 1.0, 9.0, 0.2, 0.5), np.eye(15), t, sigma)
    np.testing.assert_allclose(fixed.compile_logp()({}), analytic, rtol=1e-12)
    np.testing.assert_allclose(analytic, lml, rtol=1e-12)

    with pm.Model() as hier:  # hyperparameters as random variables, evaluated at a point
        theta = pm.HalfNormal("theta", 5.0, shape=4)
        s = pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X=X, y=t, kernel=K.PRML(theta[0], theta[1], theta[2], theta[3]), sigma=s)
    point = {"theta_log__": np.log([2.0, 5.0, 0.1, 0.3]), "s_log__": np.log(0.3)}
    logp_y = hier.compile_logp(vars=[hier["y"]])(point)
    expected = bk.gp.posterior(K.PRML(2.0, 5.0, 0.1, 0.3), X, t, sigma=0.3).log_marginal_likelihood
    np.testing.assert_allclose(logp_y, expected, rtol=1e-12)


FIG_6_5 = [(1, 4, 0, 0), (9, 4, 0, 0), (1, 64, 0, 0), (1, 0.25, 0, 0), (1, 4, 10, 0), (1, 4, 0, 5)]


@pytest.mark.parametrize("theta", FIG_6_5, ids=[str(t) for t in FIG_6_5])
def test_prior_samples_have_the_kernel_as_covariance(theta):
    """PRML figure 6.5 settings: the sample covariance of f(X) matches K within Monte Carlo error.

    For zero-mean Gaussian f, the sample covariance entry Ĉᵢⱼ has standard error
    √((KᵢᵢKⱼⱼ + Kᵢⱼ²)/n); every entry must lie within 5 standard errors (false-alarm rate ~1e-5 each).
    """
    X = np.linspace(-1, 1, 6)[:, None]
    n = 20000
    f = bk.gp.prior_samples(K.PRML(*theta), X, n=n, seed=42)
    assert f.shape == (n, 6)
    Kx = ref.prml(X, X, *theta)
    C = f.T @ f / n
    se = np.sqrt((np.outer(np.diag(Kx), np.diag(Kx)) + Kx**2) / n)
    assert np.all(np.abs(C - Kx) <= 5 * se)
    np.testing.assert_array_equal(f, bk.gp.prior_samples(K.PRML(*theta), X, n=n, seed=42))  # same seed, same draws


def _not_psd():
    """xᵀx′ − 3: not positive semi-definite (validation is bypassed on purpose)."""
    kernel = K.Linear() + K.Constant(0.0)
    kernel.children[1].hyperparameters["c"] = np.float64(-3.0)
    return kernel


def test_marginal_likelihood_prior_draws_have_the_full_covariance():
    """The model holds K's lower triangle only; its draws of t must still have covariance K + σ²I (5 Monte Carlo
    standard errors, entrywise: se = √((CᵢᵢCⱼⱼ + Cᵢⱼ²)/n))."""
    X = np.linspace(-1, 1, 4)[:, None]
    kernel, sigma, n = K.PRML(1.0, 4.0, 0.5, 2.0), 0.3, 20000
    with pm.Model():
        y = bk.gp.marginal_likelihood("y", X=X, y=np.zeros(4), kernel=kernel, sigma=sigma)
        draws = pm.draw(y, draws=n, random_seed=1)
    C = ref.prml(X, X, 1.0, 4.0, 0.5, 2.0) + sigma**2 * np.eye(4)
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C**2) / n)
    assert np.all(np.abs(draws.T @ draws / n - C) <= 5 * se)


def test_prior_samples_reject_a_kernel_that_is_not_psd():
    with pytest.raises(ValueError, match="not positive semi-definite"):
        bk.gp.prior_samples(_not_psd(), np.linspace(-1, 1, 5)[:, None], n=2, seed=0)


def test_bad_input_gets_named_errors():
    X, t, Xs = _data(6)
    k = K.RBF(0.5)
    post = bk.gp.posterior
    with pytest.raises(ValueError, match="X contains NaN or infinite values"):
        post(k, np.r_[X[:-1], [[np.nan]]], t, 0.1)
    with pytest.raises(ValueError, match="y contains NaN or infinite values"):
        post(k, X, np.r_[t[:-1], np.inf], 0.1)
    with pytest.raises(ValueError, match="Xnew contains NaN or infinite values"):
        post(k, X, t, 0.1, Xnew=[[np.nan]])
    with pytest.raises(ValueError, match="y has 5 entries but X has 6 rows"):
        post(k, X, t[:-1], 0.1)
    with pytest.raises(ValueError, match="Xnew has 2 column"):
        post(k, X, t, 0.1, Xnew=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="X is empty"):
        post(k, np.zeros((0, 1)), [], 0.1)
    with pytest.raises(ValueError, match="y is empty"):
        post(k, X, [], 0.1)
    with pytest.raises(ValueError, match="sigma must be non-negative"):
        post(k, X, t, -0.1)
    with pytest.raises(ValueError, match="sigma must be a scalar"):
        post(k, X, t, [0.1, 0.2])
    with pytest.raises(ValueError, match="kernel must be a bayeskern.kernels kernel"):
        post(lambda a, b: a @ b.T, X, t, 0.1)
    with pytest.raises(ValueError, match="include_noise must be True or False"):
        post(k, X, t, 0.1, include_noise="yes")
    Xdup = np.r_[X, X[2:3]]
    with pytest.raises(ValueError, match=r"X has duplicate rows \(2 and 6\) and sigma=0"):
        post(k, Xdup, np.r_[t, 0.0], 0.0)
    post(k, Xdup, np.r_[t, 0.0], 0.1)  # fine with noise
    post(k + K.White(0.1), Xdup, np.r_[t, 0.0], 0.0)  # fine with a white-noise term in the kernel
    with pytest.warns(RuntimeWarning, match="added jitter"):  # rank one and no noise: PSD, singular
        assert post(K.Linear(), np.linspace(0.1, 1, 5), np.zeros(5), 0.0).jitter > 0
    with pytest.raises(ValueError, match=r"the kernel .* is not positive semi-definite on X.*checks\.psd"):
        post(_not_psd(), np.linspace(0, 1, 5), np.zeros(5), 0.1)  # named, rather than jitter up to the last step
    with pm.Model():
        with pytest.raises(ValueError, match="sigma must be positive"):
            bk.gp.marginal_likelihood("y", X, t, k, sigma=0.0)
        with pytest.raises(ValueError, match="y has 5 entries but X has 6 rows"):
            bk.gp.marginal_likelihood("y", X, t[:-1], k, sigma=0.1)
    with pytest.raises(ValueError, match="n must be an integer ≥ 1"):
        bk.gp.prior_samples(k, X, n=0)


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



def test_the_jitter_warning_compares_the_jitter_with_the_noise():
    """A jitter of 859 σ² (a cubic's rank-4 kernel with an outlier, σ = 1e-4) makes the posterior that of noise σ² + jitter
    (its variances ~860× too large, a review found): the warning says so, with the ratio; with σ = 0 it says σ = 0;
    below 1 % of σ² it gives the ratio alone."""
    from bayeskern._linalg import announce_jitter

    rng = np.random.default_rng(11)
    X = np.r_[rng.uniform(-1, 1, 30), 8.0]
    t = np.sin(2 * X) + 0.3 * np.cos(7 * X)
    kernel = bk.kernels.FeatureKernel(bk.features.Monomials(degree=3), 10.0)
    with pytest.warns(RuntimeWarning, match=r"added jitter 8\.59e-06 to its diagonal \(859 × sigma²\): the results are those of noise variance sigma² \+ jitter"):
        bk.gp.condition(kernel, X, t, 1e-4)
    with pytest.warns(RuntimeWarning, match=r"\(sigma = 0\): the results are those of noise variance"):
        bk.gp.condition(kernel, X, t, 0.0)
    with pytest.warns(RuntimeWarning) as caught:
        announce_jitter("C", 1e-9, 1e-6)
    assert str(caught[0].message).endswith("added jitter 1e-09 to its diagonal (0.001 × sigma²)")


def _mismatched_length_scales():
    """(what, a call that must refuse length scales for another number of columns, the message's count of entries)."""
    X1, t, _ = _data()
    X2 = np.column_stack([X1[:, 0], X1[:, 0] ** 2])
    vfe = bk.approx.VFE(inducing=X1[::3])

    def in_model(ell, approx=None, X=X1):
        with pm.Model(coords={"ard": ["a", "b", "c"]}):  # (dims: a length PyMC leaves open until the model's sizes are read)
            bk.gp.marginal_likelihood("y", X, t, K.RBF(ell()), 0.2, approx=approx)

    return [
        ("posterior, 1-D", lambda: bk.gp.posterior(K.RBF([0.2, 0.3]), X1, t, 0.2), 2),
        ("posterior, 2-D", lambda: bk.gp.posterior(K.RBF([0.2, 0.3, 0.4]), X2, t, 0.2), 3),
        ("condition", lambda: bk.gp.condition(K.RBF([0.2, 0.3]), X1, t, 0.2), 2),
        ("condition, HSGP", lambda: bk.gp.condition(K.RBF([0.2, 0.3]), X1, t, 0.2, approx=bk.approx.HSGP(m=10, c=1.5)), 2),
        ("condition, VFE", lambda: bk.gp.condition(K.RBF([0.2, 0.3]), X1, t, 0.2, approx=vfe), 2),
        ("a PyMC vector of 3", lambda: in_model(lambda: pm.Gamma("ell", 2.0, 5.0, shape=3)), 3),
        ("a PyMC vector of 3, HSGP", lambda: in_model(lambda: pm.Gamma("ell", 2.0, 5.0, shape=3), bk.approx.HSGP(m=10, c=1.5)), 3),
        ("a PyMC vector of 1 on 2-D", lambda: in_model(lambda: pm.Gamma("ell", 2.0, 5.0, shape=1), X=X2), 1),
        ("a PyMC vector sized by dims", lambda: in_model(lambda: pm.Gamma("ell", 2.0, 5.0, dims="ard")), 3),
        ("a PyMC vector sized by data", lambda: in_model(lambda: pm.Gamma("ell", 2.0, 5.0, shape=pm.Data("z", np.zeros(2)).shape)), 2),
    ]


MISMATCHED = _mismatched_length_scales()


@pytest.mark.parametrize("what, call, entries", MISMATCHED, ids=[what for what, _, _ in MISMATCHED])
def test_length_scales_for_another_number_of_columns_are_refused_by_name(what, call, entries):
    # before session 44, gp.posterior on 1-D inputs used the first length scale alone and the rest silently (the same log
    # marginal likelihood as RBF(0.2)), a PyMC vector of 3 was fitted with its last two entries left at their start, and on
    # 2-D inputs the exact GP raised PyTensor's AssertionError; `evaluate` refused them all by name
    with pytest.raises(ValueError, match=rf"lengthscale has {entries} ARD entries but the inputs have \d column"):
        call()


def test_a_pymc_covariance_of_another_size_is_refused_by_name():
    import pytensor.tensor as pt

    X, t, _ = _data()
    with pm.Model(), pytest.raises(ValueError, match=r"cov is 3x3 but the inputs have 1 column"):
        bk.gp.marginal_likelihood("y", X, t, K.MahalanobisRBF(pt.diag(pm.HalfNormal("d", 1.0, shape=3))), 0.2)
    for rank, shape in ((0, ()), (1, (3,))):  # a symbolic cov that is no matrix: named (an IndexError or "3x3" before the review)
        with pm.Model(), pytest.raises(ValueError, match=rf"cov must be a \(d, d\) matrix, got {rank} dimension"):
            bk.gp.marginal_likelihood("y", X, t, K.MahalanobisRBF(pm.HalfNormal("c", 1.0, shape=shape)), 0.2)
    with pm.Model():  # one of the right size is built
        bk.gp.marginal_likelihood("y", X, t, K.MahalanobisRBF(pt.diag(pm.HalfNormal("d", 1.0, shape=1))), 0.2)


PER_COLUMN = [
    ("ProbabilityProduct's variance", lambda: K.ProbabilityProduct(1.0, pm.HalfNormal("v", 1.0, dims="ard")),
     r"variance has 3 entries but the inputs have 1 column"),
    ("FeatureKernel's prior_cov", lambda: K.FeatureKernel(bk.features.Polynomial(1), pm.HalfNormal("v", 1.0, dims="ard")),
     r"prior_cov has 3 rows but phi gives M=2 features"),  # (1, x)
    ("FeatureKernel's prior_cov, a fixed size", lambda: K.FeatureKernel(bk.features.Polynomial(2), pm.HalfNormal("v", 1.0, shape=4)),
     r"prior_cov has 4 rows but phi gives M=3 features"),  # (1, x, x²)
]


@pytest.mark.parametrize("what, make, message", PER_COLUMN, ids=[what for what, _, _ in PER_COLUMN])
def test_other_per_column_parameters_of_pymc_size_are_checked_the_same_way(what, make, message):
    # the kernels' one check of a parameter's size against the inputs (`_parameterised.known_shape`): before, every kernel
    # but the stationary ones skipped a symbolic parameter
    X, t, _ = _data()
    with pm.Model(coords={"ard": ["a", "b", "c"]}), pytest.raises(ValueError, match=message):
        bk.gp.marginal_likelihood("y", X, t, make(), 0.2)
