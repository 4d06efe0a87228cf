"""Squared-exponential kernels: isotropic (RBF), ARD length scales, and a full covariance Σ (Mahalanobis)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayeskern._validation import check_number, is_symbolic
from bayeskern.kernels.base import Kernel

__all__ = ["RBF", "MahalanobisRBF"]


class RBF(Kernel):
    """k(x, x′) = exp(−‖x − x′‖² / (2ℓ²)), PyMC's `ExpQuad`.

    `lengthscale`: ℓ > 0; a vector of d length scales ℓⱼ gives the ARD kernel
    exp(−½ Σⱼ (xⱼ − x′ⱼ)² / ℓⱼ²). `bandwidth`: the seeds' σ² = ℓ², an alternative to `lengthscale`.
    """

    def __init__(self, lengthscale=None, *, bandwidth=None):
        if (lengthscale is None) == (bandwidth is None):
            raise ValueError("give exactly one of lengthscale (ℓ) and bandwidth (σ² = ℓ²)")
        if bandwidth is not None:
            bandwidth = check_number(bandwidth, "bandwidth", positive=True)
            lengthscale = pt.sqrt(bandwidth) if is_symbolic(bandwidth) else np.sqrt(bandwidth)
        lengthscale = check_number(lengthscale, "lengthscale", positive=True)
        if (lengthscale.ndim if is_symbolic(lengthscale) else np.ndim(lengthscale)) > 1:
            raise ValueError("lengthscale must be a scalar or a vector of one length scale per input column")
        super().__init__(lengthscale=lengthscale)

    def _check_input_dim(self, d: int) -> None:
        ls = self.hyperparameters["lengthscale"]
        if not is_symbolic(ls) and np.ndim(ls) == 1 and len(ls) != d:
            raise ValueError(f"lengthscale has {len(ls)} ARD entries but the inputs have {d} column(s)")

    def _pymc(self, X, p):
        return pm.gp.cov.ExpQuad(X.type.shape[1], ls=p["lengthscale"])

    def _full(self, X, Xs, p):
        return self._pymc(X, p).full(X, Xs)

    def _diag(self, X, p):
        return self._pymc(X, p).diag(X)


class MahalanobisRBF(Kernel):
    """k(x, x′) = exp(−½ (x − x′)ᵀ Σ⁻¹ (x − x′)), the squared exponential with a full covariance.

    `cov`: Σ (d, d), symmetric positive definite — a matrix or a PyMC random variable (e.g. built
    from an LKJ Cholesky factor).
    """

    def __init__(self, cov):
        cov = check_number(cov, "cov")
        if not is_symbolic(cov):
            if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
                raise ValueError(f"cov must be a square (d, d) matrix, got shape {cov.shape}")
            if not np.allclose(cov, cov.T, rtol=1e-10, atol=0.0):
                raise ValueError("cov must be symmetric")
            if np.any(np.linalg.eigvalsh(cov) <= 0):
                raise ValueError("cov must be positive definite")
        super().__init__(cov=cov)

    def _check_input_dim(self, d: int) -> None:
        cov = self.hyperparameters["cov"]
        if not is_symbolic(cov) and cov.shape[0] != d:
            raise ValueError(f"cov is {cov.shape[0]}x{cov.shape[0]} but the inputs have {d} column(s)")

    def _full(self, X, Xs, p):
        # (x − x′)ᵀ Σ⁻¹ (x − x′) = ‖L⁻¹x − L⁻¹x′‖² with Σ = L Lᵀ: whiten, then the unit ExpQuad
        L = pt.linalg.cholesky(p["cov"])
        whiten = lambda A: pt.linalg.solve_triangular(L, A.T, lower=True).T  # noqa: E731
        Z, Zs = whiten(X), (None if Xs is None else whiten(Xs))
        return pm.gp.cov.ExpQuad(X.type.shape[1], ls=1.0).full(Z, Zs)

    def _diag(self, X, p):
        return pt.ones((X.shape[0],), dtype="float64")
