"""The numpy linear algebra (bayeskern._linalg): round-off of a PSD matrix measured on the right scale."""

import sys

import numpy as np
import pytest

import bayeskern as bk
from bayeskern import kernels as K


# -- the predictive step of MCMC with a constant y ---------------------------------------------------------------------
def test_predictive_draw_accepts_round_off_of_a_pinned_down_posterior():
    """A constant t pins f down: K** − kᵀC⁻¹k is round-off of either sign (λmin −9e-16 against λmax 7e-9).

    Before, psd_eigh measured round-off against λmax of that difference and refused it, so
    bayeskern.fit.mcmc with a constant y aborted after sampling. The scale of the round-off is the
    prior variance max k(x, x) = 4 the difference was computed from; a kernel that is really not PSD
    is still refused.
    """
    from bayeskern._linalg import psd_eigh

    t = np.full(8, 2.0)
    X8, Xn = np.linspace(0, 1, 8)[:, None], np.linspace(0, 1, 5)[:, None]
    kernel = 4.0 * K.RBF(1e3)
    conditioned = bk.gp.condition(kernel, X8, t, sigma=1e-4)
    post = conditioned.posterior(Xn)
    assert np.linalg.eigvalsh(post.cov)[0] < 0  # the round-off this test is about
    with pytest.raises(ValueError, match="not positive semi-definite"):
        psd_eigh(post.cov, "the predictive covariance")  # the old scale: λmax of the difference
    assert conditioned.prior_variance(Xn) == pytest.approx(4.0, rel=1e-12)  # k(x, x) = 4 for the scaled RBF
    f = conditioned.sample(Xn, 1, np.random.default_rng(0))[0]
    # the draw is the mean up to the posterior sd (≤ √7e-9 ≈ 1e-4): t = 2 everywhere
    np.testing.assert_allclose(f, 2.0, atol=1e-3)
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and −1: not PSD at any scale
    with pytest.raises(ValueError, match="not positive semi-definite"):
        psd_eigh(bad, "a matrix", scale=4.0)



# -- factors for draws: the pivoted Cholesky, and the eigendecomposition where it cannot vouch for the matrix --------------
def test_psd_factor_of_a_rank_deficient_matrix_is_its_pivoted_cholesky():
    """A = B Bᵀ of rank 60 (121 × 121): F Fᵀ = A within the round-off bound the factor is accepted on, c·n·ε·max Aᵢᵢ,
    with 60 columns — the pivoted Cholesky's rank (the eigendecomposition's U√Λ would have 121)."""
    from bayeskern._linalg import psd_factor, psd_tolerance

    B = np.random.default_rng(3).standard_normal((121, 60))
    A = B @ B.T
    F = psd_factor(A)
    assert F.shape == (121, 60)
    np.testing.assert_allclose(F @ F.T, A, rtol=0, atol=psd_tolerance(np.diag(A)))
    full = np.cov(np.random.default_rng(4).standard_normal((8, 20)))  # full rank: 8 columns
    np.testing.assert_allclose(psd_factor(full) @ psd_factor(full).T, full, rtol=0, atol=psd_tolerance(np.diag(full)))
    assert psd_factor(np.zeros((3, 3))).shape == (3, 0)  # rank 0: every draw is the mean


def test_psd_factor_hands_what_its_test_cannot_vouch_for_to_the_eigendecomposition():
    """The all-ones matrix J (n = 50) has λmax = n but Jᵢᵢ = 1, so the factor's own bound c·n·ε·max Jᵢᵢ is n times
    psd_eigh's c·n·ε·λmax. With an eigenvalue −(c·n·ε·λmax)/2 added along a direction ⊥ 1, the pivoted Cholesky's
    residual (≥ that eigenvalue) fails its bound; psd_eigh counts it as round-off and clips it: F = U√Λ, whose F Fᵀ
    is J (the clipped eigenvalue was the only change). Not PSD beyond round-off is refused as before."""
    from bayeskern._linalg import psd_eigh, psd_factor, psd_tolerance

    n = 50
    J = np.ones((n, n))
    u = np.zeros(n)
    u[0], u[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)  # ⊥ the ones vector
    negative = psd_tolerance(np.ones(n), scale=float(n)) / 2
    A = J - negative * np.outer(u, u)
    F = psd_factor(A)
    lam, U = psd_eigh(A)
    np.testing.assert_array_equal(F, U * np.sqrt(lam))  # the eigendecomposition's factor, as it is
    np.testing.assert_allclose(F @ F.T, J, rtol=0, atol=1e-12)  # the clipped eigenvalue is gone: J, to round-off of n
    with pytest.raises(ValueError, match="not positive semi-definite"):
        psd_factor(J - 1e-6 * n * np.outer(u, u), "a matrix")  # −5e-5: far beyond round-off
    with pytest.raises(ValueError, match="NaN"):
        psd_factor(np.where(np.eye(3) > 0, 1.0, np.nan), "a matrix")
    upper_nan = np.eye(4)
    upper_nan[0, 3] = np.nan  # in the triangle pstrf does not read
    with pytest.raises(ValueError, match="NaN"):
        psd_factor(upper_nan, "a matrix")
    with pytest.raises(ValueError, match="not positive semi-definite"):
        psd_factor(np.diag([1e-170, -1e-170]), "a matrix")  # tiny: squares of the residual would underflow to 0
    with pytest.raises(ValueError, match="square"):
        psd_factor(np.ones((3, 2)), "a matrix")


def test_minus_gram_is_c_minus_vtv_and_exactly_symmetric():
    """C − VᵀV by one syrk: numpy's C − V.T @ V to round-off (each entry a sum of 40 products, |entries| ≤ ~60: 1e-12
    absolute is ~12 × ε·60·√40 of slack), and exactly symmetric, so a predictive covariance is too."""
    from bayeskern._linalg import minus_gram

    rng = np.random.default_rng(5)
    V, B = rng.standard_normal((40, 30)), rng.standard_normal((30, 30))
    C = B @ B.T
    got = minus_gram(C, V)
    np.testing.assert_allclose(got, C - V.T @ V, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got, got.T)
    X8, Xn = np.linspace(0, 1, 8)[:, None], np.linspace(-0.2, 1.2, 13)[:, None]
    cov = bk.gp.condition(K.RBF(3.0), X8, np.sin(4 * X8[:, 0]), sigma=0.1).predict(Xn, full_cov=True).cov
    np.testing.assert_array_equal(cov, cov.T)


def test_the_draw_loop_puts_numpys_own_blas_on_one_thread_and_leaves_scipys():
    """`draw_quantities` runs its loop with numpy's own OpenBLAS (its wheel's, apart from SciPy's) on one thread and
    SciPy's as it was, and restores numpy's after the last of overlapping loops; with numpy sharing SciPy's BLAS nothing
    would be selected."""
    import scipy.linalg  # noqa: F401 — SciPy's BLAS loaded, as in a fit
    from threadpoolctl import threadpool_info, threadpool_limits

    from bayeskern._blas import numpy_blas_on_one_thread as _numpy_blas_on_one_thread

    def threads():
        return {("numpy" if "numpy" in lib["filepath"] else "scipy" if "scipy.libs" in lib["filepath"] else lib["filepath"]): lib["num_threads"]
                for lib in threadpool_info() if lib["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"):  # (the suite gives each xdist worker one BLAS thread)
        before = threads()
        if before.get("numpy", 1) < 2 or before.get("scipy", 1) < 2:
            pytest.skip("numpy and SciPy share one BLAS here, or it runs on one thread: no pool of numpy's own to limit")
        with _numpy_blas_on_one_thread():
            inside = threads()
        assert inside["numpy"] == 1 and inside["scipy"] == before["scipy"] == 2
        assert threads() == before
        a, b = _numpy_blas_on_one_thread(), _numpy_blas_on_one_thread()  # two loops overlapping, as in two threads
        a.__enter__()
        b.__enter__()
        a.__exit__(None, None, None)
        assert threads()["numpy"] == 1  # b still runs
        b.__exit__(None, None, None)
        assert threads() == before  # restored once the last closed, not left at one thread
        # a draws' loop (numpy's pool) and a small fit (every pool) overlapping in two threads, closed in the other order:
        # every pool stays on one thread while the fit runs, and all are restored at the end (they leaked before)
        from bayeskern._blas import blas_for_size

        loop, fit = _numpy_blas_on_one_thread(), blas_for_size(10)
        loop.__enter__()
        fit.__enter__()
        loop.__exit__(None, None, None)
        assert threads()["numpy"] == threads()["scipy"] == 1
        fit.__exit__(None, None, None)
        assert threads() == before


def test_a_small_problem_runs_every_blas_pool_on_one_thread(monkeypatch):
    """Up to SMALL_PROBLEM_MAX_N rows every BLAS pool runs on one thread (a second gains nothing there, and beside busy
    cores it waits at every small call: the PRML spec's draw loop 23–30 s instead of 3–5 s); above it nothing changes.
    Empirical Bayes and the MCMC draws' loop on 25 points run inside that limit."""
    import scipy.linalg  # noqa: F401 — SciPy's BLAS loaded, as in a fit
    import pymc as pm
    from threadpoolctl import threadpool_info, threadpool_limits

    import bayeskern as bk
    from bayeskern._blas import SMALL_PROBLEM_MAX_N, blas_for_size
    from bayeskern.fit._plug_in import PlugIn

    def threads():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"):  # (the suite gives each xdist worker one BLAS thread)
        before = threads()
        if max(before.values(), default=1) < 2:
            pytest.skip("no BLAS pool runs on two threads here")
        with blas_for_size(SMALL_PROBLEM_MAX_N):
            assert set(threads().values()) == {1}
        assert threads() == before
        with blas_for_size(SMALL_PROBLEM_MAX_N + 1):
            assert threads() == before
        eb_module = sys.modules["bayeskern.fit.empirical_bayes"]  # (bayeskern.fit.empirical_bayes is also the function's name)
        seen = []
        maximise, condition = eb_module._maximise, PlugIn.condition
        monkeypatch.setattr(eb_module, "_maximise", lambda *a, **k: (seen.append(threads()), maximise(*a, **k))[1])
        X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
        with pm.Model() as model:
            bk.gp.marginal_likelihood("y", X, t, bk.kernels.RBF(pm.HalfNormal("ell", 1.0)), pm.HalfNormal("s", 1.0))
        bk.fit.empirical_bayes(model, restarts=1, seed=0)
        assert len(seen) == 1 and set(seen[0].values()) == {1}  # the optimiser's run
        monkeypatch.setattr(PlugIn, "condition", lambda self, *a: (seen.append(threads()), condition(self, *a))[1])
        bk.fit.mcmc(model, draws=5, tune=5, chains=1, seed=0, sampler="pymc", Xnew=X[:3], compute_convergence_checks=False)
        assert len(seen) == 1 + 5 and all(set(pools.values()) == {1} for pools in seen[1:])  # each draw's conditioning
        assert threads() == before


def test_the_psd_check_by_cholesky_agrees_with_the_eigenvalues():
    """`check_psd_matrix` settles a PSD matrix by one Cholesky factor, shifted by the round-off floor at max|Aᵢᵢ| ≤ max|λ|:
    never more lenient than `psd_eigh` (a review found the first version, at ‖A‖_F, accepting λmin = −30·floor). A = QΛQᵀ
    with Λ = 1 but λmin = −m·floor: both refuse from m = 2 on and both accept m = 0.5."""
    from bayeskern._linalg import EPS, PSD_ROUNDOFF, check_psd_matrix, psd_eigh

    n = 400
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((n, n)))[0]
    floor = PSD_ROUNDOFF * n * EPS * 1.0
    for m, psd in ((0.5, True), (2.0, False), (30.0, False)):
        lam = np.ones(n)
        lam[0] = -m * floor
        A = (Q * lam) @ Q.T
        A = (A + A.T) / 2
        for check in (check_psd_matrix, psd_eigh):
            if psd:
                check(A, "A")
            else:
                with pytest.raises(ValueError, match="A is not positive semi-definite"):
                    check(A, "A")


def test_a_small_fit_gives_the_same_numbers_whatever_blas_threads_the_caller_has():
    """Every evaluation of a small problem's fit runs on one BLAS thread, the first (the check of the initial point,
    remembered by the objective) and the Laplace approximation's among them: a caller on two threads (this process) and
    one on one (a Dask worker) get the same optimum and Laplace sd to the bit. The first evaluation, once made outside
    that rule, moved this Matérn-5/2 fit's optimum by ~1e-9 relative (a user trial: `[cv] refit = false`, `--workers 2`)."""
    import pymc as pm
    from threadpoolctl import threadpool_info, threadpool_limits

    X, t = bk.datasets.sinusoid(40, 0.2, 1)

    def fit(threads: int):
        with threadpool_limits(limits=threads, user_api="blas"):  # (the suite gives each xdist worker one BLAS thread)
            if threads > 1 and max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas") < 2:
                pytest.skip("no BLAS pool runs on two threads here")
            with pm.Model() as model:
                eta, ell, noise = pm.HalfNormal("eta", 2.0), pm.HalfNormal("ell", 1.0), pm.HalfNormal("noise", 0.5)
                bk.gp.marginal_likelihood("y", X, t, eta * K.Matern52(ell), noise)
            eb = bk.fit.empirical_bayes(model, restarts=3, seed=3)
            return eb.params, eb.log_marginal_likelihood, eb.laplace.sd

    assert fit(2) == fit(1)  # float for float, exactly
