"""log N(t | 0, ΦVΦᵀ + σ²I) for a diagonal prior V, from the R factor of [Φ | t] alone, with its exact gradient, as one Op.

The evidence of a regression on M features (a BLR with a scalar or diagonal Σ, the collapsed HSGP) in O(k²M) an
evaluation, k = min(n, M), no pass over the data. The statistics are those of a QR factorisation [Φ | t] = Q̃R̃
(`bayeskern.blr.DesignRows.r_factor`): Φ = QS with Q's k columns orthonormal, c = Qᵀt and ρ² = ‖t − QQᵀt‖², the
residual of least squares. Then C = Q(σ²I + SVSᵀ)Qᵀ + σ²(I − QQᵀ), and with B = σ²I + SVSᵀ = L Lᵀ (eigenvalues ≥ σ²):

  log p = −½ tᵀC⁻¹t − Σ log Lᵢᵢ − ½(n − k) log σ² − n/2 log 2π,   tᵀC⁻¹t = ‖L⁻¹c‖² + ρ²/σ²,
  Φᵀα = SᵀB⁻¹c (α = C⁻¹t), ΦᵀC⁻¹Φ = SᵀB⁻¹S = EᵀE with E = L⁻¹S, and ∂ log p/∂vₖ = ½[(Φᵀα)ₖ² − (EᵀE)ₖₖ];
  C(cV, cσ²) = c·C(V, σ²) gives Σ vₖ ∂/∂vₖ + σ² ∂/∂σ² = ½(tᵀC⁻¹t − n), hence ∂ log p/∂σ².

tᵀC⁻¹t, log|C|, Φᵀα and ΦᵀC⁻¹Φ are sums of squares or products: nothing cancels, at any offset of t or ratio v/σ²
(from ΦᵀΦ and Φᵀt, tᵀC⁻¹t = (tᵀt − ‖L_B⁻¹√VΦᵀt‖²/σ²)/σ² loses ε·tᵀt/σ²: 0.2 nats for targets near 1e4 with σ = 0.01).
The identity for ∂/∂σ² subtracts terms of size n: σ²·∂/∂σ² is accurate to ~ε·n, which is what a sampler or optimiser
over log σ reads. The gradient is finite at vₖ = 0. Only the value is differentiable once: the gradient outputs have no
gradient of their own (a Hessian of the density raises).

Differentiating a Cholesky factor symbolically instead compiled ~10 linear-algebra Ops under PyTensor's Numba backend,
one per argument layout at 1–2 s each. Two implementations of the one algorithm, as for `GaussianLogp`: SciPy's LAPACK
and BLAS here (`perform`, the numpy mode), the same routines from Numba code in `bayeskern._weight_space_evidence_numba`,
on the same memory layouts: a test holds their gradients to the bit.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.linalg import blas, lapack

from bayeskern._linalg import LOG_2PI

__all__ = ["WeightSpaceEvidence", "weight_space_evidence"]


def _evidence_and_gradients_scipy(S, c, rr: float, n: float, v, noise_var: float):
    """(log p, ∂/∂v, ∂/∂σ²) of the module's formulas; (−inf, 0, 0) where B = σ²I + SVSᵀ is not numerically positive
    definite or σ², v are not valid (σ² > 0, v ≥ 0).

    The C-order arrays are read by LAPACK and BLAS as their transposes (Fortran order, no copy): SD (k × M) as (SD)ᵀ,
    whose syrk gives B's upper triangle, factorised in place ("U", B = UᵀU, U = Lᵀ).
    """
    k, M = S.shape
    failed = (-np.inf, np.zeros(M), 0.0)
    if not (noise_var > 0.0 and np.all(v >= 0.0)):  # (a NaN fails both)
        return failed
    SD = S * np.sqrt(v)  # S√V
    B = blas.dsyrk(1.0, SD.T, trans=1, lower=0)  # (SD)(SD)ᵀ, upper triangle
    B[np.diag_indices(k)] += noise_var  # B = σ²I + SVSᵀ
    U, info = lapack.dpotrf(B, lower=0, clean=0, overwrite_a=1)
    diagonal = np.diagonal(U)
    if info != 0 or not np.all(np.isfinite(diagonal) & (diagonal > 0.0)):
        return failed
    w = lapack.dtrtrs(U, c, lower=0, trans=1)[0]  # w = L⁻¹c
    quad = blas.ddot(w, w) + rr / noise_var  # tᵀC⁻¹t = ‖L⁻¹c‖² + ρ²/σ²
    logp = -0.5 * quad - np.log(diagonal).sum() - 0.5 * (n - k) * np.log(noise_var) - 0.5 * n * LOG_2PI
    z = lapack.dtrtrs(U, w, lower=0, trans=0)[0]  # z = L⁻ᵀw = B⁻¹c
    phi_alpha = blas.dgemv(1.0, S.T, z)  # Φᵀα = Sᵀz
    E = lapack.dtrtrs(U, S, lower=0, trans=1)[0]  # E = L⁻¹S
    phi_C_phi = np.array([blas.ddot(E[:, j], E[:, j]) for j in range(M)])  # (ΦᵀC⁻¹Φ)ⱼⱼ = (EᵀE)ⱼⱼ
    d_v = 0.5 * (phi_alpha**2 - phi_C_phi)
    d_noise = (0.5 * (quad - n) - blas.ddot(v, d_v)) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ vⱼ∂/∂vⱼ
    return logp, d_v, d_noise


def _float64(x):
    """A float64 tensor variable (as_tensor_variable leaves a variable's own dtype: an int64 n, a float32 σ²)."""
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


class WeightSpaceEvidence(Op):
    """Inputs S (k, M), c (k,), ρ², n, the prior variances v (M,) and σ²; outputs log N(t | 0, ΦVΦᵀ + σ²I), ∂/∂v and
    ∂/∂σ². Only v and σ² are differentiable: the statistics are data."""

    __props__ = ()

    def make_node(self, S, c, rr, n, variances, noise_var):
        inputs = [_float64(x) for x in (S, c, rr, n, variances, noise_var)]
        if tuple(x.ndim for x in inputs) != (2, 1, 0, 0, 1, 0):
            raise ValueError("weight_space_evidence needs S (k, M), c (k,), a scalar ρ², a scalar n, variances (M,) and a "
                             "scalar σ²")
        scalar = pt.scalar(dtype="float64")
        return Apply(self, inputs, [scalar, pt.vector(dtype="float64", shape=inputs[4].type.shape), scalar.type()])

    def perform(self, node, inputs, outputs):
        S, c, rr, n, variances, noise_var = inputs
        _check_shapes(S.shape, c.shape, variances.shape)
        results = _evidence_and_gradients_scipy(S, c, float(rr), float(n), variances, float(noise_var))
        for out, value in zip(outputs, results, strict=True):
            out[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [(), shapes[4], ()]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("only the evidence itself is differentiable, not its gradient outputs")
        _, d_v, d_noise = outputs
        g = cotangents[0]
        data = [grad_not_implemented(self, i, inputs[i], "the statistics S, c, ρ², n are data") for i in range(4)]
        return [*data, g * d_v, g * d_noise]


def _check_shapes(S_shape: tuple, c_shape: tuple, v_shape: tuple) -> None:
    if not (S_shape[0] == c_shape[0] and S_shape[1] == v_shape[0]):
        raise ValueError(f"weight_space_evidence needs S (k, M), c (k,) and variances (M,), got shapes {S_shape}, {c_shape} "
                         f"and {v_shape}")


_WEIGHT_SPACE_EVIDENCE = WeightSpaceEvidence()


def weight_space_evidence(r_factor, n, variances, noise_var):
    """Symbolic log N(t | 0, ΦVΦᵀ + σ²I), V = diag(variances), σ² = noise_var, from `r_factor` = (S, c, ρ²) of n data
    (`DesignRows.r_factor`); −inf where σ²I + SVSᵀ is not numerically positive definite."""
    S, c, rr = r_factor
    return _WEIGHT_SPACE_EVIDENCE(S, c, rr, n, variances, noise_var)[0]
