"""Kernels of infinitely wide fully connected ReLU networks: the NNGP (Lee et al. 2018) and the NTK (Jacot et al. 2018)."""

import numpy as np
import pytensor.tensor as pt

from bayeskern._validation import check_integer, check_number
from bayeskern.kernels.arccosine import angular_cosine, arccos_J, zero_safe_sqrt
from bayeskern.kernels.base import Kernel

__all__ = ["NNGP", "NTK"]

_CONVENTION = """
    The network (NTK parameterisation, every weight and bias drawn N(0, 1)), with L = `depth` hidden
    ReLU layers of width n → ∞ and a scalar linear readout:
        h¹ = σ_w/√d · W¹x + σ_b·b¹,   hˡ⁺¹ = σ_w/√n · Wˡ⁺¹ relu(hˡ) + σ_b·bˡ⁺¹,   f(x) = h^(L+1),
    so the readout has a bias too (it adds σ_b²). The recursion (Lee et al. 2018; Arora et al. 2019):
        Σ⁰(x, x′) = σ_b² + σ_w² xᵀx′/d
        Σˡ = σ_b² + σ_w² (1/2π) √(Σˡ⁻¹(x, x) Σˡ⁻¹(x′, x′)) (sin θ + (π − θ) cos θ),  Σ̇ˡ = (π − θ)/(2π),
    θ the angle of Σˡ⁻¹, l = 1 … L; the NNGP is Σᴸ, and the NTK is Θᴸ with
        Θ⁰ = Σ⁰,   Θˡ = Σˡ + σ_w² Θˡ⁻¹ Σ̇ˡ.
    Where Σˡ⁻¹(x, x) = 0 (x = 0 and σ_b = 0) θ := π/2, i.e. relu′(0) = ½.

    `depth`: L ≥ 1, a Python int. `weight_variance`: σ_w² > 0. `bias_variance`: σ_b² ≥ 0. The
    variances may be numbers or PyMC random variables.
"""


def _relu_recursion(X, Xs, p, depth: int, ntk: bool):
    """Σᴸ (and Θᴸ when `ntk`) for X against Xs (Xs = X when None)."""
    sw2, sb2 = p["weight_variance"], p["bias_variance"]
    same = Xs is None
    Xs = X if same else Xs
    d = X.type.shape[1]
    S = sb2 + sw2 * pt.dot(X, Xs.T) / d  # Σ⁰ = σ_b² + σ_w² xᵀx′/d
    s1 = sb2 + sw2 * pt.sum(X**2, axis=1) / d  # Σ⁰(x, x)
    s2 = sb2 + sw2 * pt.sum(Xs**2, axis=1) / d  # Σ⁰(x′, x′)
    T = S  # Θ⁰ = Σ⁰
    for _ in range(depth):
        cos = angular_cosine(S, s1, s2, same)
        # E[relu(u) relu(v)] = (1/2π)√(Σ(x,x)Σ(x′,x′)) J₁(θ);  E[relu′(u) relu′(v)] = J₀(θ)/(2π)
        S_new = sb2 + sw2 * zero_safe_sqrt(s1[:, None] * s2[None, :]) * arccos_J(1, cos) / (2 * np.pi)
        if ntk:
            T = S_new + sw2 * T * arccos_J(0, cos) / (2 * np.pi)  # Θˡ = Σˡ + σ_w² Θˡ⁻¹ Σ̇ˡ
        S = S_new
        s1, s2 = sb2 + sw2 * s1 / 2, sb2 + sw2 * s2 / 2  # on the diagonal θ = 0: E[relu(u)²] = Σ(x,x)/2
    return T if ntk else S


def _relu_recursion_diag(X, p, depth: int, ntk: bool):
    sw2, sb2 = p["weight_variance"], p["bias_variance"]
    s = sb2 + sw2 * pt.sum(X**2, axis=1) / X.type.shape[1]
    t = s
    for _ in range(depth):
        # θ = 0 (Σ̇ = ½) unless Σ(x, x) = 0, where θ := π/2 (Σ̇ = ¼) — the convention of angular_cosine
        dot_rate = pt.switch(pt.gt(s, 0.0), 0.5, 0.25)
        s = sb2 + sw2 * s / 2
        t = s + sw2 * t * dot_rate
    return t if ntk else s


class _ReLUNetwork(Kernel):
    _ntk = False

    def __init__(self, depth: int = 1, weight_variance=1.0, bias_variance=0.0):
        self.depth = check_integer(depth, "depth", 1)
        sw2 = check_number(weight_variance, "weight_variance", positive=True)
        sb2 = check_number(bias_variance, "bias_variance", nonnegative=True)
        for name, v in (("weight_variance", sw2), ("bias_variance", sb2)):
            if v.ndim != 0:
                raise ValueError(f"{name} must be a scalar")
        super().__init__(weight_variance=sw2, bias_variance=sb2)

    def _config(self):
        return self.depth

    def _full(self, X, Xs, p):
        return _relu_recursion(X, Xs, p, self.depth, self._ntk)

    def _diag(self, X, p):
        return _relu_recursion_diag(X, p, self.depth, self._ntk)

    def __repr__(self) -> str:
        h = self.hyperparameters
        return f"{type(self).__name__}(depth={self.depth}, weight_variance={h['weight_variance']!s}, bias_variance={h['bias_variance']!s})"


class NNGP(_ReLUNetwork):
    __doc__ = """The NNGP kernel Σᴸ(x, x′): the covariance of f(x), f(x′) for a random, infinitely wide ReLU network.
""" + _CONVENTION


class NTK(_ReLUNetwork):
    __doc__ = """The neural tangent kernel Θᴸ(x, x′) = E[∇_θ f(x)ᵀ ∇_θ f(x′)] of an infinitely wide ReLU network.

    Gradient flow on ½‖f(X) − y‖²/N with learning rate η moves f as df/dt = −(η/N) Θ (f − y)
    (`bayeskern.ntk.dynamics`).
""" + _CONVENTION
    _ntk = True
