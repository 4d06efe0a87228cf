"""The weight-space evidence Op (bayeskern._weight_space_evidence): value and gradient against the n × n density and
central differences, its two implementations against each other, invalid inputs."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats

from bayeskern._weight_space_evidence import WeightSpaceEvidence, _evidence_and_gradients_scipy


def _problem(n: int, M: int, seed: int):
    rng = np.random.default_rng(seed)
    Phi, t = rng.standard_normal((n, M)), rng.standard_normal(n)
    return Phi, t, Phi.T @ Phi, Phi.T @ t


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
    Phi, t, P, q = _problem(n, M, 0)
    v = np.array([0.4, 1.3, 0.0, 0.7, 2.0, 0.1])
    vs, s2s = pt.vector("v"), pt.scalar("s2")
    logp = WeightSpaceEvidence()(P, q, t @ t, n, vs, s2s)[0]
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


@pytest.mark.parametrize("M", [1, 7, 60])
def test_numba_and_scipy_implementations_make_the_same_lapack_and_blas_calls(M):
    """Both factorise B in the same memory, solve with trtrs and take every product with SciPy's BLAS (Numba's np.dot
    calls it): the gradients are the same to the bit; log p may differ in the order of summing log Lᵢᵢ (a few ulps)."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients

    n = 300
    Phi, t, P, q = _problem(n, M, M)
    v = np.random.default_rng(1).uniform(0.0, 3.0, M)
    numba_out = _evidence_and_gradients(P, q, t @ t, float(n), v, 0.05)
    scipy_out = _evidence_and_gradients_scipy(P, q, t @ t, float(n), v, 0.05)
    np.testing.assert_array_equal(scipy_out[1], numba_out[1])
    assert scipy_out[2] == numba_out[2]
    np.testing.assert_allclose(scipy_out[0], numba_out[0], rtol=1e-14)
    np.testing.assert_allclose(scipy_out[0], _dense_logp(Phi, t, v, 0.05), rtol=1e-11)  # cond(C) ~ 1e5 at σ² = 0.05


@pytest.mark.parametrize("v_bad, s2_bad", [([1.0, -0.5], 0.1), ([1.0, np.nan], 0.1), ([1.0, 1.0], 0.0), ([1.0, 1.0], -1.0)])
def test_invalid_variances_or_noise_give_no_density_in_both_implementations(v_bad, s2_bad):
    """A negative or NaN prior variance, or σ² ≤ 0, is outside the model: −inf with zero gradients (the sampler or
    optimiser steps back), never a NaN."""
    from bayeskern._weight_space_evidence_numba import _evidence_and_gradients

    _, t, P, q = _problem(10, 2, 3)
    v = np.asarray(v_bad, dtype=float)
    for out in (_evidence_and_gradients(P, q, t @ t, 10.0, v, s2_bad), _evidence_and_gradients_scipy(P, q, t @ t, 10.0, v, s2_bad)):
        assert out[0] == -np.inf and not np.any(out[1]) and out[2] == 0.0


def test_mismatched_shapes_are_named():
    """ΦᵀΦ, Φᵀt and v of different sizes: a ValueError that names the shapes, on both backends."""
    _, t, P, q = _problem(10, 3, 4)
    vs = pt.vector("v")
    out = WeightSpaceEvidence()(P, q, t @ t, 10, vs, 0.1)[0]
    for mode in ("NUMBA", "FAST_COMPILE"):
        with pytest.raises(ValueError, match=r"variances \(M,\)"):
            pytensor.function([vs], out, mode=mode)(np.ones(2))
    with pytest.raises(ValueError, match="needs"):
        WeightSpaceEvidence()(P, q, t @ t, 10, pt.matrix("V"), 0.1)
