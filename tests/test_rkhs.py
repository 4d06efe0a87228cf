"""The RKHS (checks.rkhs): norm and inner product against explicit features, bilinearity, refusal of a kernel that is not PSD."""

import numpy as np
import pytest

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K


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

