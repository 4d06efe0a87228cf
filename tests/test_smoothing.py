"""bayeskern.smoothing against independent references: scipy's gaussian_kde, scikit-learn's KernelRidge, numpy loops, brute-force refits."""

import json
import re
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import bayeskern as bk
from bayeskern.smoothing import _blocks

S = bk.smoothing


# -- independent numpy references, written from the formulas -------------------------------------

def profile_reference(u: np.ndarray, kernel: str) -> np.ndarray:
    """k(u) for distances u = ‖x − x′‖/h, written out per kernel (seeds 002, 004)."""
    return {
        "gaussian": np.exp(-0.5 * u**2),
        "epanechnikov": np.clip(1 - u**2, 0, None),
        "boxcar": (u <= 1).astype(float),
        "triangular": np.clip(1 - u, 0, None),
    }[kernel]


def nw_reference(X, y, Xnew, h, kernel="gaussian"):
    """m̂(x) = Σᵢ k(‖x − xᵢ‖/h) yᵢ / Σⱼ k(‖x − xⱼ‖/h), one point x at a time."""
    X, Xnew = np.atleast_2d(X.T).T, np.atleast_2d(Xnew.T).T
    out = []
    for x in Xnew:
        w = profile_reference(np.sqrt(np.sum((X - x) ** 2, axis=1)) / h, kernel)
        out.append(np.sum(w * y) / np.sum(w))
    return np.array(out)


def nw_loo_reference(X, y, h, kernel="gaussian"):
    """(1/n) Σᵢ (yᵢ − m̂₋ᵢ(xᵢ))² by n refits without point i."""
    X = np.atleast_2d(X.T).T
    resid = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        w = profile_reference(np.sqrt(np.sum((X[keep] - X[i]) ** 2, axis=1)) / h, kernel)
        if np.sum(w) == 0:
            return np.inf
        resid.append(y[i] - np.sum(w * y[keep]) / np.sum(w))
    return float(np.mean(np.square(resid)))


def rbf_reference(A, B, lengthscale):
    """exp(−‖a − b‖² / (2ℓ²)) by explicit differences."""
    A, B = np.atleast_2d(A.T).T, np.atleast_2d(B.T).T
    return np.exp(-np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=2) / (2 * lengthscale**2))


def kr_fit_reference(K, y, lam):
    """α = (K + λI)⁻¹y by a plain dense solve."""
    return np.linalg.solve(K + lam * np.eye(len(y)), y)


def kde_cdf_reference(x, data, h):
    """F̂(x) = (1/n) Σᵢ Φ((x − Xᵢ)/h): the CDF of the 1-D Gaussian KDE, a mixture of normal CDFs."""
    return np.mean(scipy.stats.norm.cdf((np.asarray(x)[:, None] - data[None, :]) / h), axis=1)


@pytest.fixture
def sinusoid():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, 60)
    y = np.sin(2 * np.pi * X) + 0.2 * rng.standard_normal(60)
    return X, y, np.linspace(-0.05, 1.05, 37)


# -- Nadaraya–Watson -------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", S.SMOOTHING_KERNELS)
@pytest.mark.parametrize("d", [1, 2])
def test_nadaraya_watson_matches_numpy_loop(kernel, d):
    # rtol 1e-10: both are a ratio of the same O(n) sums; the package's ‖x‖² + ‖y‖² − 2xᵀy expansion
    # differs from explicit differences by ~1e-16 relative in the distances only
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (80, d)) if d > 1 else rng.uniform(0, 1, 80)
    y = np.cos(3 * np.atleast_2d(X.T).T.sum(axis=1)) + 0.1 * rng.standard_normal(80)
    Xnew = rng.uniform(0.1, 0.9, (25, d)) if d > 1 else rng.uniform(0.1, 0.9, 25)
    h = 0.3
    res = S.nadaraya_watson(X, y, Xnew, bandwidth=h, kernel=kernel)
    np.testing.assert_allclose(res.mean, nw_reference(X, y, Xnew, h, kernel), rtol=1e-10)
    # the leave-one-out score at the given h against n refits, same tolerance
    np.testing.assert_allclose(res.loo_score, nw_loo_reference(X, y, h, kernel), rtol=1e-10)
    assert res.bandwidth == h and res.kernel == kernel


@pytest.mark.parametrize("kernel", S.SMOOTHING_KERNELS)
def test_smoothing_weights_sum_to_one(kernel, sinusoid):
    # Σₙ k(x, xₙ) = 1 (seed 002, eq. 7) to round-off (1e-12), and each weight against the numpy formula
    X, _, Xs = sinusoid
    W = S.smoothing_weights(X, Xs, 0.2, kernel)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    ref = profile_reference(np.abs(Xs[:, None] - X[None, :]) / 0.2, kernel)
    np.testing.assert_allclose(W, ref / ref.sum(axis=1, keepdims=True), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "boxcar"])
def test_nadaraya_watson_loo_bandwidth_is_brute_force_argmin(kernel, sinusoid):
    # the chosen h is exactly the argmin of the brute-force leave-one-out error over the same grid;
    # the scores agree to rtol 1e-10 (infeasible compact-kernel candidates are +inf on both sides)
    X, y, Xs = sinusoid
    Xs = Xs[(Xs >= X.min()) & (Xs <= X.max())]
    grid = np.geomspace(0.005, 0.5, 14)
    res = S.nadaraya_watson(X, y, Xs, bandwidth=grid, kernel=kernel)
    brute = np.array([nw_loo_reference(X, y, h, kernel) for h in grid])
    finite = np.isfinite(brute)
    np.testing.assert_array_equal(np.isfinite(res.loo_scores), finite)
    np.testing.assert_allclose(res.loo_scores[finite], brute[finite], rtol=1e-10)
    assert res.bandwidth == grid[np.argmin(brute)]
    np.testing.assert_allclose(res.mean, nw_reference(X, y, Xs, res.bandwidth, kernel), rtol=1e-10)


def test_nadaraya_watson_default_grid_and_blocks_agree(sinusoid, monkeypatch):
    # h = None searches default_bandwidth_grid(X); tiny row blocks (a few rows each) give the same
    # numbers as one block — block boundaries do not leak (rtol 1e-12)
    X, y, Xs = sinusoid
    res = S.nadaraya_watson(X, y, Xs)
    assert res.bandwidth in S.default_bandwidth_grid(X)
    monkeypatch.setattr(_blocks, "BLOCK_BYTES", 8 * 60 * 3)  # three rows of 60 columns per block
    for threads in (1, 2):  # the blocks one after another, and on a pool of two threads
        monkeypatch.setattr(_blocks, "THREADS", threads)
        small = S.nadaraya_watson(X, y, Xs)
        np.testing.assert_allclose(small.mean, res.mean, rtol=1e-12)
        np.testing.assert_allclose(small.loo_scores, res.loo_scores, rtol=1e-12)
        kde = S.KDE(X, bandwidth=np.geomspace(0.01, 0.5, 8))
        np.testing.assert_allclose(kde.logpdf(Xs), S.KDE(X, kde.bandwidth).logpdf(Xs), rtol=1e-12)


def test_gaussian_small_bandwidth_exponent_floor():
    # h = 0.005 on [0, 1]: most exponents −‖x − xⱼ‖²/2h² are far below the −700 floor the package applies
    # before exp; against the numpy loop (exact exp, underflowing to 0) and scipy, rtol 1e-10
    rng = np.random.default_rng(11)
    X = np.sort(rng.uniform(0, 1, 400))
    y = np.cos(5 * X) + 0.1 * rng.standard_normal(400)
    Xs = rng.uniform(0, 1, 50)
    h = 0.005
    res = S.nadaraya_watson(X, y, Xs, bandwidth=h)
    np.testing.assert_allclose(res.mean, nw_reference(X, y, Xs, h), rtol=1e-10)
    np.testing.assert_allclose(res.loo_score, nw_loo_reference(X, y, h), rtol=1e-10)
    theirs = scipy.stats.gaussian_kde(X, bw_method=h / X.std(ddof=1))
    np.testing.assert_allclose(S.KDE(X, h).pdf(Xs), theirs(Xs), rtol=1e-10)


def test_nadaraya_watson_far_points():
    # Gaussian: a point 10⁴ bandwidths away gets the nearest point's y (all weights would underflow to 0/0
    # without the per-row shift); compact kernels raise instead of returning NaN
    X, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    res = S.nadaraya_watson(X, y, [1e3], bandwidth=0.1)
    np.testing.assert_allclose(res.mean, [3.0], rtol=1e-12)
    with pytest.raises(ValueError, match="no data point within bandwidth"):
        S.nadaraya_watson(X, y, [5.0], bandwidth=0.5, kernel="epanechnikov")


# -- kernel density estimation -----------------------------------------------------------------------

def test_kde_matches_scipy_1d():
    # rtol 1e-10: the same Gaussian mixture; scipy sums exp(−(x − Xᵢ)²/2h²) directly, we through the
    # BLAS distance expansion and log-sum-exp (round-off ~1e-13 relative). h ↔ scipy: bw_method = h / σ̂
    rng = np.random.default_rng(2)
    X = rng.standard_normal(300) * 2 + 1
    Xs = np.linspace(-8, 10, 101)
    h = 0.35
    ours = S.KDE(X, bandwidth=h)
    theirs = scipy.stats.gaussian_kde(X, bw_method=h / X.std(ddof=1))
    np.testing.assert_allclose(ours.pdf(Xs), theirs(Xs), rtol=1e-10)
    np.testing.assert_allclose(ours.logpdf(Xs), theirs.logpdf(Xs), rtol=1e-10)
    assert ours.bandwidth_method == "given"
    # Scott's and Silverman's rules equal scipy's factor × σ̂ in 1-D (rtol 1e-12, same arithmetic)
    for method in ("scott", "silverman"):
        kde = S.KDE(X, bandwidth=method)
        ref = scipy.stats.gaussian_kde(X, bw_method=method)
        np.testing.assert_allclose(kde.bandwidth, ref.factor * X.std(ddof=1), rtol=1e-12)
        np.testing.assert_allclose(kde.pdf(Xs), ref(Xs), rtol=1e-10)
    assert S.KDE(X).bandwidth_method == "scott"  # scipy's default too


def test_kde_matches_scipy_2d():
    # in d = 2 scipy's kernel covariance is factor²·Σ̂; on data whitened so that Σ̂ = I exactly, our
    # isotropic h equals scipy's factor. rtol 1e-10 as in 1-D.
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((400, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]])
    Z -= Z.mean(axis=0)
    L = np.linalg.cholesky(np.cov(Z.T))
    X = scipy.linalg.solve_triangular(L, Z.T, lower=True).T + np.array([3.0, -1.0])  # sample cov = I
    Xs = rng.uniform(-2, 6, (150, 2))
    for h in (0.25, "scott", "silverman"):
        ours = S.KDE(X, bandwidth=h)
        theirs = scipy.stats.gaussian_kde(X.T, bw_method=h)
        np.testing.assert_allclose(ours.bandwidth, theirs.factor, rtol=1e-12)
        np.testing.assert_allclose(ours.pdf(Xs), theirs(Xs.T), rtol=1e-10)
        np.testing.assert_allclose(ours.logpdf(Xs), theirs.logpdf(Xs.T), rtol=1e-10)


def test_kde_logpdf_finite_far_from_data(monkeypatch):
    # 10³ bandwidths from the data every term of the sum underflows; log-sum-exp keeps log f̂ finite and
    # exact: against scipy.special.logsumexp of the exponents written out (rtol 1e-12)
    X = np.array([0.0, 0.5, 2.0])
    h, x = 0.1, np.array([100.0, -50.0])
    ref = scipy.special.logsumexp(-((x[:, None] - X[None, :]) ** 2) / (2 * h**2), axis=1) - np.log(3 * np.sqrt(2 * np.pi) * h)
    kde = S.KDE(X, bandwidth=h)
    np.testing.assert_allclose(kde.logpdf(x), ref, rtol=1e-12)
    assert np.all(np.isfinite(kde.logpdf(x))) and np.all(kde.pdf(x) == 0.0)


def test_kde_loo_bandwidth_is_brute_force_argmax():
    # Σᵢ log f̂₋ᵢ(Xᵢ) by n explicit leave-one-out densities (scipy.stats.norm), rtol 1e-10; the chosen h
    # is the grid's argmax
    rng = np.random.default_rng(4)
    X = rng.standard_normal(40)
    grid = np.geomspace(0.05, 2.0, 15)
    kde = S.KDE(X, bandwidth=grid)

    def brute(h):
        return sum(np.log(np.mean(scipy.stats.norm.pdf(X[i], np.delete(X, i), h))) for i in range(len(X)))

    ref = np.array([brute(h) for h in grid])
    np.testing.assert_allclose(kde.loo_log_likelihoods, ref, rtol=1e-10)
    assert kde.bandwidth == grid[np.argmax(ref)] and kde.bandwidth_method == "loo"
    np.testing.assert_allclose(kde.loo_log_likelihood(0.3), brute(0.3), rtol=1e-10)
    assert S.KDE(X, bandwidth="loo").bandwidth > 0  # the default grid


def test_kde_samples_match_density():
    # the seeds' recipe (an index uniformly, then N(Xᵢ, h²)) draws from f̂: a one-sample KS test of 4000
    # draws against f̂'s CDF (a mixture of normal CDFs, written above). Fixed seed; criterion p > 1e-3
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(-2, 0.5, 50), rng.normal(1, 1, 100)])
    kde = S.KDE(X, bandwidth=0.3)
    draws = kde.sample(4000, seed=6)
    assert draws.shape == (4000, 1)
    p = scipy.stats.kstest(draws[:, 0], lambda x: kde_cdf_reference(x, X, 0.3)).pvalue
    assert p > 1e-3
    # a different density (h doubled) is rejected by the same test: it has power here
    assert scipy.stats.kstest(draws[:, 0], lambda x: kde_cdf_reference(x, X, 0.9)).pvalue < 1e-3
    # in 2-D, the draws' mean and covariance are the mixture's: X̄ and Σ̂(ddof = 0) + h²I, within 4.5
    # standard errors per entry (the covariance SEs estimated from the draws' fourth moments)
    X2 = rng.standard_normal((200, 2)) * np.array([1.0, 3.0])
    kde2 = S.KDE(X2, bandwidth=0.5)
    D = kde2.sample(20000, seed=7)
    se = D.std(axis=0) / np.sqrt(len(D))
    assert np.all(np.abs(D.mean(axis=0) - X2.mean(axis=0)) < 4.5 * se)
    cov_ref = np.cov(X2.T, ddof=0) + 0.25 * np.eye(2)
    Dc = D - D.mean(axis=0)
    prods = Dc[:, :, None] * Dc[:, None, :]
    assert np.all(np.abs(prods.mean(axis=0) - cov_ref) < 4.5 * prods.std(axis=0) / np.sqrt(len(D)))


def test_kde_bias_variance_orders():
    """The seeds' orders bias² ∝ h⁴ and variance ∝ 1/(n hᵖ) (p = 1) as fitted log–log slopes, at x₀ = 0.5.

    `kde_orders` simulates on X ~ N(0, 1). The bias uses the exact expected KDE, the Gaussian
    convolution E f̂(x₀) = N(x₀; 0, 1 + h²), because Monte Carlo noise would swamp a bias of order h²
    at small h; the simulation is checked against it (mean of f̂(x₀) over R = 300 replicates within 4
    standard errors, and recomputed here from the replicates' definition). The variance is Monte Carlo.
    h ranges: bias over h ∈ [0.05, 0.4] (the O(h⁶) terms bend the slope by < 0.1); variance over
    h ∈ [0.01, 0.08] at n = 2000 (the −f(x₀)²/n term of the exact variance bends it by < 0.1) and over
    n ∈ [250, 4000] at h = 0.05 (exactly ∝ 1/n). Tolerances: 4 ± 0.25 for the bias (deterministic),
    −1 ± 0.2 for both variance slopes (Monte Carlo SE of each ≈ 0.05; the seed is fixed).
    """
    res = S.kde_orders(x0=0.5, reps=300, seed=8)
    # bias² from the closed form, written here independently: (N(x₀; 0, 1 + h²) − N(x₀; 0, 1))², rtol 1e-12
    ref = (np.exp(-0.125 / (1 + res.hs_bias**2)) / np.sqrt(2 * np.pi * (1 + res.hs_bias**2)) - np.exp(-0.125) / np.sqrt(2 * np.pi)) ** 2
    np.testing.assert_allclose(res.bias2, ref, rtol=1e-12)
    assert abs(res.bias2_slope - 4) < 0.25, res.bias2_slope
    assert np.all(np.abs(res.mc_mean_z) < 4), res.mc_mean_z
    assert abs(res.var_h_slope + 1) < 0.2, res.var_h_slope
    assert abs(res.var_n_slope + 1) < 0.2, res.var_n_slope
    # the simulated variance against the exact one, Var f̂(x₀) = (E φ_h(x₀ − X)² − (E f̂(x₀))²)/n with
    # E φ_h(x₀ − X)² = N(x₀; 0, 1 + h²/2)/(2√π h): within 25 % (R = 300: relative SE ≈ 8 %)
    h = res.hs_var
    e2 = scipy.stats.norm.pdf(0.5, 0, np.sqrt(1 + h**2 / 2)) / (2 * np.sqrt(np.pi) * h)
    exact = (e2 - scipy.stats.norm.pdf(0.5, 0, np.sqrt(1 + h**2)) ** 2) / res.n_fixed
    np.testing.assert_allclose(res.var_h, exact, rtol=0.25)
    json.dumps(res.to_dict())


# -- kernel ridge ---------------------------------------------------------------------------------------

def test_kernel_ridge_matches_sklearn(sinusoid):
    # scikit-learn's KernelRidge(kernel="rbf", gamma = 1/(2ℓ²), alpha = λ): the same α and predictions;
    # both solve (K + λI)α = y with K + λI's condition number ~1e3, so rtol 1e-8 leaves a wide margin
    KernelRidge = pytest.importorskip("sklearn.kernel_ridge").KernelRidge
    X, y, Xs = sinusoid
    ell, lam = 0.15, 0.05
    ours = S.kernel_ridge(bk.kernels.RBF(lengthscale=ell), X, y, lam=lam, Xnew=Xs)
    theirs = KernelRidge(alpha=lam, kernel="rbf", gamma=1 / (2 * ell**2)).fit(X[:, None], y)
    np.testing.assert_allclose(ours.alpha, theirs.dual_coef_, rtol=1e-8)
    np.testing.assert_allclose(ours.mean, theirs.predict(Xs[:, None]), rtol=1e-8, atol=1e-12)
    # any bayeskern kernel, against sklearn with the same Gram matrix precomputed (rtol 1e-8 likewise)
    k = bk.kernels.PRML(1.0, 16.0, 0.5, 0.2)
    ours = S.kernel_ridge(k, X, y, lam=lam, Xnew=Xs)
    theirs = KernelRidge(alpha=lam, kernel="precomputed").fit(k.evaluate(X), y)
    np.testing.assert_allclose(ours.mean, theirs.predict(k.evaluate(Xs, X)), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("cv_lam", ["fixed", "grid"])
def test_kernel_ridge_closed_form_loo_equals_refits(cv_lam):
    # eᵢ = (yᵢ − ŷᵢ)/(1 − Hᵢᵢ) against n = 30 refits without point i (dense solves), rtol 1e-8: the
    # shortcut is exact algebra, the gap is round-off in (K + λI)⁻¹ (condition number ≤ ~1e4 here).
    # "fixed": λ given (Cholesky path); "grid": every λ of a grid from one eigendecomposition.
    rng = np.random.default_rng(9)
    X = rng.uniform(0, 1, (30, 2))
    y = np.sin(4 * X[:, 0]) * X[:, 1] + 0.1 * rng.standard_normal(30)
    ell = 0.4
    K = rbf_reference(X, X, ell)

    def refit_resid(lam):
        out = []
        for i in range(30):
            keep = np.arange(30) != i
            a = kr_fit_reference(K[np.ix_(keep, keep)], y[keep], lam)
            out.append(y[i] - K[i, keep] @ a)
        return np.array(out)

    if cv_lam == "fixed":
        res = S.kernel_ridge(bk.kernels.RBF(lengthscale=ell), X, y, lam=0.03)
        np.testing.assert_allclose(res.loo_residuals, refit_resid(0.03), rtol=1e-8)
        np.testing.assert_allclose(res.alpha, kr_fit_reference(K, y, 0.03), rtol=1e-8)
    else:
        grid = np.geomspace(1e-3, 1.0, 8)
        res = S.kernel_ridge(bk.kernels.RBF(lengthscale=ell), X, y, lam=grid)
        brute = np.array([np.mean(refit_resid(lam) ** 2) for lam in grid])
        np.testing.assert_allclose(res.cv_scores, brute, rtol=1e-8)
        assert res.lam == grid[np.argmin(brute)] and res.cv == "loo"
        np.testing.assert_allclose(res.loo_residuals, refit_resid(res.lam), rtol=1e-8)
        np.testing.assert_allclose(res.alpha, kr_fit_reference(K, y, res.lam), rtol=1e-8)


def test_kernel_ridge_refuses_a_kernel_that_is_not_psd_however_lam_is_given(sinusoid):
    """tanh(xᵀx′ − 1) on these inputs has λmin(𝕂) < 0 (numpy's eigvalsh): the LOO grid refused it, but a fixed λ above
    |λmin| made 𝕂 + λI positive definite and the fit reported ‖m̂‖²_H = 0 for a negative αᵀ𝕂α (a review's finding)."""
    X, y, _ = sinusoid
    kernel = bk.kernels.Sigmoid(1.0, -1.0)
    eig = np.linalg.eigvalsh(kernel.evaluate(X))
    assert eig[0] < -1e-3 * eig[-1]  # indefinite well beyond round-off
    for lam, cv in ((None, "loo"), (2.0 * abs(eig[0]), "loo"), (np.geomspace(1.0, 1e3, 4) * abs(eig[0]), 3)):
        with pytest.raises(ValueError, match=r"kernel matrix K\(X, X\) is not positive semi-definite"):
            S.kernel_ridge(kernel, X, y, lam=lam, cv=cv)


def test_kernel_ridge_kfold_and_rkhs_norm(sinusoid):
    # k-fold scores against explicit refits on the same partition (rng(seed).permutation split into k
    # parts, as documented), rtol 1e-8; ‖m̂‖²_H = αᵀKα with K from the numpy reference, rtol 1e-10
    X, y, _ = sinusoid
    ell, grid, k = 0.15, np.geomspace(1e-3, 1.0, 6), 5
    res = S.kernel_ridge(bk.kernels.RBF(lengthscale=ell), X, y, lam=grid, cv=k, seed=3)
    K = rbf_reference(X, X, ell)
    folds = np.array_split(np.random.default_rng(3).permutation(len(y)), k)
    ref = []
    for lam in grid:
        sse = 0.0
        for test in folds:
            train = np.setdiff1d(np.arange(len(y)), test)
            a = kr_fit_reference(K[np.ix_(train, train)], y[train], lam)
            sse += np.sum((y[test] - K[np.ix_(test, train)] @ a) ** 2)
        ref.append(sse / len(y))
    np.testing.assert_allclose(res.cv_scores, ref, rtol=1e-8)
    assert res.lam == grid[np.argmin(ref)] and res.cv == k
    np.testing.assert_allclose(res.rkhs_norm_squared, res.alpha @ K @ res.alpha, rtol=1e-10)
    np.testing.assert_allclose(res.rkhs_norm, np.sqrt(res.alpha @ K @ res.alpha), rtol=1e-10)
    # α minimises J(α) = ‖y − Kα‖² + λαᵀKα (seed 001): its gradient 2K((K + λI)α − y) vanishes
    grad = 2 * K @ ((K + res.lam * np.eye(len(y))) @ res.alpha - y)
    assert np.max(np.abs(grad)) < 1e-8 * np.max(np.abs(K @ y))


# -- the comparison ----------------------------------------------------------------------------------

def test_compare_smoothers_close_and_equal_to_gp_mean(sinusoid):
    # the seeds' claim on the sinusoid (n = 60, noise sd 0.2 ≈ 27 % of sd(y)), both tuned by leave-one-out:
    # the two curves differ by much less than the noise (RMS < 15 % of sd(y), max < 35 %; 11 % and 25 %
    # on this data set, 4–11 % over other seeds and n = 60..200); the Mercer curve is the GP posterior
    # mean with σ² = λ (+ ȳ), rtol 1e-8
    X, y, Xs = sinusoid
    Xs = Xs[(Xs >= 0.05) & (Xs <= 0.95)]  # inside the data: NW is flat beyond it, ridge decays to ȳ
    cmp = S.compare_smoothers(X, y, Xs)
    assert cmp.rel_rms_diff < 0.15, cmp.rel_rms_diff
    assert cmp.rel_max_diff < 0.35, cmp.rel_max_diff
    np.testing.assert_allclose(cmp.rms_diff, np.sqrt(np.mean((cmp.smoother.mean - cmp.mercer.mean) ** 2)), rtol=1e-12)
    assert cmp.lengthscale == cmp.lengthscale_grid[np.argmin(cmp.lengthscale_loo_mse)]
    np.testing.assert_allclose(cmp.mercer_loo_mse, np.min(cmp.lengthscale_loo_mse), rtol=1e-12)
    gp_mean = bk.gp.posterior(bk.kernels.RBF(lengthscale=cmp.lengthscale), X, y - y.mean(), sigma=np.sqrt(cmp.lam), Xnew=Xs).mean
    np.testing.assert_allclose(cmp.mercer.mean, gp_mean + y.mean(), rtol=1e-8)
    assert cmp.smoother_loo_mse == cmp.smoother.loo_score and cmp.mercer_loo_mse == cmp.mercer.loo_mse
    json.dumps(cmp.to_dict())  # plain values only


def test_results_are_plain_dicts(sinusoid):
    X, y, Xs = sinusoid
    for res in (S.nadaraya_watson(X, y, Xs), S.KDE(X, "loo"), S.kernel_ridge(bk.kernels.RBF(lengthscale=0.2), X, y)):
        d = res.to_dict()
        assert json.loads(json.dumps(d)) == d


# -- bad input ---------------------------------------------------------------------------------------

X_OK, Y_OK = np.linspace(0, 1, 10), np.arange(10.0)
RBF = bk.kernels.RBF(lengthscale=0.3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=0.0), "bandwidth must be positive"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=-1.0), "bandwidth must be positive"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=np.nan), "bandwidth must be finite"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=[0.1, -0.2]), "bandwidth candidates must be positive"),
        (lambda: S.nadaraya_watson(np.r_[X_OK[:-1], np.nan], Y_OK, bandwidth=0.1), "X contains NaN"),
        (lambda: S.nadaraya_watson(X_OK, np.r_[Y_OK[:-1], np.inf], bandwidth=0.1), "y contains NaN or infinite"),
        (lambda: S.nadaraya_watson([], [], bandwidth=0.1), "X is empty"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK[:5], bandwidth=0.1), "y has 5 entries but X has 10 rows"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, np.ones((3, 2)), bandwidth=0.1), "Xnew has 2 column"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=0.1, kernel="cosine"), "kernel must be one of"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, bandwidth=[1e-4], kernel="boxcar"), "no candidate bandwidth"),
        (lambda: S.smoothing_weights(X_OK, [0.5], bandwidth=0.0), "bandwidth must be positive"),
        (lambda: S.KDE(X_OK, bandwidth=0.0), "bandwidth must be positive"),
        (lambda: S.KDE(X_OK, bandwidth=np.inf), "bandwidth must be finite"),
        (lambda: S.KDE(X_OK, bandwidth="normal_reference"), "bandwidth must be a positive number"),
        (lambda: S.KDE([[np.nan, 1.0]], bandwidth=0.1), "X contains NaN"),
        (lambda: S.KDE(np.empty((0, 2))), "X is empty"),
        (lambda: S.KDE(np.ones(5)), "X has no spread"),
        (lambda: S.KDE(X_OK, 0.1).pdf(np.ones((2, 3))), "Xnew has 3 column"),
        (lambda: S.KDE(X_OK, 0.1).logpdf([np.nan]), "Xnew contains NaN"),
        (lambda: S.KDE(X_OK, 0.1).sample(0), "n must be an integer ≥ 1"),
        (lambda: S.KDE(X_OK, 0.1, bandwidth_grid=[0.1, 0.2]), "bandwidth_grid is used only with bandwidth='loo'"),
        (lambda: S.KDE(X_OK, "loo", bandwidth_grid=[0.1, -0.2]), "bandwidth_grid candidates must be positive"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=-0.1), "lam must be non-negative"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=np.nan), "lam must be finite"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=[0.1, -1.0]), "lam must be non-negative"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK[:3], lam=0.1), "y has 3 entries"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=0.1, Xnew=np.ones((2, 2))), "Xnew has 2 column"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, cv=1), "cv must be an integer ≥ 2"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, cv="gcv"), "cv must be 'loo' or an integer"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, cv=11), "cv = 11 folds but there are only 10"),
        (lambda: S.kernel_ridge("rbf", X_OK, Y_OK, lam=0.1), "kernel must be a bayeskern.kernels kernel"),
        (lambda: S.compare_smoothers(X_OK, Y_OK, bandwidth=-0.5), "bandwidth must be positive"),
        (lambda: S.compare_smoothers(X_OK, Y_OK, bandwidth=0.2, lengthscale=0.0), "lengthscale must be positive"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -- hostile input (issue 17): finite and correct where the maths is, else a ValueError naming the argument --

def kde_logpdf_reference(x, data, h):
    """log f̂(x) = logsumexp(−½((x − Xᵢ)/h)²) − log n − ½ log 2π − log h, 1-D, written from the formula."""
    with np.errstate(over="ignore"):  # (x − Xᵢ)/h = ±inf: a term exp(−inf) = 0
        u = (np.asarray(x, dtype=float)[:, None] - data[None, :]) / h
        return scipy.special.logsumexp(-0.5 * u**2, axis=1) - np.log(len(data)) - 0.5 * np.log(2 * np.pi) - np.log(h)


def test_kde_logpdf_far_from_data_finite_or_raises():
    # 1e150 from the data with h = 0.01, log f̂ ≈ −5e303 is still a float64: it must come out, to rtol 1e-12
    # (each exponent carries a relative round-off ~1e-16; the reference takes the differences directly).
    # At 1e200 log f̂ ≈ −5e403 has no float64 value: a ValueError naming Xnew (it used to be NaN), while
    # pdf there is 0, which is correct
    X = np.array([0.0, 0.5, 2.0])
    kde = S.KDE(X, 0.01)
    x = np.array([1e150, -1e150, 1e5])
    np.testing.assert_allclose(kde.logpdf(x), kde_logpdf_reference(x, X, 0.01), rtol=1e-12)
    with pytest.raises(ValueError, match="Xnew.*below the float64 range"):
        kde.logpdf([1e200])
    assert kde.pdf([1e200, -1e200]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("h", [1e-300, 5e-324, 1e300, 1.7e308])
def test_kde_extreme_bandwidths_are_exact(h):
    # h = 1e300 used to raise OverflowError (h²) and h = 1e-300 ZeroDivisionError (1/h²): the density is
    # computed with h only through (x − Xᵢ)/h and log h, against the formula's logsumexp (rtol 1e-12)
    X = np.array([0.0, 0.5, 2.0])
    kde = S.KDE(X, h)
    x = np.array([0.0, 0.5 + 0.7 * h]) if h < 1 else np.array([0.0, 1e300, -3e307])
    np.testing.assert_allclose(kde.logpdf(x), kde_logpdf_reference(x, X, h), rtol=1e-12)
    if h < 1:  # the leave-one-out log likelihood is far below the float64 range: named, not −inf
        with pytest.raises(ValueError, match="bandwidth"):
            kde.loo_log_likelihood()


def test_nadaraya_watson_far_from_data_is_the_nearest_y():
    # Gaussian NW far from the data tends to the y of the nearest point(s) (it used to give NaN from 1e155 on):
    # exact to 1e-12 at 1e200 and 1e150; an equidistant point gets the mean of its two neighbours' y
    X, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    res = S.nadaraya_watson(X, y, [1e200, -1e200, 1e150, -1e150, 1.0 + 1e-300], bandwidth=1e-3, loo=False)
    np.testing.assert_allclose(res.mean, [4.0, 1.0, 4.0, 1.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(S.nadaraya_watson(X, y, [0.5], bandwidth=1e-100).mean, [1.5], rtol=1e-12)
    # in 2-D, far along a direction: the point furthest that way
    X2 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    res = S.nadaraya_watson(X2, y, [[1e300, -1e300], [-1e300, 1e300], [-1e200, -1e200]], bandwidth=1e-300, loo=False)
    np.testing.assert_allclose(res.mean, [2.0, 4.0, 1.0], rtol=1e-12)


def test_nadaraya_watson_far_weights_that_still_differ():
    # X = {0, 1e−300}, h = 1e−100, x = 1e100: both exponents are ~−5e399 (far below float64), yet their
    # difference is exactly (x₁ − x₀)(2x − x₀ − x₁)/2h² = 1, so m̂ = (y₀ + e·y₁)/(1 + e) = 1/(1 + e⁻¹).
    # Only a log-sum-exp relative to the nearest point, free of the ‖x‖² cancellation, gets it (rtol 1e-12)
    res = S.nadaraya_watson(np.array([0.0, 1e-300]), np.array([0.0, 1.0]), [1e100], bandwidth=1e-100, loo=False)
    np.testing.assert_allclose(res.mean, [1 / (1 + np.exp(-1.0))], rtol=1e-12)
    # and the same in 2-D: two points each e times heavier than the origin: (0 + e·1 + e·2)/(1 + 2e)
    X2 = np.array([[0.0, 0.0], [1e-300, 0.0], [0.0, 1e-300]])
    res = S.nadaraya_watson(X2, np.array([0.0, 1.0, 2.0]), [[1e100, 1e100]], bandwidth=1e-100, loo=False)
    np.testing.assert_allclose(res.mean, [3 * np.e / (1 + 2 * np.e)], rtol=1e-12)


@pytest.mark.parametrize("kernel", S.SMOOTHING_KERNELS)
def test_nadaraya_watson_extreme_bandwidths(kernel):
    # h = 1e300: every weight is 1 to double precision, m̂ = ȳ; h = 1e−300 (and the smallest subnormal)
    # at a point off the data: the nearest y (Gaussian) or the documented ValueError (compact window
    # empty); both used to raise OverflowError / ZeroDivisionError. Tolerance rtol 1e-12 (a mean of 4 values)
    X, y = np.array([0.0, 1.0, 2.0, 3.5]), np.array([1.0, -2.0, 4.0, 0.5])
    np.testing.assert_allclose(S.nadaraya_watson(X, y, [0.3, 1e9], bandwidth=1e300).mean, np.mean(y), rtol=1e-12)
    np.testing.assert_allclose(S.smoothing_weights(X, [0.3], 1e300, kernel), 0.25, rtol=1e-12)
    for h in (1e-300, 5e-324):
        if kernel == "gaussian":
            np.testing.assert_allclose(S.nadaraya_watson(X, y, [0.3, 2.9], bandwidth=h, loo=False).mean, [1.0, 0.5], rtol=1e-12)
        else:
            with pytest.raises(ValueError, match="no data point within bandwidth"):
                S.nadaraya_watson(X, y, [0.3], bandwidth=h, kernel=kernel, loo=False)


def test_kde_loo_and_nadaraya_watson_loo_at_extreme_bandwidths():
    # leave-one-out at h = 1e300: f̂₋ᵢ(Xᵢ) = φ_h(0) to double precision, so Σᵢ log f̂₋ᵢ = −n(½ log 2π + log h)
    # (rtol 1e-12); NW's leave-one-out prediction is the mean of the other y, checked against the loop
    X, y = np.array([0.0, 1.0, 2.0, 3.5]), np.array([1.0, -2.0, 4.0, 0.5])
    np.testing.assert_allclose(S.KDE(X, 1e300).loo_log_likelihood(), -4 * (0.5 * np.log(2 * np.pi) + np.log(1e300)), rtol=1e-12)
    loo_means = np.array([np.mean(np.delete(y, i)) for i in range(4)])
    np.testing.assert_allclose(S.nadaraya_watson(X, y, bandwidth=1e300).loo_residuals, y - loo_means, rtol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: S.KDE(X_OK, 0.1).sample(3, seed=-1),
        lambda: S.KDE(X_OK, 0.1).sample(3, seed=1.5),
        lambda: S.KDE(X_OK, 0.1).sample(3, seed="0"),
        lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=[0.1, 1.0], cv=3, seed=-2),
        lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=0.1, seed=2.5),
        lambda: S.kde_orders(seed=[1, 2], reps=2),
    ],
)
def test_bad_seed_is_a_value_error_naming_seed(call):
    # these used to escape as TypeError / ValueError from numpy's SeedSequence without naming the argument
    with pytest.raises(ValueError, match="seed must be None, a non-negative integer or a numpy.random.Generator"):
        call()


@pytest.mark.filterwarnings("ignore::bayeskern.smoothing.SmoothingWarning")
def test_generator_seeds_are_accepted_and_used():
    # a Generator is used as it is: its stream gives the same draws as the recipe written out here,
    # idx ~ integers(0, n), then Xᵢ + h·z (exact equality: the same generator calls in the same order)
    kde = S.KDE(X_OK, 0.1)
    draws = kde.sample(4, seed=np.random.default_rng(7))
    rng = np.random.default_rng(7)
    idx = rng.integers(0, len(X_OK), size=4)
    np.testing.assert_array_equal(draws, X_OK[idx][:, None] + 0.1 * rng.standard_normal((4, 1)))
    # k-fold kernel ridge: Generator(3) draws the same partition as seed=3
    a = S.kernel_ridge(RBF, X_OK, Y_OK, lam=[0.01, 0.1], cv=3, seed=3)
    b = S.kernel_ridge(RBF, X_OK, Y_OK, lam=[0.01, 0.1], cv=3, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a.cv_scores, b.cv_scores)


@pytest.mark.parametrize(
    "X",
    [np.full(3, 0.1), np.full(7, 0.7), np.full(5, 123.456), np.full((6, 2), -1e100), np.array([0.1, 0.1 + 2**-56, 0.1])],
)
def test_constant_X_has_no_spread(X):
    # np.var of a constant column is ~1e-17·|x| of round-off (a bandwidth of 1.7e-17 for np.full(3, 0.1)
    # came out before): the spread test is relative to the magnitude of X (σ̂ ≤ 8ε·max|X|)
    y = np.arange(float(len(X)))
    with pytest.raises(ValueError, match="X has no spread"):
        S.KDE(X)
    with pytest.raises(ValueError, match="X has no spread"):
        S.nadaraya_watson(X, y)
    with pytest.raises(ValueError, match="X has no spread"):
        S.default_bandwidth_grid(X)


def test_small_spread_far_from_zero_still_gets_a_rule():
    # a spread that is small against |X| (σ̂/|X| ≈ 6e−14) but not round-off: Scott's h = σ̂ n^{−1/5}, σ̂ from the
    # offsets X − 1e10 written out. rtol 1e-12: both sides take the variance of the same exact offsets
    # (subtracting a number within a factor 2 is exact), differing only in the order of summation
    X = np.array([1e10, 1e10 + 1e-3, 1e10])
    offsets = X - 1e10  # exact (Sterbenz)
    np.testing.assert_allclose(S.KDE(X).bandwidth, np.std(offsets, ddof=1) * 3 ** (-1 / 5), rtol=1e-12)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: S.KDE(X_OK + 1j), "X"),
        (lambda: S.KDE(X_OK, 0.1).logpdf([0.5 + 0.5j]), "Xnew"),
        (lambda: S.KDE(X_OK, 0.1 + 0j), "bandwidth"),
        (lambda: S.KDE(X_OK, [0.1, 0.2 + 1j]), "bandwidth"),
        (lambda: S.KDE(X_OK, "loo", bandwidth_grid=[0.1j, 0.2]), "bandwidth_grid"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK * 1j, bandwidth=0.1), "y"),
        (lambda: S.nadaraya_watson(X_OK, Y_OK, [1j], bandwidth=0.1), "Xnew"),
        (lambda: S.smoothing_weights(X_OK.astype(complex), [0.5], 0.1), "X"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=0.1 + 0j), "lam"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK + 0j, lam=0.1), "y"),
        (lambda: S.compare_smoothers(X_OK, Y_OK, bandwidth=0.2, lengthscale=0.2 + 0j), "lengthscale"),
        (lambda: S.kde_orders(x0=0.5 + 0j), "x0"),
    ],
)
def test_complex_input_is_a_value_error(call, name):
    # numpy would drop the imaginary part with a ComplexWarning; the smoothers refuse, naming the argument
    with pytest.raises(ValueError, match=rf"^{name} must be real"):
        call()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=1e301), r"lam must be at most 1e\+300"),
        (lambda: S.kernel_ridge(RBF, X_OK, Y_OK, lam=[0.1, 1e308]), r"lam must be at most 1e\+300"),
        pytest.param(lambda: S.kernel_ridge(RBF, X_OK, Y_OK * 1e200), "y is too large",
                     marks=pytest.mark.filterwarnings("ignore::bayeskern.smoothing.SmoothingWarning")),
        (lambda: S.nadaraya_watson(X_OK, Y_OK * 1e300, bandwidth=0.1), "y is too large"),
        (lambda: S.nadaraya_watson(np.r_[X_OK, 1e308], np.r_[Y_OK, 0.0], bandwidth=0.1), r"X has entries beyond"),
        (lambda: S.KDE(X_OK, 0.1).logpdf([-1e308]), r"Xnew has entries beyond"),
        (lambda: S.KDE(X_OK, 1e-310).pdf([0.0]), "bandwidth h = 1e-310 makes peaks taller"),
        (lambda: S.KDE(X_OK, 1e308).sample(50, seed=0), "bandwidth"),
        (lambda: S.KDE(X_OK, bandwidth=[1e-300, 1e-290]), "bandwidth: at every candidate"),
        (lambda: S.kde_orders(hs_bias=[1e-200, 1e-190], reps=2), "hs_bias"),
        (lambda: S.kde_orders(hs_var=[1e-200, 1e-190], reps=2, ns=[10, 20], n_fixed=10), "hs_var"),
        (lambda: S.kde_orders(ns=[10.5, 20], reps=2), "ns must be"),
    ],
)
def test_out_of_range_values_name_the_argument(call, match):
    # where no float64 result is correct, or an intermediate would overflow, a ValueError names the
    # argument and its usable range instead of inf, NaN or a raw OverflowError
    with pytest.raises(ValueError, match=match):
        call()


# the property: on random finite data every smoother either returns finite numbers or raises a ValueError
# naming an argument; never NaN, ±inf, or another exception
ARGUMENT = re.compile(r"\b(X|y|Xnew|bandwidth|bandwidth_grid|lam|kernel|lengthscale)\b")
finite_coord = st.floats(-1e150, 1e150, allow_nan=False, allow_infinity=False)
log_bandwidth = st.floats(-100.0, 100.0)


def finite_or_named(fn):
    """fn()'s result, or None if it raised a ValueError that names an argument (any other outcome fails)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning (overflow, invalid) may escape, but
            warnings.simplefilter("ignore", S.SmoothingWarning)  # a grid-edge choice is legitimate here,
            warnings.filterwarnings("ignore", "K \\+ lam I is not numerically positive definite")  # and so is reported jitter
            return fn()
    except ValueError as err:
        assert ARGUMENT.search(str(err)), str(err)
        return None


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(2, 6), d=st.integers(1, 2), m=st.integers(1, 4), log_h=log_bandwidth, data=st.data(),
)
def test_smoothers_finite_or_named_value_error(n, d, m, log_h, data):
    X = np.array(data.draw(st.lists(finite_coord, min_size=n * d, max_size=n * d))).reshape(n, d)
    Xnew = np.array(data.draw(st.lists(finite_coord, min_size=m * d, max_size=m * d))).reshape(m, d)
    y = np.array(data.draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=n, max_size=n)))
    h = 10.0**log_h
    for kernel in S.SMOOTHING_KERNELS:  # NW mean within [min y, max y] (a weighted mean of the yᵢ)
        res = finite_or_named(lambda: S.nadaraya_watson(X, y, Xnew, bandwidth=h, kernel=kernel))
        if res is not None:
            assert np.all((res.mean >= y.min()) & (res.mean <= y.max())), (res.mean, y)
            assert res.loo_score is None or res.loo_score == np.inf or np.isfinite(res.loo_score)
        W = finite_or_named(lambda: S.smoothing_weights(X, Xnew, h, kernel))
        if W is not None:
            assert np.all((W >= 0) & (W <= 1)) and np.allclose(W.sum(axis=1), 1.0, rtol=1e-12)  # rows sum to 1 to round-off
    res = finite_or_named(lambda: S.nadaraya_watson(X, y, Xnew))  # h by leave-one-out on the default grid
    if res is not None:
        assert np.all((res.mean >= y.min()) & (res.mean <= y.max())) and np.isfinite(res.loo_score)
    for bandwidth in (h, None):
        kde = finite_or_named(lambda: S.KDE(X, bandwidth))
        if kde is None:
            continue
        for method in (kde.logpdf, kde.pdf, lambda Z: np.array([kde.loo_log_likelihood()])):
            out = finite_or_named(lambda: method(Xnew))
            assert out is None or np.all(np.isfinite(out))
    kr = finite_or_named(lambda: S.kernel_ridge(bk.kernels.RBF(lengthscale=h), X, y, lam=h, Xnew=Xnew))
    assert kr is None or (np.all(np.isfinite(kr.mean)) and np.isfinite(kr.rkhs_norm))


def test_nadaraya_watson_loo_mse_is_the_name_as_in_kernel_ridge(sinusoid):
    """One name per concept: the leave-one-out mean squared error is `loo_mse` (kernel ridge's name); `loo_score` is its alias."""
    X, y, Xs = sinusoid
    res = S.nadaraya_watson(X, y, Xs, bandwidth=0.1, loo=True)
    np.testing.assert_allclose(res.loo_mse, nw_loo_reference(X, y, 0.1), rtol=1e-10)  # (1/n)Σᵢ (yᵢ − m̂₋ᵢ(xᵢ))²
    assert res.loo_score == res.loo_mse
    d = res.to_dict()
    assert d["loo_mse"] == res.loo_mse and "loo_score" not in d


def test_a_bandwidth_at_a_flat_grid_edge_is_not_asked_to_widen_the_grid():
    """The README's data (25 evenly spaced points): Nadaraya–Watson's leave-one-out error falls toward its h → 0 limit
    (each point predicted by its two neighbours' average), by 3e-14 relative between the two smallest candidates. Widening
    the grid cannot choose differently: the warning says the data do not pin h down. Where the error still falls at the
    grid's edge (candidates from 0.05 up), it asks for a wider grid."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with pytest.warns(S.SmoothingWarning, match="lower end of the candidate grid: the score no longer changes") as caught:
        flat = S.nadaraya_watson(X, t)
    assert "widen" not in str(caught[0].message)
    scores = flat.loo_scores
    assert flat.bandwidth == flat.bandwidth_grid[0] and abs(scores[1] / scores[0] - 1) <= 1e-6  # the flat limit, measured
    with pytest.warns(S.SmoothingWarning, match="lower end of the candidate grid: widen it"):
        falling = S.nadaraya_watson(X, t, bandwidth=np.geomspace(0.05, 0.5, 8))
    assert falling.loo_scores[1] / falling.loo_scores[0] - 1 > 1e-3  # still falling toward the edge


def test_the_grid_edge_is_the_smallest_or_largest_value_in_any_order():
    """A review passed unsorted grids: the warning went by position (first or last entry), so the largest value chosen
    from the middle went unwarned and an interior optimum given first was told to widen the grid. The same grids, sorted
    and shuffled, now give the same warnings (Nadaraya–Watson on pure noise and on a sine; kernel ridge on noise)."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 50)
    noise, sine = rng.standard_normal(50), np.sin(6 * x) + 0.3 * rng.standard_normal(50)

    def said(fit, *args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            chosen = fit(*args, **kwargs)
        return chosen, [str(w.message) for w in caught if issubclass(w.category, S.SmoothingWarning)]

    for grid in ([0.05, 0.1, 10.0], [0.05, 10.0, 0.1], [10.0, 0.05, 0.1]):
        fit, messages = said(S.nadaraya_watson, x, noise, bandwidth=grid)
        assert fit.bandwidth == 10.0 and len(messages) == 1 and "10 is at the upper end" in messages[0], (grid, messages)
    for grid in ([0.005, 0.06, 1.0], [0.06, 0.005, 1.0], [1.0, 0.005, 0.06]):
        fit, messages = said(S.nadaraya_watson, x, sine, bandwidth=grid)
        assert fit.bandwidth == 0.06 and messages == [], (grid, messages)
    for grid in ([0.01, 1.0, 1e4], [0.01, 1e4, 1.0]):
        fit, messages = said(S.kernel_ridge, bk.kernels.RBF(0.15), x, noise, lam=grid)
        assert fit.lam == 1e4 and len(messages) == 1 and "upper end" in messages[0], (grid, messages)
    # a candidate given twice is one value: the score's change is read against the next distinct one (a review: "the
    # score no longer changes there … give a value" where it fell steeply)
    for grid in ([10.0, 10.0, 0.05, 0.1], [0.05, 10.0, 0.1, 10.0]):
        fit, messages = said(S.nadaraya_watson, x, noise, bandwidth=grid)
        assert fit.bandwidth == 10.0 and len(messages) == 1 and "upper end of the candidate grid: widen it" in messages[0], (grid, messages)


def test_the_kde_hint_about_duplicated_points_is_given_at_the_lower_end_only():
    """Duplicated points push the leave-one-out bandwidth to 0, not to the largest candidate."""
    data = np.random.default_rng(0).standard_normal(200)
    with pytest.warns(S.SmoothingWarning, match="upper end") as caught:
        S.KDE(data, bandwidth=[0.01, 0.02, 0.05])
    assert "duplicated" not in str(caught[0].message)


def test_compare_smoothers_refuses_a_bad_lengthscale_before_fitting():
    """A review: lengthscale = −1 was refused only after Nadaraya–Watson had run (and warned about its bandwidth)."""
    x = np.linspace(0, 1, 20)
    y = np.sin(6 * x)  # noise-free: NW's leave-one-out bandwidth would go to the grid's lower edge and warn
    for bad in (-1.0, [0.1, -1.0]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="lengthscale"):
                S.compare_smoothers(x, y, lengthscale=bad)
        assert caught == [], [str(w.message) for w in caught]
