"""The weight-space evidence Op (bayeskern._weight_space_evidence): value and gradient against the n × n density and
central differences, its two implementations against each other, invalid inputs."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats

from bayeskern._linalg import EPS
from bayeskern._weight_space_evidence import WeightSpaceEvidence, _evidence_and_gradients_scipy
from bayeskern.blr import DesignRows


def _problem(n: int, M: int, seed: int):
    """Φ, t and the R-factor statistics (S, c, ρ²) of [Φ | t]."""
    rng = np.random.default_rng(seed)
    Phi, t = rng.standard_normal((n, M)), rng.standard_normal(n)
    return Phi, t, DesignRows(None, None, t, Phi).r_factor


def _dense_logp(Phi, t, v, s2):
    """log N(t | 0, ΦVΦᵀ + σ²I) from the n × n covariance itself (scipy), the reference."""
    C = (Phi * v) @ Phi.T + s2 * np.eye(len(t))
    return scipy.stats.multivariate_normal(np.zeros(len(t)), C).logpdf(t)


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])  # Numba-compiled, and Python's perform
def test_value_and_gradient_against_the_n_by_n_density(mode):
    """log p equals scipy's density of the n × n covariance; ∂/∂v and ∂/∂σ² (PyTensor's gradient of the Op's output)
    equal central differences of that density, with v₂ = 0 (a feature switched off: the gradient is finite there,
    taken by a one-sided second-order difference)."""
    n, M, s2 = 40, 6, 0.3
    Phi, t, (S, c, rr) = _problem(n, M, 0)
    v = np.array([0.4, 1.3, 0.0, 0.7, 2.0, 0.1])
    vs, s2s = pt.vector("v"), pt.scalar("s2")
    logp = WeightSpaceEvidence()(S, c, rr, n, vs, s2s)[0]
    f = pytensor.function([vs, s2s], [logp, *pytensor.grad(logp, [vs, s2s])], mode=mode)
    value, d_v, d_s2 = f(v, s2)
    # cond(C) ≈ 1e3 at n = 40: both sides accurate to ~1e-13 relative
    np.testing.assert_allclose(value, _dense_logp(Phi, t, v, s2), rtol=1e-12)
    h = 1e-5
    for k in range(M):
        e = h * np.eye(M)[k]
        if v[k] > 0:
            numeric = (_dense_logp(Phi, t, v + e, s2) - _dense_logp(Phi, t, v - e, s2)) / (2 * h)
        else:
            numeric = (-3 * _dense_logp(Phi, t, v, s2) + 4 * _dense_logp(Phi, t, v + e, s2) - _dense_logp(Phi, t, v + 2 * e, s2)) / (2 * h)
        # O(h²) truncation with third derivatives ~(Pₖₖ/σ²)³ ≈ 3e6 here: ~1e-4 absolute at most, on gradients of 0.3–170
        np.testing.assert_allclose(d_v[k], numeric, rtol=1e-5, atol=1e-4)
    numeric = (_dense_logp(Phi, t, v, s2 + h) - _dense_logp(Phi, t, v, s2 - h)) / (2 * h)
    np.testing.assert_allclose(d_s2, numeric, rtol=1e-6)


@pytest.mark.parametrize("n, M", [(300, 1), (300, 7), (300, 60), (5, 9), (9, 9)])
def test_numba_and_scipy_implementations_make_the_same_lapack_and_blas_calls(n, M):
    """Both form B by syrk, factorise it in the same memory, solve with trtrs and take every product with SciPy's BLAS
    (Numba's np.dot calls it): the gradients are the same to the bit, with v₀ = 0, fewer data than features (k = n < M)
    and n = M (ρ = 0); log p may differ in the order of summing log Lᵢᵢ (a few ulps)."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients

    Phi, t, stats = _problem(n, M, M)
    v = np.random.default_rng(1).uniform(0.0, 3.0, M)
    v[0] = 0.0
    numba_out = _evidence_and_gradients(*stats, float(n), v, 0.05)
    scipy_out = _evidence_and_gradients_scipy(*stats, float(n), v, 0.05)
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    assert scipy_out[2] == numba_out[2]
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-14)
    np.testing.assert_allclose(scipy_out[0], _dense_logp(Phi, t, v, 0.05), rtol=1e-11)  # cond(C) ~ 1e5 at σ² = 0.05


@pytest.mark.parametrize("v_bad, s2_bad", [([1.0, -0.5], 0.1), ([1.0, np.nan], 0.1), ([1.0, 1.0], 0.0), ([1.0, 1.0], -1.0)])
def test_invalid_variances_or_noise_give_no_density_in_both_implementations(v_bad, s2_bad):
    """A negative or NaN prior variance, or σ² ≤ 0, is outside the model: −inf with zero gradients (the sampler or
    optimiser steps back), never a NaN."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients

    _, _, stats = _problem(10, 2, 3)
    v = np.asarray(v_bad, dtype=float)
    for out in (_evidence_and_gradients(*stats, 10.0, v, s2_bad), _evidence_and_gradients_scipy(*stats, 10.0, v, s2_bad)):
        assert out[0] == -np.inf and not np.any(out[1]) and out[2] == 0.0


def test_mismatched_shapes_are_named():
    """S, c and v of different sizes: a ValueError that names the shapes, on both backends."""
    _, _, stats = _problem(10, 3, 4)
    vs = pt.vector("v")
    out = WeightSpaceEvidence()(*stats, 10, vs, 0.1)[0]
    for mode in ("NUMBA", "FAST_COMPILE"):
        with pytest.raises(ValueError, match=r"variances \(M,\)"):
            pytensor.function([vs], out, mode=mode)(np.ones(2))
    with pytest.raises(ValueError, match="needs"):
        WeightSpaceEvidence()(*stats, 10, pt.matrix("V"), 0.1)


@pytest.mark.parametrize("offset, v_scale, s2", [(0.0, 1.0, 0.1), (1e4, 1e6, 1e-4), (1e6, 1e10, 1e-6)])
def test_exact_for_targets_far_from_zero_and_priors_far_above_the_noise(offset, v_scale, s2):
    """Φ = Q diag(s) with orthonormal columns Q (a Hadamard matrix's, entries ±1/8, and s powers of two: Φ and t are
    exact in binary): λⱼ = sⱼ²vⱼ + σ² and log p, ∂/∂v, ∂/∂σ² have closed forms (below). With targets near 1e4–1e6 and
    σ = 1e-2–1e-3, ΦᵀΦ and Φᵀt would lose ε·tᵀt/σ² in tᵀC⁻¹t (~1e-3 and ~5e2 nats); the R factor is backward stable,
    ‖δt‖ ≲ c·ε‖t‖, so log p moves by at most ‖α‖·c·ε‖t‖ (α = C⁻¹t) and the gradients by c·ε‖t‖/ρ relative (their
    largest terms are ρ²/σ⁴-sized): c = 100 allows for the QR's and the closed forms' roundings."""
    n, M, rho = 64, 5, 1.0
    H = np.array([[1.0]])
    for _ in range(6):
        H = np.block([[H, H], [H, -H]])
    Q = H[:, : M + 1] / 8.0  # orthonormal columns, exact
    s = np.array([0.5, 1.0, 2.0, 4.0, 1.0])
    a = offset + np.array([3.0, -1.0, 2.0, 5.0, -4.0])  # t's coordinates along Q's columns (integers: t exact)
    Phi, t = Q[:, :M] * s, Q[:, :M] @ a + rho * Q[:, M]
    v = v_scale * np.array([0.5, 1.0, 2.0, 1.5, 0.75])
    lam = s**2 * v + s2  # the eigenvalues of C on Q's columns; σ² on the others
    quad = np.sum(a**2 / lam) + rho**2 / s2
    logp = -0.5 * quad - 0.5 * np.sum(np.log(lam)) - 0.5 * (n - M) * np.log(s2) - 0.5 * n * np.log(2 * np.pi)
    d_v = 0.5 * s**2 * (a**2 / lam**2 - 1 / lam)  # ½[(Φᵀα)ⱼ² − (ΦᵀC⁻¹Φ)ⱼⱼ], Φᵀα = s a/λ, ΦᵀC⁻¹Φ = diag(s²/λ)
    alpha_norm2 = np.sum(a**2 / lam**2) + rho**2 / s2**2  # ‖α‖²
    d_s2 = 0.5 * (alpha_norm2 - np.sum(1 / lam) - (n - M) / s2)  # ½(αᵀα − tr C⁻¹)
    out = _evidence_and_gradients_scipy(*DesignRows(None, None, t, Phi).r_factor, float(n), v, s2)
    moved = 100 * EPS * np.linalg.norm(t)  # c·ε‖t‖
    np.testing.assert_allclose(out[0], logp, rtol=1e-14, atol=np.sqrt(alpha_norm2) * moved)
    np.testing.assert_allclose(out[1], d_v, rtol=max(1e-12, moved / rho), atol=1e-12 * np.max(np.abs(d_v)))
    np.testing.assert_allclose(out[2], d_s2, rtol=max(1e-12, moved / rho))


def test_read_only_constants_and_an_integer_n_in_a_numba_graph():
    """As in a PyMC model: the statistics are read-only constants, n a Python int, v a slice of a larger vector."""
    n, M = 30, 4
    Phi, t, (S, c, rr) = _problem(n, M, 5)
    S.flags.writeable = False
    theta = pt.vector("theta")
    logp = WeightSpaceEvidence()(S, c, rr, n, theta[::2], 0.2)[0]
    f = pytensor.function([theta], [logp, pytensor.grad(logp, theta)], mode="NUMBA")
    value, grad = f(np.arange(1.0, 2 * M + 1))
    v = np.arange(1.0, 2 * M + 1)[::2]
    np.testing.assert_allclose(value, _dense_logp(Phi, t, v, 0.2), rtol=1e-12)
    np.testing.assert_array_equal(grad[1::2], 0.0)
    np.testing.assert_array_equal(grad[::2], _evidence_and_gradients_scipy(S, c, rr, float(n), v, 0.2)[1])


def _covariance(M: int, seed: int):
    """A random SPD matrix, condition number ~10–100."""
    A = np.random.default_rng(seed).standard_normal((M, M))
    return A @ A.T / M + 0.1 * np.eye(M)


def _dense_logp_lower(Phi, t, V, s2):
    """log N(t | 0, ΦVΦᵀ + σ²I) for the symmetric V of V's lower triangle (what the Op reads), from the n × n covariance."""
    V = np.tril(V) + np.tril(V, -1).T
    return scipy.stats.multivariate_normal(np.zeros(len(t)), Phi @ V @ Phi.T + s2 * np.eye(len(t))).logpdf(t)


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])  # Numba-compiled, and Python's perform
def test_a_covariance_prior_against_the_n_by_n_density(mode):
    """A full V: log p equals scipy's density of the n × n covariance; ∂/∂V is the gradient of the lower triangle read
    (central differences of each entry of V: below the diagonal the symmetric gradient twice, above it zero, as
    `pt.linalg.cholesky` gives); ∂/∂σ² central differences too."""
    n, M, s2 = 40, 5, 0.3
    Phi, t, (S, c, rr) = _problem(n, M, 7)
    V = _covariance(M, 8)
    Vs, s2s = pt.matrix("V"), pt.scalar("s2")
    logp = WeightSpaceEvidence(matrix=True)(S, c, rr, n, Vs, s2s)[0]
    f = pytensor.function([Vs, s2s], [logp, *pytensor.grad(logp, [Vs, s2s])], mode=mode)
    value, d_V, d_s2 = f(V, s2)
    # cond(C) ~ 1e3: both sides accurate to ~1e-13 relative
    np.testing.assert_allclose(value, _dense_logp_lower(Phi, t, V, s2), rtol=1e-12)
    h, numeric = 1e-5, np.empty((M, M))
    for i in range(M):
        for j in range(M):
            e = h * np.outer(np.eye(M)[i], np.eye(M)[j])
            numeric[i, j] = (_dense_logp_lower(Phi, t, V + e, s2) - _dense_logp_lower(Phi, t, V - e, s2)) / (2 * h)
    # O(h²) truncation (third derivatives ≲ 1e3 here: ≲ 1e-7) and round-off ε·|log p|/h ≈ 1e-9, on gradients of ~1–10
    np.testing.assert_allclose(d_V, numeric, rtol=1e-6, atol=1e-6)
    assert not np.any(np.triu(d_V, 1))
    numeric = (_dense_logp_lower(Phi, t, V, s2 + h) - _dense_logp_lower(Phi, t, V, s2 - h)) / (2 * h)
    np.testing.assert_allclose(d_s2, numeric, rtol=1e-6)


@pytest.mark.parametrize("n, M", [(300, 1), (300, 7), (300, 60), (5, 9), (9, 9)])
def test_a_covariance_prior_makes_the_same_lapack_and_blas_calls_in_both_implementations(n, M):
    """V factorised by potrf, applied by trmm, EᵀE by syrk, in both: the gradients are the same to the bit, also with
    fewer data than features and n = M; log p equals the n × n density."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients_matrix

    Phi, t, stats = _problem(n, M, M)
    V = _covariance(M, 1)
    numba_out = _evidence_and_gradients_matrix(*stats, float(n), V, 0.05)
    scipy_out = _evidence_and_gradients_scipy(*stats, float(n), V, 0.05)
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    assert scipy_out[2] == numba_out[2]
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-14)
    # cond(C) ≤ 3e4 here (σ² = 0.05): both sides accurate to ~1e-12 relative; 1e-10 allows for the n × n slogdet at n = 300
    np.testing.assert_allclose(scipy_out[0], _dense_logp_lower(Phi, t, V, 0.05), rtol=1e-10)


@pytest.mark.parametrize("case", ["indefinite", "singular", "nan", "zero noise"])
def test_an_invalid_covariance_or_noise_gives_no_density_in_both_implementations(case):
    """V not positive definite (an eigenvalue −1 or 0), a NaN in its lower triangle, or σ² = 0: −inf with zero
    gradients, never a NaN — also where σ²I + SVSᵀ itself would be positive definite (the indefinite V here)."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients_matrix

    _, _, stats = _problem(10, 2, 3)
    V, s2 = {"indefinite": (np.array([[1.0, 0.0], [0.0, -1e-3]]), 10.0), "singular": (np.array([[1.0, 1.0], [1.0, 1.0]]), 0.1),
             "nan": (np.array([[1.0, 0.0], [np.nan, 1.0]]), 0.1), "zero noise": (np.eye(2), 0.0)}[case]  # fmt: skip
    for out in (_evidence_and_gradients_matrix(*stats, 10.0, V, s2), _evidence_and_gradients_scipy(*stats, 10.0, V, s2)):
        assert out[0] == -np.inf and not np.any(out[1]) and out[2] == 0.0


@pytest.mark.parametrize("above", [np.nan, np.inf, 1e300, 0.5])
def test_a_covariance_prior_is_read_from_its_lower_triangle_only(above):
    """Whatever lies above V's diagonal — NaN, inf, 1e300 or an asymmetric 0.5 — the SciPy and Numba implementations,
    and the Op in both modes, give bitwise the numbers of the symmetric V (the factor and the σ² identity read the lower
    triangle; ∂/∂V is 0 above it)."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients_matrix

    n, M, s2 = 30, 4, 0.2
    _, _, stats = _problem(n, M, 11)
    V = _covariance(M, 12)
    W = V + np.triu(np.full((M, M), above), 1)
    want = _evidence_and_gradients_scipy(*stats, float(n), V, s2)
    Ws = pt.matrix("W")
    logp = WeightSpaceEvidence(matrix=True)(*stats, n, Ws, s2)[0]
    compiled = [pytensor.function([Ws], [logp, pytensor.grad(logp, Ws)], mode=mode) for mode in ("NUMBA", "FAST_COMPILE")]
    for got in (_evidence_and_gradients_scipy(*stats, float(n), W, s2), _evidence_and_gradients_matrix(*stats, float(n), W, s2)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    for f in compiled:  # (the gradients are the same to the bit in both implementations; log p to a few ulps)
        value, grad = f(W)
        np.testing.assert_allclose(value, want[0], rtol=1e-14)
        np.testing.assert_array_equal(grad, want[1])
    assert not np.any(np.triu(want[1], 1))
