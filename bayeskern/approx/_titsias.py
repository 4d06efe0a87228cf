"""Titsias' collapsed bound F and its gradient as one PyTensor Op: three n-sized products (V = L⁻¹K_uf, VVᵀ, the gradient), the rest M × M.

F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²), Q = K_fu A K_uf, A = (K_uu + δI)⁻¹, δ = INDUCING_JITTER · mean diag K_uu.
The gradient is written out (derivation in `_bound_and_gradients`) instead of differentiating the Cholesky
factors symbolically: two O(nM²) products for the value, one for ∂F/∂K_uf. One function is both the Python
linker's `perform` and, in object mode, PyTensor's Numba backend (`_titsias_numba`).
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from bayeskern._gaussian_logp import as_float64
from bayeskern._linalg import LOG_2PI

__all__ = ["INDUCING_JITTER", "TitsiasBound", "titsias_bound"]

#: K_uu + δI with δ = INDUCING_JITTER · mean diag K_uu, in the likelihood and the conditioned model alike: inducing
#: points close together make K_uu singular to round-off. Q with δ is still ≤ K, so F stays a lower bound.
INDUCING_JITTER = 1e-6


def _bound_and_gradients(Kuu, Kuf, kdiag_sum, t, noise_var):
    """(F, ∂F/∂K_uu, ∂F/∂K_uf, ∂F/∂σ², ∂F/∂t); F = −inf and zero gradients where K_uu + δI or B is not positive definite.

    With L = chol(K_uu + δI), V = L⁻¹K_uf (so Q = VᵀV), U = VVᵀ/σ², B = I + U = L_B L_Bᵀ, E = I − B⁻¹ = B⁻¹U:
      F = −n/2 log 2π − Σ log diag L_B − (n/2) log σ² − ½tᵀα − ½ (tr K − ‖V‖²_F)/σ²,  α = C⁻¹t = (t − VᵀB⁻¹Vt/σ²)/σ²
    and, from ∂F/∂Q = ½(ααᵀ − C⁻¹) + I/(2σ²) with Woodbury (A K_uf C⁻¹ = Σ K_uf/σ², A = (K_uu + δI)⁻¹,
    Σ = L⁻ᵀB⁻¹L⁻¹, A − Σ = L⁻ᵀEL⁻¹), b = A K_uf α = L⁻ᵀVα:
      ∂F/∂K_uf = b αᵀ + L⁻ᵀEV/σ²,   ∂F/∂(K_uu + δI) = −½ b bᵀ − ½ L⁻ᵀEUL⁻¹,
      ∂F/∂σ² = ½ αᵀα − ½ tr C⁻¹ + (tr K − ‖V‖²_F)/(2σ⁴),  tr C⁻¹ = (n − tr E)/σ².
    Everything goes through V, never through P = K_uf K_fu and A: tr(AP) from A and P cancels terms of size
    ‖A‖‖P‖ ~ cond(K_uu + δI)·tr Q (errors ~1e-7 nats measured at cond 7e4), while ‖V‖²_F is a sum of squares.
    """
    M, n = Kuf.shape
    scale = np.trace(Kuu) / M
    failed = (-np.inf, np.zeros((M, M)), np.zeros((M, n)), 0.0, np.zeros(n))
    if not (np.isfinite(scale) and scale > 0.0 and noise_var > 0.0):
        return failed
    Kj = Kuu + INDUCING_JITTER * scale * np.eye(M)
    try:
        L = np.linalg.cholesky(Kj)
        Li = np.linalg.inv(L)  # L⁻¹ (M × M; L is well conditioned: cond(L)² = cond(K_uu + δI))
        V = np.dot(Li, Kuf)  # L⁻¹K_uf: the first O(nM²) product
        U = np.dot(V, V.T) / noise_var  # the second
        LB = np.linalg.cholesky(np.eye(M) + U)
    except Exception:  # not positive definite: no density here
        return failed
    LBi = np.linalg.inv(LB)
    Binv = np.dot(LBi.T, LBi)
    E = np.dot(Binv, U)  # I − B⁻¹
    alpha = (t - np.dot(V.T, np.dot(Binv, np.dot(V, t))) / noise_var) / noise_var  # α = (t − VᵀB⁻¹Vt/σ²)/σ²   (Woodbury)
    trace_gap = kdiag_sum - np.sum(V * V)  # tr(K − Q)
    F = -0.5 * n * LOG_2PI - np.sum(np.log(np.diag(LB))) - 0.5 * n * np.log(noise_var) - 0.5 * np.dot(t, alpha) - 0.5 * trace_gap / noise_var
    b = np.dot(Li.T, np.dot(V, alpha))  # A K_uf α = L⁻ᵀVα
    LiTE = np.dot(Li.T, E)
    d_Kuf = np.outer(b, alpha) + np.dot(LiTE, V) / noise_var  # the third O(nM²) product
    d_Kj = -0.5 * np.outer(b, b) - 0.5 * np.dot(np.dot(LiTE, U), Li)
    d_Kj = 0.5 * (d_Kj + d_Kj.T)
    d_Kuu = d_Kj + (INDUCING_JITTER / M) * np.trace(d_Kj) * np.eye(M)  # δ = ε·tr K_uu/M: ∂δ/∂K_uu = ε/M·I
    d_noise = 0.5 * np.dot(alpha, alpha) - 0.5 * (n - np.trace(E)) / noise_var + 0.5 * trace_gap / noise_var**2
    return F, d_Kuu, d_Kuf, d_noise, -alpha


class TitsiasBound(Op):
    """Inputs K_uu (M, M), K_uf (M, n), Σᵢ k(xᵢ, xᵢ), t (n,), σ²; outputs F and its gradients with respect to each but the sum's (−1/(2σ²))."""

    __props__ = ()

    def make_node(self, Kuu, Kuf, kdiag_sum, t, noise_var):
        Kuu, Kuf, kdiag_sum, t, noise_var = (as_float64(v) for v in (Kuu, Kuf, kdiag_sum, t, noise_var))
        scalar = pt.scalar(dtype="float64")
        return Apply(self, [Kuu, Kuf, kdiag_sum, t, noise_var], [scalar, Kuu.type(), Kuf.type(), scalar.type(), t.type()])

    def perform(self, node, inputs, outputs):
        Kuu, Kuf, kdiag_sum, t, noise_var = inputs
        results = _bound_and_gradients(np.asarray(Kuu), np.ascontiguousarray(Kuf), float(kdiag_sum), np.asarray(t), float(noise_var))
        for out, value in zip(outputs, results, strict=True):
            out[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [(), shapes[0], shapes[1], (), shapes[3]]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("only F itself is differentiable, not its gradient outputs")
        _, d_Kuu, d_Kuf, d_noise, d_t = outputs
        g = cotangents[0]
        return [g * d_Kuu, g * d_Kuf, -0.5 * g / inputs[4], g * d_t, g * d_noise]  # ∂F/∂ Σk(xᵢ, xᵢ) = −1/(2σ²)


_TITSIAS_BOUND = TitsiasBound()


def titsias_bound(Kuu, Kuf, kdiag, t, sigma):
    """Symbolic F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²) from K_uu, K_uf, the diagonal k(xᵢ, xᵢ), t and σ; O(nM²)."""
    return _TITSIAS_BOUND(Kuu, Kuf, pt.sum(kdiag), t, pt.square(sigma))[0]
