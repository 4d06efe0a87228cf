"""log N(t | 0, ΦVΦᵀ + σ²I) for a diagonal or full prior V, from the R factor of [Φ | t] alone, with its exact gradient, as one Op.

The evidence of a regression on M features (a BLR with a scalar, diagonal or matrix Σ; the collapsed HSGP) in O(k²M + M³)
an evaluation, k = min(n, M), no pass over the data. The statistics are those of a QR factorisation [Φ | t] = Q̃R̃
(`bayeskern.blr.DesignRows.r_factor`): Φ = QS with Q's k columns orthonormal, c = Qᵀt and ρ² = ‖t − QQᵀt‖², the
residual of least squares. Then C = Q(σ²I + SVSᵀ)Qᵀ + σ²(I − QQᵀ), and with B = σ²I + SVSᵀ = L Lᵀ (eigenvalues ≥ σ²):

  log p = −½ tᵀC⁻¹t − Σ log Lᵢᵢ − ½(n − k) log σ² − n/2 log 2π,   tᵀC⁻¹t = ‖L⁻¹c‖² + ρ²/σ²,
  Φᵀα = SᵀB⁻¹c (α = C⁻¹t), ΦᵀC⁻¹Φ = SᵀB⁻¹S = EᵀE with E = L⁻¹S, and ∂ log p/∂V = ½[(Φᵀα)(Φᵀα)ᵀ − EᵀE]
  (for a diagonal V its diagonal, ∂/∂vₖ = ½[(Φᵀα)ₖ² − (EᵀE)ₖₖ]);
  C(cV, cσ²) = c·C(V, σ²) gives Σ Vᵢⱼ ∂/∂Vᵢⱼ + σ² ∂/∂σ² = ½(tᵀC⁻¹t − n), hence ∂ log p/∂σ².

A full V enters through its Cholesky factor (SVSᵀ = (SL_V)(SL_V)ᵀ, V = L_V L_Vᵀ), which rejects a V that is not positive
definite, and is read from its lower triangle only, as `pt.linalg.cholesky` reads it: its gradient is that of the lower
triangle (the symmetric one's off-diagonal entries doubled, zeros above), as PyTensor's Cholesky gives.

tᵀC⁻¹t, log|C|, Φᵀα and ΦᵀC⁻¹Φ are sums of squares or products: nothing cancels, at any offset of t or ratio v/σ²
(from ΦᵀΦ and Φᵀt, tᵀC⁻¹t = (tᵀt − ‖L_B⁻¹√VΦᵀt‖²/σ²)/σ² loses ε·tᵀt/σ²: 0.2 nats for targets near 1e4 with σ = 0.01).
The identity for ∂/∂σ² subtracts terms of size n: σ²·∂/∂σ² is accurate to ~ε·n for a diagonal V, which is what a sampler
or optimiser over log σ reads; for a full V to ~ε·Σ|Vᵢⱼ ∂/∂Vᵢⱼ|, which grows with V's condition (a review measured
4e-9 at cond(V) = 2e12, against 1e-9 for the same problem as a diagonal V). The gradient is finite at vₖ = 0 (a diagonal
V). Only the value is differentiable once: the gradient outputs have no gradient of their own (a Hessian of the density
raises).

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

from bayeskern._gaussian_logp import as_float64
from bayeskern._linalg import LOG_2PI, potrf_succeeded

__all__ = ["WeightSpaceEvidence", "weight_space_evidence"]


def _evidence_and_gradients_scipy(S, c, rr: float, n: float, prior, noise_var: float):
    """(log p, ∂/∂prior, ∂/∂σ²) of the module's formulas for a prior of variances v (M,) or a covariance V (M, M); (−inf,
    0, 0) where B = σ²I + SVSᵀ is not numerically positive definite or σ², the prior are not valid (σ² > 0; v ≥ 0, or V
    positive definite).

    The C-order arrays are read by LAPACK and BLAS as their transposes (Fortran order, no copy): SL (k × M, L the prior's
    factor) as (SL)ᵀ, whose syrk gives B's upper triangle, factorised in place ("U", B = UᵀU, U = Lᵀ).
    """
    k, M = S.shape
    failed = (-np.inf, np.zeros(prior.shape), 0.0)
    SL_T = _scaled_design_transposed(S, prior) if noise_var > 0.0 else None  # (a NaN σ² fails)
    if SL_T is None:
        return failed
    B = blas.dsyrk(1.0, SL_T, trans=1, lower=0)  # (SL)(SL)ᵀ, upper triangle
    B[np.diag_indices(k)] += noise_var  # B = σ²I + SVSᵀ
    U, info = lapack.dpotrf(B, lower=0, clean=0, overwrite_a=1)
    if not potrf_succeeded(U, info):
        return failed
    w = lapack.dtrtrs(U, c, lower=0, trans=1)[0]  # w = L⁻¹c
    quad = blas.ddot(w, w) + rr / noise_var  # tᵀC⁻¹t = ‖L⁻¹c‖² + ρ²/σ²
    logp = -0.5 * quad - np.log(np.diagonal(U)).sum() - 0.5 * (n - k) * np.log(noise_var) - 0.5 * n * LOG_2PI
    z = lapack.dtrtrs(U, w, lower=0, trans=0)[0]  # z = L⁻ᵀw = B⁻¹c
    phi_alpha = blas.dgemv(1.0, S.T, z)  # Φᵀα = Sᵀz
    E = lapack.dtrtrs(U, S, lower=0, trans=1)[0]  # E = L⁻¹S
    if prior.ndim == 1:
        phi_C_phi = np.array([blas.ddot(E[:, j], E[:, j]) for j in range(M)])  # (ΦᵀC⁻¹Φ)ⱼⱼ = (EᵀE)ⱼⱼ
        d_prior, read = 0.5 * (phi_alpha**2 - phi_C_phi), prior
    else:
        EtE = blas.dsyrk(1.0, E, trans=1, lower=0)  # ΦᵀC⁻¹Φ = EᵀE, upper triangle
        # ∂/∂Vᵢⱼ of the lower triangle read: ½[(Φᵀα)ᵢ² − (EᵀE)ᵢᵢ] on the diagonal, twice ½[(Φᵀα)ᵢ(Φᵀα)ⱼ − (EᵀE)ᵢⱼ] below
        d_prior = np.tril(np.outer(phi_alpha, phi_alpha) - EtE.T, -1)
        d_prior[np.diag_indices(M)] = 0.5 * (phi_alpha**2 - np.diagonal(EtE))
        read = np.tril(prior)
    d_noise = (0.5 * (quad - n) - blas.ddot(read.ravel(), d_prior.ravel())) / noise_var  # σ²∂/∂σ² = ½(tᵀC⁻¹t − n) − Σ Vᵢⱼ∂/∂Vᵢⱼ
    return logp, d_prior, d_noise


def _scaled_design_transposed(S, prior):
    """(S L)ᵀ (M × k, Fortran order) for the prior's factor L (V = LLᵀ: √v, or the Cholesky factor of V's lower triangle,
    potrf "U" on V's transpose, then trmm), or None where the prior is not valid (a negative or NaN variance; V not
    numerically positive definite)."""
    if prior.ndim == 1:
        return (S * np.sqrt(prior)).T if np.all(prior >= 0.0) else None  # S√V
    U, info = lapack.dpotrf(prior.T, lower=0, clean=0)  # Lᵀ (copied: the prior is not written)
    if not potrf_succeeded(U, info):
        return None
    return blas.dtrmm(1.0, U, S.T, side=0, lower=0, trans_a=0)  # (SL)ᵀ = Lᵀ Sᵀ


class WeightSpaceEvidence(Op):
    """Inputs S (k, M), c (k,), ρ², n, the prior — variances v (M,), or with `matrix` a covariance V (M, M) of which the
    lower triangle is read — and σ²; outputs log N(t | 0, ΦVΦᵀ + σ²I), ∂/∂prior and ∂/∂σ². Only the prior and σ² are
    differentiable: the statistics are data."""

    __props__ = ("matrix",)

    def __init__(self, matrix: bool = False):
        self.matrix = bool(matrix)
        super().__init__()

    def make_node(self, S, c, rr, n, prior, noise_var):
        inputs = [as_float64(x) for x in (S, c, rr, n, prior, noise_var)]
        if tuple(x.ndim for x in inputs) != (2, 1, 0, 0, 1 + self.matrix, 0):
            prior_shape = "a covariance (M, M)" if self.matrix else "variances (M,)"
            raise ValueError(f"weight_space_evidence needs S (k, M), c (k,), a scalar ρ², a scalar n, {prior_shape} and a "
                             "scalar σ²")
        scalar = pt.scalar(dtype="float64")
        return Apply(self, inputs, [scalar, inputs[4].type(), scalar.type()])

    def perform(self, node, inputs, outputs):
        S, c, rr, n, prior, noise_var = inputs
        _check_shapes(S.shape, c.shape, prior.shape)
        results = _evidence_and_gradients_scipy(S, c, float(rr), float(n), prior, float(noise_var))
        for out, value in zip(outputs, results, strict=True):
            out[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [(), shapes[4], ()]

    def pullback(self, inputs, outputs, cotangents):
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            raise NotImplementedError("only the evidence itself is differentiable, not its gradient outputs")
        _, d_prior, d_noise = outputs
        g = cotangents[0]
        data = [grad_not_implemented(self, i, inputs[i], "the statistics S, c, ρ², n are data") for i in range(4)]
        return [*data, g * d_prior, g * d_noise]


def _check_shapes(S_shape: tuple, c_shape: tuple, prior_shape: tuple) -> None:
    if not (S_shape[0] == c_shape[0] and all(size == S_shape[1] for size in prior_shape)):
        raise ValueError(f"weight_space_evidence needs S (k, M), c (k,) and variances (M,) or a covariance (M, M), got "
                         f"shapes {S_shape}, {c_shape} and {prior_shape}")


_WEIGHT_SPACE_EVIDENCE = {False: WeightSpaceEvidence(), True: WeightSpaceEvidence(matrix=True)}


def weight_space_evidence(r_factor, n, prior, noise_var):
    """Symbolic log N(t | 0, ΦVΦᵀ + σ²I), V = diag(prior) for a vector `prior`, V = `prior` (its lower triangle) for a
    matrix, σ² = noise_var, from `r_factor` = (S, c, ρ²) of n data (`DesignRows.r_factor`); −inf where V is not valid or
    σ²I + SVSᵀ is not numerically positive definite."""
    S, c, rr = r_factor
    return _WEIGHT_SPACE_EVIDENCE[pt.as_tensor_variable(prior).ndim == 2](S, c, rr, n, prior, noise_var)[0]
