"""log N(t | 0, C) as one PyTensor Op whose gradient is the seeds' ½(ααᵀ − C⁻¹), α = C⁻¹t."""

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.linalg import lapack

from bayeskern._linalg import LOG_2PI

__all__ = ["gaussian_logp"]


def logp_and_gradients(C: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """log N(t | 0, C) and its gradients with respect to C and t, or (−inf, 0, 0) if C is not PD.

    One Cholesky factorisation (LAPACK potrf), one solve (potrs) and the inverse from the factor
    (potri): about three factorisations' worth of work, against about seven for differentiating the
    Cholesky factorisation symbolically.
    """
    L, info = lapack.dpotrf(C.T, lower=1, clean=0, overwrite_a=0)  # C symmetric: Cᵀ is C in Fortran order
    if info != 0 or not np.all(np.isfinite(L)):
        # not numerically positive definite: the density is zero here, and the sampler or
        # optimiser must step back (no silent jitter inside a model's log-probability)
        return -np.inf, np.zeros_like(C), np.zeros_like(t)
    alpha, _ = lapack.dpotrs(L, t, lower=1)  # α = C⁻¹t
    # log p(t) = −½ tᵀα − Σ log Lᵢᵢ − n/2 log 2π   (R&W 2.30)
    logp = -0.5 * t @ alpha - np.sum(np.log(np.diag(L))) - 0.5 * len(t) * LOG_2PI
    C_inv, _ = lapack.dpotri(L, lower=1, overwrite_c=1)  # C⁻¹ from its factor, lower triangle only
    # ∂ log p / ∂C = ½ (ααᵀ − C⁻¹), so ∂ log p/∂θ = ½ tr((ααᵀ − C⁻¹) ∂C/∂θ)   (R&W 5.9)
    return float(logp), _half_outer_minus_symmetric(alpha, C_inv), -alpha  # ∂ log p / ∂t = −C⁻¹t


@numba.njit(cache=True)
def _half_outer_minus_symmetric(alpha, lower):
    """½ (ααᵀ − A) for a symmetric A of which only the lower triangle is stored, in one pass."""
    n = alpha.shape[0]
    out = np.empty((n, n))
    for j in range(n):
        for i in range(j, n):
            v = 0.5 * (alpha[i] * alpha[j] - lower[i, j])
            out[i, j] = v
            out[j, i] = v
    return out


class GaussianLogp(Op):
    """Outputs log N(t | 0, C), ∂/∂C and ∂/∂t; the pullback reuses the last two, so one factorisation serves both."""

    __props__ = ()

    def make_node(self, C, t):
        C = pt.as_tensor_variable(C, dtype="float64")
        t = pt.as_tensor_variable(t, dtype="float64")
        if C.ndim != 2 or t.ndim != 1:
            raise ValueError(f"gaussian_logp needs C (n, n) and t (n,), got ndim {C.ndim} and {t.ndim}")
        return Apply(self, [C, t], [pt.scalar(dtype="float64"), C.type(), t.type()])

    def perform(self, node, inputs, outputs):
        logp, d_C, d_t = logp_and_gradients(np.asarray(inputs[0], dtype=np.float64), np.asarray(inputs[1], dtype=np.float64))
        outputs[0][0] = np.asarray(logp)
        outputs[1][0] = d_C
        outputs[2][0] = d_t

    def infer_shape(self, node, shapes):
        return [(), shapes[0], shapes[1]]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("second derivatives of gaussian_logp are not implemented")
        _, d_C, d_t = outputs  # computed by the forward pass
        g = cotangents[0]
        return [g * d_C, g * d_t]


_GAUSSIAN_LOGP = GaussianLogp()


def gaussian_logp(C, t):
    """Symbolic log N(t | 0, C) for a symmetric positive definite C (−inf where it is not)."""
    return _GAUSSIAN_LOGP(C, t)[0]


from bayeskern import _gaussian_logp_numba  # noqa: E402, F401  (registers the Numba implementation)
