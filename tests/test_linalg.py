"""The numpy linear algebra (bayeskern._linalg): round-off of a PSD matrix measured on the right scale."""

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

