"""log N(t | 0, ΦVΦᵀ + σ²I) for a diagonal prior V, from ΦᵀΦ, Φᵀt and tᵀt alone, with its exact gradient, as one Op.

The evidence of a regression on M features (a BLR with a scalar or diagonal Σ, the collapsed HSGP) in O(M³), no pass
over the data. With D = √V, P = ΦᵀΦ, q = Φᵀt and B = I + DPD/σ² = L Lᵀ (eigenvalues ≥ 1, never jittered):

  log p = −½ tᵀC⁻¹t − ½ n log σ² − Σ log Lᵢᵢ − n/2 log 2π,   tᵀC⁻¹t = (tᵀt − ‖w‖²/σ²)/σ²,  w = L⁻¹Dq
  (Woodbury and the determinant lemma). With α = C⁻¹t, ∂ log p/∂vₖ = ½[(Φᵀα)ₖ² − (ΦᵀC⁻¹Φ)ₖₖ], where
  Φᵀα = (q − PDu)/σ², u = L⁻ᵀw/σ² = B⁻¹Dq/σ², and ΦᵀC⁻¹Φ = P/σ² − EᵀE/σ⁴, E = L⁻¹DP: finite at vₖ = 0.
  C(cV, cσ²) = c·C(V, σ²) gives Σ vₖ ∂/∂vₖ + σ² ∂/∂σ² = ½(tᵀC⁻¹t − n), hence ∂ log p/∂σ².

Differentiating the Cholesky factor symbolically instead compiled ~10 linear-algebra Ops under PyTensor's Numba
backend, one per argument layout at 1–2 s each (a BLR's first NUTS compile: 31 s on an empty compile directory). Two
implementations of the one algorithm, as for `GaussianLogp`: SciPy's LAPACK here (`perform`, the numpy mode), LAPACK
from Numba code in `bayeskern._weight_space_evidence_numba`; a test holds them to round-off.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.linalg import blas, lapack

from bayeskern._linalg import LOG_2PI

__all__ = ["WeightSpaceEvidence", "weight_space_evidence"]


def _evidence_and_gradients_scipy(P, q, tt: float, n: float, v, noise_var: float):
    """(log p, ∂/∂v, ∂/∂σ²) of the module's formulas; (−inf, 0, 0) where B = I + DPD/σ² is not numerically positive
    definite or σ², v are not valid (σ² > 0, v ≥ 0).

    B's lower triangle in C order is, read through its transpose (Fortran order, no copy), the upper triangle LAPACK
    factorises in place ("U", B = UᵀU, U = Lᵀ). Every product is SciPy's BLAS on the same memory as in the Numba
    implementation, whose `np.dot` calls the same routines: the gradients are the same to the bit.
    """
    M = q.shape[0]
    failed = (-np.inf, np.zeros(M), 0.0)
    if not (noise_var > 0.0 and np.all(v >= 0.0)):  # (a NaN fails both)
        return failed
    D = np.sqrt(v)
    A = np.multiply.outer(D, D) * P / noise_var  # DPD/σ²
    A[np.diag_indices(M)] += 1.0  # B = I + DPD/σ²
    U, info = lapack.dpotrf(A.T, lower=0, clean=0, overwrite_a=1)
    diagonal = np.diagonal(U)
    if info != 0 or not np.all(np.isfinite(diagonal) & (diagonal > 0.0)):
        return failed
    w = lapack.dtrtrs(U, D * q, lower=0, trans=1)[0]  # w = L⁻¹Dq
    quad = (tt - blas.ddot(w, w) / noise_var) / noise_var  # tᵀC⁻¹t
    logp = -0.5 * quad - 0.5 * n * np.log(noise_var) - np.log(diagonal).sum() - 0.5 * n * LOG_2PI
    Du = D * (lapack.dtrtrs(U, w, lower=0, trans=0)[0] / noise_var)  # Du, u = L⁻ᵀw/σ² = B⁻¹Dq/σ²
    phi_alpha = (q - blas.dgemv(1.0, P.T, Du, trans=1)) / noise_var  # Φᵀα = (q − PDu)/σ²
    E = lapack.dtrtrs(U, D[:, None] * P, lower=0, trans=1)[0]  # E = L⁻¹DP
    E_norms = np.array([blas.ddot(E[:, k], E[:, k]) for k in range(M)])  # (EᵀE)ₖₖ
    phi_C_phi = np.diagonal(P) / noise_var - E_norms / noise_var**2  # (ΦᵀC⁻¹Φ)ₖₖ = Pₖₖ/σ² − (EᵀE)ₖₖ/σ⁴
    d_v = 0.5 * (phi_alpha**2 - phi_C_phi)
    d_noise = (0.5 * (quad - n) - blas.ddot(v, d_v)) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ vₖ∂/∂vₖ
    return logp, d_v, d_noise


class WeightSpaceEvidence(Op):
    """Inputs ΦᵀΦ (M, M), Φᵀt (M,), tᵀt, n, the prior variances v (M,) and σ²; outputs log N(t | 0, ΦVΦᵀ + σ²I),
    ∂/∂v and ∂/∂σ². Only v and σ² are differentiable: the statistics are data."""

    __props__ = ()

    def make_node(self, gram, proj, tt, n, variances, noise_var):
        gram, proj, tt, n, variances, noise_var = (
            pt.as_tensor_variable(x, dtype="float64") for x in (gram, proj, tt, n, variances, noise_var)
        )
        if (gram.ndim, proj.ndim, tt.ndim, n.ndim, variances.ndim, noise_var.ndim) != (2, 1, 0, 0, 1, 0):
            raise ValueError("weight_space_evidence needs ΦᵀΦ (M, M), Φᵀt (M,), a scalar tᵀt, a scalar n, variances (M,) "
                             "and a scalar σ²")
        scalar = pt.scalar(dtype="float64")
        return Apply(self, [gram, proj, tt, n, variances, noise_var], [scalar, variances.type(), scalar.type()])

    def perform(self, node, inputs, outputs):
        gram, proj, tt, n, variances, noise_var = (np.asarray(x, dtype=np.float64) for x in inputs)
        if not gram.shape == (proj.shape[0],) * 2 == (variances.shape[0],) * 2:
            raise ValueError(f"weight_space_evidence needs ΦᵀΦ (M, M), Φᵀt (M,) and variances (M,), got shapes "
                             f"{gram.shape}, {proj.shape} and {variances.shape}")
        results = _evidence_and_gradients_scipy(gram, proj, float(tt), float(n), variances, float(noise_var))
        for out, value in zip(outputs, results, strict=True):
            out[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [(), shapes[4], ()]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("only the evidence itself is differentiable, not its gradient outputs")
        _, d_v, d_noise = outputs
        g = cotangents[0]
        data = [grad_not_implemented(self, i, inputs[i], "the statistics ΦᵀΦ, Φᵀt, tᵀt, n are data") for i in range(4)]
        return [*data, g * d_v, g * d_noise]


_WEIGHT_SPACE_EVIDENCE = WeightSpaceEvidence()


def weight_space_evidence(gram, proj, tt, n, variances, noise_var):
    """Symbolic log N(t | 0, ΦVΦᵀ + σ²I), V = diag(variances), σ² = noise_var, from ΦᵀΦ, Φᵀt, tᵀt and n (−inf where
    I + √V ΦᵀΦ √V/σ² is not numerically positive definite)."""
    return _WEIGHT_SPACE_EVIDENCE(gram, proj, tt, n, variances, noise_var)[0]
