"""Stationary kernels k(x − x′): squared exponential (isotropic, ARD, Mahalanobis), Matérn, rational quadratic, periodic."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayeskern._validation import check_number, is_symbolic
from bayeskern.kernels.base import Kernel

__all__ = ["RBF", "MahalanobisRBF", "Matern12", "Matern32", "Matern52", "Periodic", "RatQuad"]


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
        cov = self._pymc(X, p)
        if Xs is None and not isinstance(cov, pm.gp.cov.Periodic):
            # r² = ‖x‖² + ‖x′‖² − 2xᵀx′ leaves round-off where x = x′; k(x, x) needs r = 0 exactly (√ of
            # 1e-16 is 1e-8: Matérn ½ would give 1 − 1e-8 on the diagonal)
            r2 = cov.square_dist(X, None) * (1.0 - pt.eye(X.shape[0], dtype="float64"))
            return cov.full_from_distance(r2, squared=True)
        return cov.full(X, Xs)

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


def _exact_sqrt(r2):
    """r = √r², exactly 0 at r² = 0 with a finite gradient there (√ is evaluated on 1 instead of 0)."""
    positive = pt.gt(r2, 0.0)
    return pt.sqrt(pt.switch(positive, r2, 1.0)) * positive


class _PyMCStationary(Kernel):
    """A stationary kernel of `pm.gp.cov` with a length scale ℓ (scalar, or one per input column)."""

    _pymc_class = None
    _extra: tuple[str, ...] = ()

    def __init__(self, lengthscale, **extra):
        lengthscale = check_number(lengthscale, "lengthscale", positive=True)
        if (lengthscale.ndim if is_symbolic(lengthscale) else np.ndim(lengthscale)) > 1:
            raise ValueError("lengthscale must be a scalar or a vector of one length scale per input column")
        super().__init__(lengthscale=lengthscale, **{k: check_number(v, k, positive=True) for k, v in extra.items()})

    _check_input_dim = RBF._check_input_dim

    def _pymc(self, X, p):
        extra = {k: p[k] for k in self._extra}
        cov = type(self)._pymc_class(X.type.shape[1], ls=p["lengthscale"], **extra)
        cov._sqrt = _exact_sqrt  # PyMC's r = √(r² + 1e-12) puts k(x, x) 1e-6 below 1 for Matérn ½
        return cov

    def _full(self, X, Xs, p):
        cov = self._pymc(X, p)
        if Xs is None and not isinstance(cov, pm.gp.cov.Periodic):
            # r² = ‖x‖² + ‖x′‖² − 2xᵀx′ leaves round-off where x = x′; k(x, x) needs r = 0 exactly (√ of
            # 1e-16 is 1e-8: Matérn ½ would give 1 − 1e-8 on the diagonal)
            r2 = cov.square_dist(X, None) * (1.0 - pt.eye(X.shape[0], dtype="float64"))
            return cov.full_from_distance(r2, squared=True)
        return cov.full(X, Xs)

    def _diag(self, X, p):
        return self._pymc(X, p).diag(X)


class Matern12(_PyMCStationary):
    """k(x, x′) = exp(−r/ℓ), r = ‖x − x′‖ (the Ornstein–Uhlenbeck kernel), PyMC's `Matern12`."""

    _pymc_class = pm.gp.cov.Matern12


class Matern32(_PyMCStationary):
    """k(x, x′) = (1 + √3 r/ℓ) exp(−√3 r/ℓ), PyMC's `Matern32`."""

    _pymc_class = pm.gp.cov.Matern32


class Matern52(_PyMCStationary):
    """k(x, x′) = (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ), PyMC's `Matern52`."""

    _pymc_class = pm.gp.cov.Matern52


class RatQuad(_PyMCStationary):
    """k(x, x′) = (1 + r²/(2αℓ²))^(−α), a scale mixture of RBFs, PyMC's `RatQuad`; α → ∞ gives the RBF."""

    _pymc_class = pm.gp.cov.RatQuad
    _extra = ("alpha",)

    def __init__(self, alpha, lengthscale):
        super().__init__(lengthscale, alpha=alpha)


class Periodic(_PyMCStationary):
    """k(x, x′) = exp(−½ Σⱼ sin²(π(xⱼ − x′ⱼ)/T) / ℓ²), PyMC's `Periodic` (period T).

    PyMC's convention has ½ in the exponent where scikit-learn's `ExpSineSquared` has 2: the same
    kernel has ℓ = ℓ_sklearn / 2.
    """

    _pymc_class = pm.gp.cov.Periodic
    _extra = ("period",)

    def __init__(self, period, lengthscale):
        super().__init__(lengthscale, period=period)
