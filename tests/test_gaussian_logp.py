"""The marginal-likelihood Op (bayeskern._gaussian_logp): value and gradients against scipy and central differences, failed factorisations."""

import warnings

import numpy as np
import pytensor.tensor as pt
import pytest

import reference as ref


@pytest.mark.parametrize("n", [30, 150])
def test_gaussian_logp_op_against_scipy_on_both_backends(n):
    """The Op behind marginal_likelihood: value = scipy's MVN logpdf, −inf if not PD; it reads K's lower
    triangle only, so its ∂/∂K is 2G below the diagonal, G on it and 0 above, G = ½(ααᵀ − C⁻¹)."""
    import pytensor
    import pytensor.tensor as pt
    import scipy.stats

    from bayeskern._gaussian_logp import GaussianLogp

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (n, 1))
    t = rng.standard_normal(n)
    K = ref.rbf(X, X, 0.3)
    C = K + 0.1 * np.eye(n)
    C_inv = np.linalg.inv(C)
    alpha = C_inv @ t
    G = 0.5 * (np.outer(alpha, alpha) - C_inv)
    d_K_expected = np.tril(2 * G, -1) + np.diag(np.diag(G))
    K_lower = np.tril(K) + np.triu(rng.standard_normal((n, n)), 1)  # garbage above: only the lower triangle is read
    Ks, ts, s2 = pt.matrix("K"), pt.vector("t"), pt.scalar("noise_var")
    for jitter in (False, True):
        outputs = list(GaussianLogp(jitter)(Ks, ts, s2))
        for mode in ("NUMBA", "FAST_COMPILE"):  # Numba-compiled, and Python's perform
            f = pytensor.function([Ks, ts, s2], outputs, mode=mode)
            logp, d_K, d_t, used = f(K_lower, t, 0.1)
            # cond(C) ≤ ~1e4: agreement to ~1e-12 expected; 1e-10 relative
            np.testing.assert_allclose(logp, scipy.stats.multivariate_normal(np.zeros(n), C).logpdf(t), rtol=1e-10)
            np.testing.assert_allclose(d_K, d_K_expected, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(d_t, -alpha, rtol=1e-9)
            assert used == 0.0
            singular = ref.rbf(X, X, 0.3)  # rank-deficient in floating point
            logp_bad, _, _, used_bad = f(singular, t, 0.0)
            if jitter:
                assert np.isfinite(logp_bad) and used_bad > 0
            else:
                assert logp_bad == -np.inf and used_bad == 0.0
    # the partial derivatives are exact for the entries read: central differences on K_lower
    f = pytensor.function([Ks, ts, s2], GaussianLogp(False)(Ks, ts, s2))
    h = 1e-6
    for i, j in [(3, 0), (0, 3), (5, 5), (n - 1, 7)]:
        E = np.zeros((n, n))
        E[i, j] = h
        numeric = (f(K_lower + E, t, 0.1)[0] - f(K_lower - E, t, 0.1)[0]) / (2 * h)
        np.testing.assert_allclose(numeric, d_K_expected[i, j], rtol=1e-5, atol=1e-8)  # O(h²) truncation


def test_a_matrix_singular_to_round_off_is_not_factorised_silently():
    """LAPACK's potrf accepts this K + σ²I (σ = 2e-8, noise-free RBF Gram) although its smallest eigenvalues
    are negative: its log-determinant would be noise. Both Cholesky paths must treat it as failed — the
    numpy one adds jitter (with a warning), the Op without jitter gives −inf."""
    import scipy.linalg

    from bayeskern._gaussian_logp import GaussianLogp
    from bayeskern._linalg import JITTER_STEPS, cholesky

    X = np.linspace(0, 1, 40)[:, None]
    C = 0.39 * ref.rbf(X, X, 0.34) + (2e-8) ** 2 * np.eye(40)
    scipy.linalg.cholesky(C, lower=True)  # no LinAlgError: the plain factorisation "succeeds"
    assert np.linalg.eigvalsh(C)[0] < 0  # but C is not positive definite in floating point
    with pytest.warns(RuntimeWarning, match="jitter"):
        _, jitter = cholesky(C, "C")
    assert jitter in [step * np.mean(np.diag(C)) for step in JITTER_STEPS]
    t = np.sin(2 * np.pi * X[:, 0])
    plain = GaussianLogp(jitter=False)(pt.as_tensor(C), pt.as_tensor(t), 0.0)
    assert plain[0].eval() == -np.inf
    escalating = GaussianLogp(jitter=True)(pt.as_tensor(C), pt.as_tensor(t), 0.0)
    assert np.isfinite(escalating[0].eval()) and escalating[3].eval() > 0



@pytest.mark.parametrize("n", [7, 300])
def test_numba_and_scipy_implementations_make_the_same_lapack_calls(n):
    """Both factorise C's lower triangle in C order as LAPACK's upper triangle ("U") in place, solve and invert
    from that factor: the gradients are the same to the bit; log p differs at most by the order of summing
    log Uᵢᵢ (numpy's pairwise sum vs a loop: a few ulps)."""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy
    from bayeskern._gaussian_logp_numba import _logp_and_gradients

    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    K, t = A @ A.T / n, rng.standard_normal(n)
    numba_out = _logp_and_gradients(K, t, 0.1, True)
    scipy_out = _logp_and_gradients_scipy(K, t, 0.1, True)
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    np.testing.assert_array_equal(scipy_out[2], numba_out[2])
    assert scipy_out[3] == numba_out[3] == 0.0
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-14)


def test_numba_and_scipy_implementations_agree_where_jitter_is_needed():
    """The Op's two implementations (Numba for compiled graphs, SciPy for Python's perform) choose the same
    jitter and give the same value and gradient, including ∂jitter/∂C. K has one eigenvalue −3e-6 (its
    mean diagonal is 1): the jitter ladder must climb to 1e-5, where cond(C + jitter·I) ≈ 1.4e5.
    (Where rcond(C) is within round-off of the n·ε threshold, the two estimates may decide differently.)"""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy
    from bayeskern._gaussian_logp_numba import _logp_and_gradients

    n = 30
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = np.linspace(2.0, 0.1, n)
    eigenvalues[-1] = -3e-6
    K = (Q * eigenvalues) @ Q.T
    K *= n / np.trace(K)  # mean diagonal 1
    t = rng.standard_normal(n)
    numba_out = _logp_and_gradients(K, t, 0.0, True)
    scipy_out = _logp_and_gradients_scipy(K, t, 0.0, True)
    # the same step of the same ladder (mean(diag C) summed in another order: last bits)
    assert numba_out[3] == pytest.approx(1e-5, rel=1e-12) and scipy_out[3] == pytest.approx(numba_out[3], rel=1e-12)
    # cond ≈ 1.4e5: round-off ~cond·ε ≈ 3e-11 relative; bars 1e-9
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-9)
    for a, b in zip(scipy_out[1:3], numba_out[1:3], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * np.abs(b).max())
    assert _logp_and_gradients_scipy(K, t, 0.0, False)[0] == -np.inf == _logp_and_gradients(K, t, 0.0, False)[0]


def test_the_inverse_proves_only_what_numpy_confirms_and_proves_a_smooth_kernel_with_little_noise():
    """`_proven_well_conditioned(C⁻¹, max Cᵢᵢ, ‖C‖₁)` says yes only where 1/cond₁(C) from numpy's full inverse exceeds
    16·n·ε, on random positive definite matrices of every condition from 1 to 1e16. It says yes for the Gram of a smooth
    kernel with little noise (RBF, ℓ = 0.2, σ² = 1e-8, n = 200: 1/cond₁ ~100 × that) where n · max (C⁻¹)ᵢᵢ alone is too
    loose a bound on ‖C⁻¹‖₁ (there it takes ‖C⁻¹‖₁ itself). A NaN on the diagonal proves nothing. ‖C‖₁ is asked for
    only where the bounds from the two diagonals prove nothing."""
    from bayeskern._gaussian_logp import DIAGONAL_BOUND, _proven_well_conditioned

    eps = np.finfo(float).eps
    rng = np.random.default_rng(7)
    asked, proven_by_diagonals = [], 0
    for _ in range(300):
        n = int(rng.integers(1, 40))
        Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        C = (Q * np.logspace(0, -rng.uniform(0, 16), n)) @ Q.T
        C_inv = np.linalg.inv(C)
        norm1 = np.linalg.norm(C, 1)
        assert norm1 <= n * DIAGONAL_BOUND * C.diagonal().max()  # the bound of DIAGONAL_BOUND (|Cᵢⱼ| ≤ √(CᵢᵢCⱼⱼ))
        before = len(asked)
        if _proven_well_conditioned(np.tril(C_inv), C.diagonal().max(), lambda norm1=norm1: asked.append(n) or norm1):
            assert 1.0 / (norm1 * np.linalg.norm(C_inv, 1)) > 16 * n * eps
            proven_by_diagonals += len(asked) == before
    assert proven_by_diagonals > 50 and asked  # both ways taken
    x = np.linspace(0, 1, 200)
    C = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.2**2) + 1e-8 * np.eye(200)
    C_inv, norm1 = np.linalg.inv(C), np.linalg.norm(C, 1)
    assert norm1 * 200 * np.diagonal(C_inv).max() * 16 * 200 * eps > 1  # the O(n) bound proves nothing here
    assert 1.0 / (norm1 * np.linalg.norm(C_inv, 1)) > 16 * 200 * eps  # but C is well enough conditioned
    assert _proven_well_conditioned(np.tril(C_inv), 1.0 + 1e-8, lambda: norm1)
    assert not _proven_well_conditioned(np.array([[1.0, 0.0], [0.0, np.nan]]), 1.0, lambda: 1.0)
    assert not _proven_well_conditioned(np.eye(2), np.nan, lambda: np.nan)


def test_a_well_conditioned_fit_computes_no_one_norm_of_c(monkeypatch):
    """At n = 300 with noise 0.1 (cond₁ ≈ 1e3), max Cᵢᵢ and max (C⁻¹)ᵢᵢ prove C well conditioned: no O(n²) ‖C‖₁ is
    computed (it was, at every evaluation), and the result is the same to the bit as where ‖C‖₁ is computed first."""
    import bayeskern._gaussian_logp as op

    x = np.linspace(0, 10, 300)
    K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
    t = np.sin(x)
    calls, norm = [], op._norm1_of_lower
    monkeypatch.setattr(op, "_norm1_of_lower", lambda *a: calls.append(1) or norm(*a))
    result = op._logp_and_gradients_scipy(K, t, 0.1, True)
    assert calls == []
    monkeypatch.setattr(op, "DIAGONAL_BOUND", np.inf)  # the diagonals prove nothing: ‖C‖₁ as before
    again = op._logp_and_gradients_scipy(K, t, 0.1, True)
    assert calls == [1]
    for a, b in zip(result, again, strict=True):
        np.testing.assert_array_equal(a, b)


def _counting_pocon(monkeypatch):
    """A list that grows by one entry (the estimate) per pocon call of the Op's SciPy implementation."""
    import bayeskern._gaussian_logp as op_module

    calls, lapack = [], op_module.lapack

    class Counting:
        def __getattr__(self, name):
            return getattr(lapack, name)

        @staticmethod
        def dpocon(*args, **kwargs):
            out = lapack.dpocon(*args, **kwargs)
            calls.append(out[0])
            return out

    monkeypatch.setattr(op_module, "lapack", Counting())
    return calls


@pytest.mark.parametrize("smallest, asked, jittered", [(1e-3, False, False), (3e-13, True, False), (1e-15, True, True)])
def test_the_condition_estimate_is_asked_only_where_the_inverse_does_not_settle_it(monkeypatch, smallest, asked, jittered):
    """The rule is pocon's: C is singular to round-off where its estimate of 1/cond₁(C) is ≤ n·ε. Where C⁻¹ (computed
    anyway, for the gradient) proves 1/cond₁ > 16·n·ε the estimate is not asked; else it is, and decides as before.
    n = 30, eigenvalues from 1 down to `smallest`: 1e-3 well conditioned (not asked); 3e-13 asked and passed, its
    estimate ~14 × n·ε (no jitter); 1e-15 asked and failed, its estimate ~n·ε/20 (jitter: C + jitter·I is then
    proven). In each case the decision is the package's rule as `_linalg.exact_cholesky` implements it apart (SciPy's
    lower factor, pocon on it), and the Numba implementation (whose fallback, like SciPy's, factorises C again for
    pocon) decides alike: without jitter, the same numbers to the bit."""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy
    from bayeskern._gaussian_logp_numba import _logp_and_gradients
    from bayeskern._linalg import exact_cholesky

    n = 30
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    K = (Q * np.logspace(0, np.log10(smallest), n)) @ Q.T
    K = np.tril(K) + np.tril(K, -1).T  # symmetric to the bit: numpy's reference below reads both triangles
    t = rng.standard_normal(n)
    calls = _counting_pocon(monkeypatch)
    scipy_out = _logp_and_gradients_scipy(K, t, 0.0, True)
    assert bool(calls) is asked
    assert bool(scipy_out[3] > 0.0) is jittered is (exact_cholesky(K) is None)
    if asked:  # the first estimate decided
        assert calls[0] <= n * np.finfo(float).eps if jittered else calls[0] > n * np.finfo(float).eps
    numba_out = _logp_and_gradients(K, t, 0.0, True)
    if jittered:  # the same step of the ladder; its size is mean(diag C) summed in another order: last bits
        assert numba_out[3] == pytest.approx(scipy_out[3], rel=1e-12) and numba_out[3] > 0.0
        return
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    np.testing.assert_array_equal(scipy_out[2], numba_out[2])
    assert scipy_out[3] == numba_out[3] == 0.0
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-14)  # Σ log Uᵢᵢ summed in another order
    # the value itself, against numpy from the formula (slogdet, solve): cond up to 3e12, round-off ~cond·ε relative
    sign, log_det = np.linalg.slogdet(K)
    expected = -0.5 * t @ np.linalg.solve(K, t) - 0.5 * log_det - 0.5 * n * np.log(2 * np.pi)
    assert sign > 0 and scipy_out[0] == pytest.approx(expected, rel=1e-2 if smallest < 1e-6 else 1e-12)


def test_a_smooth_kernel_with_little_noise_is_settled_without_the_condition_estimate(monkeypatch):
    """An RBF Gram (ℓ = 0.2, n = 200) plus σ² = 1e-8: C⁻¹ proves it well enough conditioned through ‖C⁻¹‖₁ (the diagonal's
    bound is ~60× too loose there), so pocon is not asked, nor — in the Numba implementation — C factorised twice;
    the two implementations give the same gradients to the bit and no jitter."""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy
    from bayeskern._gaussian_logp_numba import _logp_and_gradients

    x = np.linspace(0, 1, 200)
    K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.2**2)
    t = np.sin(2 * np.pi * x)
    calls = _counting_pocon(monkeypatch)
    scipy_out = _logp_and_gradients_scipy(K, t, 1e-8, True)
    numba_out = _logp_and_gradients(K, t, 1e-8, True)
    assert calls == [] and scipy_out[3] == numba_out[3] == 0.0
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    np.testing.assert_array_equal(scipy_out[2], numba_out[2])


@pytest.mark.parametrize("margin, potrf_calls", [(64.0, 1), (0.0, 2)])
def test_u_is_kept_for_pocon_where_a_lower_bound_of_the_condition_nears_the_limit_else_c_is_factorised_again(monkeypatch, margin, potrf_calls):
    """pocon reads U, which potri overwrites. ‖C‖₁ / min Uᵢᵢ² ≤ cond₁(C) (every pivot Uᵢᵢ² ≥ λ_min(C)): where it comes
    within POCON_COPY_MARGIN of what C⁻¹ can prove, U is copied first (one potrf); with the margin at 0 the copy is never
    made, and C is factorised again for pocon (two potrf). The same estimate, and the same numbers to the bit, either
    way; the bound itself holds against numpy's cond₁."""
    import bayeskern._gaussian_logp as op_module

    n = 30
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    K = (Q * np.logspace(0, np.log10(3e-13), n)) @ Q.T  # asked, and passed (as in the test above)
    K = np.tril(K) + np.tril(K, -1).T
    t = rng.standard_normal(n)
    U = np.linalg.cholesky(K).T
    assert np.linalg.norm(K, 1) / np.min(np.diag(U)) ** 2 <= np.linalg.cond(K, 1)
    reference = op_module._logp_and_gradients_scipy(K, t, 0.0, True)
    potrf, lapack = [], op_module.lapack
    monkeypatch.setattr(op_module, "POCON_COPY_MARGIN", margin)
    calls = _counting_pocon(monkeypatch)

    def counting_potrf(*args, **kwargs):
        potrf.append(1)
        return lapack.dpotrf(*args, **kwargs)

    monkeypatch.setattr(op_module.lapack, "dpotrf", counting_potrf, raising=False)
    out = op_module._logp_and_gradients_scipy(K, t, 0.0, True)
    assert len(potrf) == potrf_calls and len(calls) == 1 and calls[0] > n * np.finfo(float).eps
    assert out[0] == reference[0] and out[3] == reference[3] == 0.0
    np.testing.assert_array_equal(out[1], reference[1])
    np.testing.assert_array_equal(out[2], reference[2])


def test_k_of_the_wrong_shape_is_refused_and_float32_is_computed_in_float64():
    """K must be n × n for t of n entries: a ValueError naming both shapes, from the graph when the shapes are static and
    from both implementations at run time (LAPACK reads only K's first n columns, so a wider K would pass unseen); a
    float32 K given to the SciPy implementation directly gives the numbers of its float64 copy, to the bit."""
    import pytensor

    from bayeskern._gaussian_logp import _logp_and_gradients_scipy, gaussian_logp

    with pytest.raises(ValueError, match=r"K \(n, n\) and t \(n,\)"):
        gaussian_logp(pt.tensor(shape=(5, 8)), pt.vector(shape=(5,)), 0.1)
    K, t = pt.matrix("K"), pt.vector("t")
    logp = gaussian_logp(K, t, 0.1)
    wide, t5 = np.eye(5, 8), np.ones(5)
    for mode in ("NUMBA", "FAST_COMPILE"):  # Numba-compiled, and Python's perform
        f = pytensor.function([K, t], [logp, pytensor.grad(logp, K)], mode=mode)
        with pytest.raises(ValueError, match=r"K \(n, n\) and t \(n,\)"):
            f(wide, t5)
        with pytest.raises(ValueError, match=r"K \(n, n\) and t \(n,\)"):
            f(np.eye(5), np.ones(4))
    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 25))
    K32 = (A @ A.T / 25).astype(np.float32)
    t64 = rng.standard_normal(20)
    for got, want in zip(_logp_and_gradients_scipy(K32, t64, 0.1, True), _logp_and_gradients_scipy(K32.astype(np.float64), t64, 0.1, True), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 127, 128, 129, 300])
def test_the_one_norm_of_a_lower_triangle_read_in_blocks(n):
    """‖S + cI‖₁ of the symmetric S whose lower triangle M holds, read BLOCK_ROWS = 128 rows at a time with whatever
    lies above M's diagonal ignored, against numpy's norm of S + cI itself, for sizes around the block's edges. The
    sums run in another order: within n·ε relative."""
    from bayeskern._gaussian_logp import _norm1_of_lower

    rng = np.random.default_rng(n)
    M = rng.standard_normal((n, n))  # above the diagonal: values the norm must not read
    L = np.tril(M)
    S = L + L.T - np.diag(np.diag(L))
    for shift in (0.0, -2.5):
        expected = np.linalg.norm(S + shift * np.eye(n), 1)
        np.testing.assert_allclose(_norm1_of_lower(M, shift), expected, rtol=n * np.finfo(float).eps, atol=0)


@pytest.mark.parametrize("n", [1, 127, 128, 129, 300])
def test_the_scipy_implementation_reads_only_the_lower_triangle_and_writes_zeros_above(n):
    """K's upper triangle is not read (LAPACK's convention; the copy goes by blocks of rows), and ∂/∂K, written over
    C⁻¹ by the same blocks, is 0 above the diagonal: the same numbers to the bit for K with noise above its diagonal and
    for np.tril(K), and the gradient's lower triangle 2Gᵢⱼ, Gᵢᵢ with G = ½(ααᵀ − C⁻¹) from numpy's inverse
    (within 1e-9 of its largest entry: C's condition number here is below 1e3)."""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy

    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n + 5))
    K, t = A @ A.T / n, rng.standard_normal(n)
    noisy = np.tril(K) + np.triu(rng.standard_normal((n, n)), 1)
    out, clean = _logp_and_gradients_scipy(noisy, t, 0.5, False), _logp_and_gradients_scipy(np.tril(K), t, 0.5, False)
    assert out[0] == clean[0]
    np.testing.assert_array_equal(out[1], clean[1])
    assert not np.any(np.triu(out[1], 1))
    C_inv = np.linalg.inv(K + 0.5 * np.eye(n))
    alpha = C_inv @ t
    G = 0.5 * (np.outer(alpha, alpha) - C_inv)
    expected = np.tril(2 * G, -1) + np.diag(np.diag(G))
    np.testing.assert_allclose(out[1], expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_a_gram_of_1e_300_is_accepted_at_the_same_jitter_by_both_implementations():
    """K = 1e-300 · ones(5, 5): max (C⁻¹)ᵢᵢ ~ 1e308, so n · max (C⁻¹)ᵢᵢ alone overflows. The condition test multiplies
    left to right (‖C‖₁ · n · max), as before the diagonal bound: the SciPy path accepted a jitter ten times larger (a
    logp ten times smaller) when it formed that product first. Both paths, to the bit (∂/∂K overflows in both: ααᵀ)."""
    from bayeskern._gaussian_logp import _logp_and_gradients_scipy
    from bayeskern._gaussian_logp_numba import _logp_and_gradients

    K, t = np.full((5, 5), 1e-300), np.random.default_rng(0).standard_normal(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scipy_out = _logp_and_gradients_scipy(K, t, 0.0, True)
    numba_out = _logp_and_gradients(K, t, 0.0, True)
    assert scipy_out[3] == numba_out[3] == pytest.approx(1e-308)
    for a, b in zip(scipy_out, numba_out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_float32_variables_are_cast_to_float64_in_the_graph_on_both_backends():
    """K, t and σ² as float32 variables (a model under `floatX=float32`): the Op's inputs are cast to float64 in the graph
    (the Numba implementation's LAPACK calls take float64 only: uncast, its compile failed), and the numbers are those
    of the float64 values, to the bit, with a float64 ∂/∂K."""
    import pytensor

    from bayeskern._gaussian_logp import gaussian_logp

    K, t, s2 = pt.fmatrix("K"), pt.fvector("t"), pt.fscalar("s2")
    logp = gaussian_logp(K, t, s2)
    assert all(x.dtype == "float64" for x in logp.owner.inputs)
    rng = np.random.default_rng(1)
    A = rng.standard_normal((6, 9))
    K_value, t_value = (A @ A.T / 9).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    K64, t64, s64 = pt.matrix("K64"), pt.vector("t64"), pt.scalar("s64")
    logp64 = gaussian_logp(K64, t64, s64)
    for mode in ("NUMBA", "FAST_COMPILE"):  # Numba-compiled, and Python's perform
        got = pytensor.function([K, t, s2], [logp, pytensor.grad(logp, K)], mode=mode)(K_value, t_value, np.float32(0.25))
        want = pytensor.function([K64, t64, s64], [logp64, pytensor.grad(logp64, K64)], mode=mode)(K_value.astype(np.float64), t_value.astype(np.float64), 0.25)
        assert got[1].dtype == np.float64
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
