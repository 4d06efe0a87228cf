"""Titsias' collapsed bound F and its gradient as one PyTensor Op: two n-sized products (K_uf K_fu and the gradient), the rest M × M.

F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²), Q = K_fu A K_uf, A = (K_uu + δI)⁻¹, δ = INDUCING_JITTER · mean diag K_uu.
The gradient is written out (derivation in `_bound_and_gradients`) instead of differentiating the Cholesky
factors symbolically: one O(nM²) product for the value, one for ∂F/∂K_uf. One function is both the Python
linker's `perform` and, in object mode, PyTensor's Numba backend.
"""

import warnings

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as numba_basic

from bayeskern._linalg import LOG_2PI

__all__ = ["INDUCING_JITTER", "TitsiasBound", "titsias_bound"]

#: K_uu + δI with δ = INDUCING_JITTER · mean diag K_uu, in the likelihood and the conditioned model alike: inducing
#: points close together make K_uu singular to round-off. Q with δ is still ≤ K, so F stays a lower bound.
INDUCING_JITTER = 1e-6


def _bound_and_gradients(Kuu, Kuf, kdiag_sum, t, noise_var):
    """(F, ∂F/∂K_uu, ∂F/∂K_uf, ∂F/∂σ², ∂F/∂t); F = −inf and zero gradients where K_uu + δI or B is not positive definite.

    With L = chol(K_uu + δI), P = K_uf K_fu, B = I + L⁻¹PL⁻ᵀ/σ² = L_B L_Bᵀ, r = K_uf t, Σ = L⁻ᵀB⁻¹L⁻¹ = (K_uu + δI + P/σ²)⁻¹:
      F = −n/2 log 2π − Σ log diag L_B − (n/2) log σ² − ½tᵀα − ½ tr K/σ² + ½ tr(AP)/σ²,  α = C⁻¹t = (t − K_fu Σ r/σ²)/σ²
    and, from ∂F/∂Q = ½(ααᵀ − C⁻¹) + I/(2σ²) with Woodbury (A K_uf C⁻¹ = Σ K_uf/σ²), b = A K_uf α:
      ∂F/∂K_uf = b αᵀ + (A − Σ) K_uf/σ²,   ∂F/∂(K_uu + δI) = −½ b bᵀ − ½ (A − Σ) P A/σ²,
      ∂F/∂σ² = ½ αᵀα − ½ tr C⁻¹ + (tr K − tr AP)/(2σ⁴),  tr C⁻¹ = n/σ² − tr(ΣP)/σ⁴.
    """
    M, n = Kuf.shape
    scale = np.trace(Kuu) / M
    failed = (-np.inf, np.zeros((M, M)), np.zeros((M, n)), 0.0, np.zeros(n))
    if not (np.isfinite(scale) and scale > 0.0 and noise_var > 0.0):
        return failed
    Kj = Kuu + INDUCING_JITTER * scale * np.eye(M)
    P = np.dot(Kuf, Kuf.T)  # K_uf K_fu: O(nM²)
    r = np.dot(Kuf, t)
    try:
        L = np.linalg.cholesky(Kj)
        Li = np.linalg.inv(L)  # L⁻¹ (M × M; L is well conditioned: cond(L)² = cond(K_uu + δI))
        LB = np.linalg.cholesky(np.eye(M) + np.dot(np.dot(Li, P), Li.T) / noise_var)
    except Exception:  # not positive definite: no density here
        return failed
    LBi = np.linalg.inv(LB)
    A = np.dot(Li.T, Li)  # (K_uu + δI)⁻¹
    W = np.dot(LBi, Li)
    Sigma = np.dot(W.T, W)  # Σ = L⁻ᵀ B⁻¹ L⁻¹
    Sr = np.dot(Sigma, r) / noise_var
    alpha = (t - np.dot(Kuf.T, Sr)) / noise_var  # α = C⁻¹t = (t − K_fu Σ r/σ²)/σ²   (Woodbury)
    AP, SP = np.dot(A, P), np.dot(Sigma, P)
    tr_AP, tr_SP = np.trace(AP), np.trace(SP)
    F = -0.5 * n * LOG_2PI - np.sum(np.log(np.diag(LB))) - 0.5 * n * np.log(noise_var) - 0.5 * np.dot(t, alpha) - 0.5 * (kdiag_sum - tr_AP) / noise_var
    b = np.dot(A, (r - np.dot(P, Sr)) / noise_var)  # A K_uf α, with K_uf α = (r − PΣr/σ²)/σ²
    D = A - Sigma
    d_Kuf = np.outer(b, alpha) + np.dot(D, Kuf) / noise_var  # the second O(nM²) product
    d_Kj = -0.5 * np.outer(b, b) - 0.5 * np.dot(np.dot(D, P), A) / noise_var
    d_Kj = 0.5 * (d_Kj + d_Kj.T)
    d_Kuu = d_Kj + (INDUCING_JITTER / M) * np.trace(d_Kj) * np.eye(M)  # δ = ε·tr K_uu/M: ∂δ/∂K_uu = ε/M·I
    d_noise = 0.5 * np.dot(alpha, alpha) - 0.5 * (n / noise_var - tr_SP / noise_var**2) + 0.5 * (kdiag_sum - tr_AP) / noise_var**2
    return F, d_Kuu, d_Kuf, d_noise, -alpha


class TitsiasBound(Op):
    """Inputs K_uu (M, M), K_uf (M, n), Σᵢ k(xᵢ, xᵢ), t (n,), σ²; outputs F and its gradients with respect to each but the sum's (−1/(2σ²))."""

    __props__ = ()

    def make_node(self, Kuu, Kuf, kdiag_sum, t, noise_var):
        Kuu, Kuf, t = (pt.as_tensor_variable(v, dtype="float64") for v in (Kuu, Kuf, t))
        kdiag_sum, noise_var = pt.as_tensor_variable(kdiag_sum, dtype="float64"), pt.as_tensor_variable(noise_var, dtype="float64")
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


@numba_basic.register_funcify_default_op_cache_key(TitsiasBound)
def _funcify_titsias_bound(op, node, **kwargs):
    """PyTensor's Numba backend runs the numpy `perform` in object mode: BLAS and LAPACK do the O(nM²) and O(M³) work
    either way, and compiling them with Numba cost ~37 s on an empty cache and ran slower (0.44 s against 0.34 s per
    value and gradient of the bound at n = 20 000, M = 300, d = 5). PyTensor's fallback warns that it is taken: here
    it is chosen, so that warning is not passed on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
        return numba_basic.generate_fallback_impl(op, node, **kwargs), 3


_TITSIAS_BOUND = TitsiasBound()


def titsias_bound(Kuu, Kuf, kdiag, t, sigma):
    """Symbolic F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²) from K_uu, K_uf, the diagonal k(xᵢ, xᵢ), t and σ; O(nM²)."""
    return _TITSIAS_BOUND(Kuu, Kuf, pt.sum(kdiag), t, pt.square(sigma))[0]
