"""Mercer diagnostics (checks.psd): spectra against numpy, explicit counterexamples, jitter, the result's JSON."""

import json

import numpy as np
import pytest

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K


def test_psd_check_of_a_well_conditioned_mercer_kernel():
    X = np.array([[0.0], [1.0], [2.5], [4.0]])
    check = bk.checks.psd(K.RBF(0.7), X)
    lam = np.linalg.eigvalsh(ref.rbf(X, X, 0.7))
    np.testing.assert_allclose(check.eigenvalues, lam, rtol=1e-12, atol=1e-14)  # ascending, as numpy's
    assert check.is_psd and check.jitter == 0.0
    np.testing.assert_allclose(check.condition_number, lam[-1] / lam[0], rtol=1e-10)
    np.testing.assert_allclose(check.min_relative, lam[0] / (4 * np.finfo(float).eps * lam[-1]), rtol=1e-8)
    assert "positive definite" in check.verdict and "not" not in check.verdict
    d = json.loads(json.dumps(check.to_dict()))  # plain JSON values, spectrum included
    assert d["is_psd"] is True and len(d["eigenvalues"]) == 4 and d["jitter"] == 0.0


def test_psd_check_of_a_singular_mercer_kernel_reports_jitter():
    """40 points on [0, 1] with ℓ = 1: K is PSD but singular in float64 (λmin ~ 1e-17·λmax)."""
    X = np.linspace(0.0, 1.0, 40)
    check = bk.checks.psd(K.RBF(1.0), X)
    assert check.is_psd, check.verdict
    assert check.condition_number > 1e12
    assert check.jitter is not None and check.jitter > 0.0
    assert "singular" in check.verdict or "jitter" in check.verdict


@pytest.mark.parametrize(
    "kernel, X, lam_min",
    [
        # boxcar on x = 0, 1, 2 with h = 1.5: K = [[1,1,0],[1,1,1],[0,1,1]], eigenvalues 1 ± √2, 1
        (K.Boxcar(1.5), np.array([0.0, 1.0, 2.0]), 1 - np.sqrt(2)),
        # tanh(xx′) on x = 1, 2: [[tanh 1, tanh 2], [tanh 2, tanh 4]], determinant < 0
        (K.Sigmoid(1.0, 0.0), np.array([1.0, 2.0]), np.linalg.eigvalsh(np.tanh(np.outer([1.0, 2.0], [1.0, 2.0])))[0]),
        # b < 0: k(0, 0) = tanh(b) < 0
        (K.Sigmoid(1.0, -0.5), np.array([0.0]), np.tanh(-0.5)),
    ],
    ids=["boxcar", "sigmoid-collinear", "sigmoid-negative-offset"],
)
def test_psd_check_flags_explicit_counterexamples(kernel, X, lam_min):
    check = bk.checks.psd(kernel, X)
    assert not check.is_psd
    np.testing.assert_allclose(check.eigenvalues[0], lam_min, rtol=1e-12)
    assert check.min_relative < -1e10  # ten orders of magnitude beyond round-off
    assert "not positive semi-definite" in check.verdict and "Mercer" in check.verdict
    assert json.loads(json.dumps(check.to_dict()))["is_psd"] is False


def test_sigmoid_is_psd_or_not_depending_on_the_data():
    """tanh(b + a·s) = tanh b + a(1 − tanh²b)·s − a²tanh b(1 − tanh²b)·s² + …: a constant plus a linear
    kernel (rank ≤ d + 1) and higher-order terms of both signs. For small a, on d + 1 = 3 points the
    positive rank-3 part dominates (PSD); on 8 points the negative s² term shows (not PSD)."""
    X = np.random.default_rng(0).uniform(-1, 1, size=(8, 2))
    kernel = K.Sigmoid(0.05, 1.0)
    assert bk.checks.psd(kernel, X[:3]).is_psd
    assert not bk.checks.psd(kernel, X).is_psd


def test_psd_check_names_bad_arguments():
    with pytest.raises(ValueError, match="kernel must be a bayeskern.kernels kernel"):
        bk.checks.psd(np.eye(2), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="X contains NaN"):
        bk.checks.psd(K.RBF(1.0), np.array([0.0, np.nan]))


def test_psd_check_has_passed_like_every_check_and_to_dict_is_json():
    """`passed` is the verdict (λ₁ ≥ −100·n·ε·max|λ|, written out here); `is_psd` its read-only former name;
    to_dict gives JSON values, with None for the condition number λmax/λ₁ = ∞ of a K with λ₁ ≤ 0."""
    good = bk.checks.psd(K.RBF(0.7), np.array([0.0, 1.0, 2.5, 4.0]))
    bad = bk.checks.psd(K.Boxcar(1.5), np.array([0.0, 1.0, 2.0]))
    for check in (good, bad):
        lam = check.eigenvalues
        assert check.passed is bool(lam[0] >= -100 * len(lam) * np.finfo(float).eps * np.max(np.abs(lam)))
        assert check.is_psd is check.passed
    assert good.passed and not bad.passed
    with pytest.raises(AttributeError):
        bad.is_psd = True  # an alias, not a second field
    d = bad.to_dict()
    assert d["passed"] is False and d["is_psd"] is False  # is_psd: the key summary.json has always had
    assert bad.condition_number == np.inf and d["condition_number"] is None  # JSON has no ∞
    assert json.loads(json.dumps(d, allow_nan=False)) == d
