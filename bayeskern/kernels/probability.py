"""Kernels from generative models: the probability product kernel of Gaussians and the mixture kernel (seeds 000, 004)."""

import numpy as np
import pytensor.tensor as pt

from bayeskern._parameterised import known_shape
from bayeskern._validation import check_number, is_symbolic
from bayeskern.kernels.base import Kernel

__all__ = ["Mixture", "ProbabilityProduct"]

_LOG_2PI = float(np.log(2 * np.pi))


class ProbabilityProduct(Kernel):
    """k(x, x′) = ∫ p(z)^ρ p′(z)^ρ dz for the Gaussians p = N(x, Σ), p′ = N(x′, Σ) (Jebara, Kondor & Howard 2004).

    Each input row x is the mean of a density; Σ = diag(σ²) is shared. In closed form, per input
    dimension j and multiplied over j:
        (2πσⱼ²)^(−ρ) · √(πσⱼ²/ρ) · exp(−ρ (xⱼ − x′ⱼ)² / (4σⱼ²)).
    ρ = 1 is the expected likelihood kernel N(x; x′, 2Σ); ρ = ½ the Bhattacharyya kernel
    exp(−‖x − x′‖²/(8σ²)), with k(x, x) = 1.

    `rho`: ρ > 0. `variance`: σ², a positive scalar (isotropic) or one per input column (diagonal Σ).
    """

    def __init__(self, rho=1.0, variance=1.0):
        rho = check_number(rho, "rho", positive=True)
        variance = check_number(variance, "variance", positive=True)
        if rho.ndim != 0:
            raise ValueError("rho must be a scalar")
        if variance.ndim > 1:
            raise ValueError("variance must be a scalar or one variance per input column")
        super().__init__(rho=rho, variance=variance)

    def _check_input_dim(self, d: int) -> None:
        entries = known_shape(self.hyperparameters["variance"])
        if len(entries) == 1 and entries[0] is not None and entries[0] != d:  # (a PyMC vector of a given size too)
            raise ValueError(f"variance has {entries[0]} entries but the inputs have {d} column(s)")

    def _log_scale(self, d, p):
        """log Πⱼ (2πσⱼ²)^(−ρ) √(πσⱼ²/ρ)."""
        rho, var = p["rho"], p["variance"]
        per_dim = -rho * pt.log(2 * np.pi * var) + 0.5 * pt.log(np.pi * var / rho)
        return pt.sum(per_dim * pt.ones((d,)))  # a scalar σ² counts d times

    def _full(self, X, Xs, p):
        Xs = X if Xs is None else Xs
        # direct differences, not ‖a‖² + ‖b‖² − 2aᵀb: far from 0 (|x| ≳ 1e154) that form overflows to inf − inf;
        # z = (x − x′)/(2σ) stays finite or +inf, and exp(−ρ‖z‖²) is then 0, never NaN
        z = (X[:, None, :] - Xs[None, :, :]) / (2 * pt.sqrt(p["variance"]))
        r2 = p["rho"] * pt.sum(z**2, axis=-1)  # ρ Σⱼ (xⱼ − x′ⱼ)²/(4σⱼ²)
        return pt.exp(self._log_scale(X.type.shape[1], p) - r2)

    def _diag(self, X, p):
        return pt.exp(self._log_scale(X.type.shape[1], p)) * pt.ones((X.shape[0],))


class Mixture(Kernel):
    """k(x, z) = Σᵢ p(x|i) p(z|i) p(i), the kernel of a mixture model (PRML 6.29).

    Components p(x|i) = N(x; mᵢ, diag(sᵢ²)). `means`: mᵢ, a (K, d) array (a (K,) vector means d = 1).
    `scales`: sᵢ > 0 — a scalar (shared), (K,) (isotropic per component) or (K, d). `weights`: p(i),
    (K,), non-negative and summing to 1 (a Dirichlet random variable works). Any of them may be a
    PyMC random variable. It is the feature kernel of φᵢ(x) = p(x|i) with prior covariance diag(p(i)).
    """

    def __init__(self, means, scales, weights):
        means = check_number(means, "means")
        if not is_symbolic(means) and means.ndim == 1:
            means = means[:, None]
        if means.ndim != 2:
            raise ValueError("means must be a (K, d) array of component means")
        scales = check_number(scales, "scales", positive=True)
        weights = check_number(weights, "weights", nonnegative=True)
        if weights.ndim != 1:
            raise ValueError("weights must be a vector p(i) of one weight per component")
        if not is_symbolic(weights) and not np.isclose(weights.sum(), 1.0, rtol=0, atol=1e-10):
            raise ValueError(f"weights must sum to 1 (they are p(i)), got sum {weights.sum():.6g}")
        if not is_symbolic(means):
            K = means.shape[0]
            if not is_symbolic(weights) and len(weights) != K:
                raise ValueError(f"weights has {len(weights)} entries but means has {K} components")
            if not is_symbolic(scales) and scales.ndim >= 1 and scales.shape[0] != K:
                raise ValueError(f"scales has {scales.shape[0]} rows but means has {K} components")
            if not is_symbolic(scales) and scales.ndim == 2 and scales.shape[1] != means.shape[1]:
                raise ValueError(f"scales has {scales.shape[1]} columns but means has {means.shape[1]}")
        if scales.ndim > 2:
            raise ValueError("scales must be a scalar, (K,) or (K, d)")
        super().__init__(means=means, scales=scales, weights=weights)

    def _check_input_dim(self, d: int) -> None:
        shape = known_shape(self.hyperparameters["means"])
        if len(shape) == 2 and shape[1] is not None and shape[1] != d:  # (a PyMC matrix of a given size too)
            raise ValueError(f"means has {shape[1]} column(s) but the inputs have {d}")

    def _densities(self, X, p):
        """P[n, i] = p(xₙ|i) = Πⱼ N(xₙⱼ; mᵢⱼ, sᵢⱼ²)."""
        m, s = p["means"], p["scales"]
        s = s[:, None] if s.ndim == 1 else s  # (K,) → (K, 1)
        z = (X[:, None, :] - m[None, :, :]) / s  # (n, K, d)
        d = X.type.shape[1]
        log_norm = pt.sum(pt.log(s) * pt.ones((d,)), axis=-1)  # Σⱼ log sᵢⱼ, (K,) or a scalar
        return pt.exp(-0.5 * pt.sum(z**2, axis=-1) - log_norm - 0.5 * d * _LOG_2PI)

    def _full(self, X, Xs, p):
        P = self._densities(X, p)
        Ps = P if Xs is None else self._densities(Xs, p)
        return pt.dot(P * p["weights"], Ps.T)  # Σᵢ p(x|i) p(i) p(z|i)

    def _diag(self, X, p):
        P = self._densities(X, p)
        return pt.sum(P**2 * p["weights"], axis=1)
