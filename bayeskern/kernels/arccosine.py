"""The arc-cosine kernels of Cho & Saul (2009), K_n = (1/π)‖x‖ⁿ‖x′‖ⁿ J_n(θ) for n = 0, 1, 2 (seed 000)."""

import numpy as np
import pytensor.tensor as pt

from bayeskern._linalg import EPS
from bayeskern.kernels.base import Kernel
from bayeskern.kernels.stationary import DIFFERENCE_COLUMNS, _column_differences

__all__ = ["ArcCosine", "angular_cosine", "arccos_J", "kahan_angle", "zero_safe_sqrt"]


def zero_safe_sqrt(s):
    """√s for s ≥ 0, its gradient 0 where s = 0 rather than ∞·0 = NaN: the same values (√s·1, and 0 at 0). A zero input
    with σ_b = 0 has S(x, x) = 0 for every σ_w, so 0 is the derivative there."""
    positive = pt.gt(s, 0.0)
    return pt.sqrt(pt.switch(positive, s, 1.0)) * positive


def angular_cosine(S, s1, s2, same: bool):
    """cos θ = S(x, x′)/√(S(x, x)·S(x′, x′)), clipped to [−1, 1] so round-off cannot make arccos NaN.

    `S`: the (n, m) matrix of inner products (or covariances); `s1`, `s2`: its diagonals for X (n,) and
    Xs (m,). Where either S(x, x) is 0 (a zero input) cos θ is defined as 0, i.e. θ = π/2. With `same`
    (Xs is X) the result is made exactly symmetric and its diagonal exactly cos 0 = 1 (0 at zero
    inputs), so that arccos does not turn a round-off of ε in cos θ into √ε in θ; for the same reason
    |cos θ| ≥ 1 − 8ε is rounded to ±1 (parallel inputs).
    """
    n1, n2 = zero_safe_sqrt(s1), zero_safe_sqrt(s2)
    denom = n1[:, None] * n2[None, :]
    positive = pt.gt(denom, 0.0)
    cos = pt.switch(positive, S / pt.switch(positive, denom, 1.0), 0.0)
    if same:
        cos = 0.5 * (cos + cos.T)
        nonzero = pt.cast(pt.gt(s1, 0.0), "float64")
        on_diag = pt.eye(cos.shape[0], dtype="bool")
        cos = pt.switch(on_diag, nonzero[:, None] * pt.ones_like(cos), cos)
    # |cos θ| within 8ε of 1 is ±1: parallel inputs (duplicates among them) get θ = 0 (or π) exactly,
    # where the round-off of a few ε in cos θ would put θ at √ε ≈ 1e-8 and break the PSD-ness of J₀
    snap = 1.0 - 8 * EPS
    cos = pt.switch(pt.ge(cos, snap), 1.0, pt.switch(pt.le(cos, -snap), -1.0, cos))
    return pt.clip(cos, -1.0, 1.0)


def arccos_J(order: int, cos):
    """J_n(θ) of Cho & Saul (2009, eq. 4–6) as a function of cos θ (see `_J`)."""
    return _J(order, pt.arccos(cos), cos, pt.sqrt(pt.clip(1.0 - cos**2, 0.0, 1.0)))  # sin θ ≥ 0 on θ ∈ [0, π]


def _J(order: int, theta, cos, sin):
    """J₀ = π − θ;  J₁ = sin θ + (π − θ) cos θ;  J₂ = 3 sin θ cos θ + (π − θ)(1 + 2 cos²θ)."""
    if order == 0:
        return np.pi - theta
    if order == 1:
        return sin + (np.pi - theta) * cos
    return 3.0 * sin * cos + (np.pi - theta) * (1.0 + 2.0 * cos**2)


def kahan_angle(X, Xs, s1, s2):
    """θ = 2·atan2(‖u − u′‖, ‖u + u′‖) between the rows of X and Xs, u = x/‖x‖ (Kahan): accurate to rounding near
    0 and π, where arccos(cos θ) turns a round-off of ε in cos θ into √ε in θ (then K₀ is not PSD to round-off).
    Sums over the columns of differences, no cancellation; exactly symmetric for Xs = X with θ = 0 on the diagonal.
    θ = π/2 where x or x′ is 0 (the convention of `angular_cosine`). `s1`, `s2`: ‖x‖², ‖x′‖²."""
    n1, n2 = zero_safe_sqrt(s1), zero_safe_sqrt(s2)
    U, Us = X / pt.switch(pt.gt(n1, 0.0), n1, 1.0)[:, None], Xs / pt.switch(pt.gt(n2, 0.0), n2, 1.0)[:, None]
    d = X.type.shape[1]
    minus = sum(pt.square(t) for t in _column_differences(U, Us, d))  # ‖u − u′‖²
    plus = sum(pt.square(t) for t in _column_differences(U, -Us, d))  # ‖u + u′‖² (u − (−u′) is u + u′ exactly)
    theta = 2.0 * pt.arctan2(pt.sqrt(minus), pt.sqrt(plus))
    return pt.switch(pt.eq(n1, 0.0)[:, None] | pt.eq(n2, 0.0)[None, :], np.pi / 2, theta)


class ArcCosine(Kernel):
    """k_n(x, x′) = (1/π) ‖x‖ⁿ ‖x′‖ⁿ J_n(θ), θ the angle between x and x′ (Cho & Saul 2009).

    The covariance 2·E_w[Θ(wᵀx)Θ(wᵀx′)(wᵀx)ⁿ(wᵀx′)ⁿ], w ~ N(0, I), of one infinitely wide layer with
    the activation Θ(z)zⁿ (n = 1: ReLU). `order`: n ∈ {0, 1, 2}, a Python int (it shapes the graph).

    Zero inputs: for n ≥ 1 the factor ‖x‖ⁿ makes k = 0. For n = 0, k₀ = 1 − θ/π with θ = π/2
    (cos θ := 0) whenever x or x′ is 0, so k₀(0, x′) = k₀(0, 0) = ½ — the value of the defining
    integral with the Heaviside step Θ(0) = ½ (seed 000's Θ(z) = ½(1 + sign z)); the kernel stays PSD
    (k₀ = ½ + arcsin(uᵀu′)/π with u = x/‖x‖, or u = 0).
    """

    def __init__(self, order: int = 1):
        if isinstance(order, bool) or not isinstance(order, int | np.integer) or order not in (0, 1, 2):
            raise ValueError(f"order must be 0, 1 or 2, got {order!r}")
        self.order = int(order)
        super().__init__()

    def _config(self):
        return self.order

    def _full(self, X, Xs, p):
        same = Xs is None
        Xs = X if same else Xs
        s1, s2 = pt.sum(X**2, axis=1), pt.sum(Xs**2, axis=1)  # ‖x‖², ‖x′‖²
        if X.type.shape[1] <= DIFFERENCE_COLUMNS:  # θ by Kahan's formula, from per-column differences
            theta = kahan_angle(X, Xs, s1, s2)
            J = _J(self.order, theta, pt.cos(theta), pt.sin(theta))
        else:  # many columns: θ from the inner products, |cos θ| near 1 snapped (see angular_cosine)
            J = arccos_J(self.order, angular_cosine(pt.dot(X, Xs.T), s1, s2, same))
        if self.order == 0:
            return J / np.pi  # k₀ = 1 − θ/π
        return pt.sqrt(s1[:, None] * s2[None, :]) ** self.order * J / np.pi  # (1/π)‖x‖ⁿ‖x′‖ⁿ J_n(θ)

    def _diag(self, X, p):
        s = pt.sum(X**2, axis=1)
        if self.order == 0:
            return pt.switch(pt.gt(s, 0.0), 1.0, 0.5)  # θ = 0, or θ = π/2 at x = 0
        # J₁(0) = π, J₂(0) = 3π: k₁(x, x) = ‖x‖², k₂(x, x) = 3‖x‖⁴
        return s if self.order == 1 else 3.0 * s**2

    def __repr__(self) -> str:
        return f"ArcCosine(order={self.order})"
