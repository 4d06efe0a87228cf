"""The kernel of a feature map: k(x, x′) = φ(x)ᵀ Σ φ(x′), the weight-space prior seen in function space."""

import numpy as np
import pytensor.tensor as pt

from bayeskern._parameterised import known_shape
from bayeskern._validation import check_prior_cov, is_symbolic
from bayeskern.features import FeatureMap, design_tensor, n_features
from bayeskern.kernels.base import Kernel

__all__ = ["FeatureKernel", "prior_cov_product"]


def prior_cov_product(Phi, S, Phis):
    """Φ Σ Φsᵀ for Σ given as a scalar (Σ = s·I), a vector (diagonal) or a matrix."""
    if S.ndim == 0:
        return S * pt.dot(Phi, Phis.T)
    if S.ndim == 1:
        return pt.dot(Phi * S, Phis.T)
    return pt.dot(pt.dot(Phi, S), Phis.T)


class FeatureKernel(Kernel):
    """k(x, x′) = φ(x)ᵀ Σ φ(x′)   (the kernel trick: K = Φ Σ Φᵀ).

    `phi`: a feature map of `bayeskern.features` or any callable X (n, d) → Φ (n, M). `prior_cov`:
    Σ, the prior covariance of the weights — a scalar α⁻¹ (Σ = α⁻¹I), a vector (diagonal Σ), an
    (M, M) symmetric positive definite matrix, or a PyMC random variable of one of those shapes.
    """

    def __init__(self, phi, prior_cov):
        if not callable(phi):
            raise ValueError(f"phi must be a feature map or a callable X -> Phi, got {phi!r}")
        super().__init__(prior_cov=check_prior_cov(prior_cov))
        # a feature map is a child part: its numbers (centers, random weights …) are fed to the compiled
        # graph like the kernel's own, so one graph serves every map of the same structure; a plain
        # callable is a setting of the graph
        self.children, self._callable = ((phi,), None) if isinstance(phi, FeatureMap) else ((), phi)

    @property
    def phi(self):
        """The feature map φ (or the plain callable X → Φ)."""
        return self.children[0] if self.children else self._callable

    def _config(self):
        return () if self.children else self._callable

    def _check_input_dim(self, d: int) -> None:
        rows, M = known_shape(self.hyperparameters["prior_cov"])[:1], n_features(self.phi, d)
        if M is not None and rows and rows[0] is not None and rows[0] != M:  # (a PyMC Σ of a given size too)
            raise ValueError(f"prior_cov has {rows[0]} rows but phi gives M={M} features")

    def _build(self, X, Xs, diag, bind):
        def design(A):
            return self.phi._graph(A, bind) if self.children else design_tensor(self.phi, A)

        Phi, S = design(X), bind(self)["prior_cov"]
        if not diag:
            return prior_cov_product(Phi, S, Phi if Xs is None else design(Xs))
        # k(xᵢ, xᵢ) = φ(xᵢ)ᵀ Σ φ(xᵢ), row by row without forming Φ Σ Φᵀ
        if S.ndim == 0:
            return S * pt.sum(Phi**2, axis=1)
        if S.ndim == 1:
            return pt.sum(Phi**2 * S, axis=1)
        return pt.sum(pt.dot(Phi, S) * Phi, axis=1)

    def _build_pairs(self, X, rows, cols, bind):
        return self._build(X, None, False, bind)[rows, cols]  # read off Φ Σ Φᵀ (one BLAS product)

    def __repr__(self) -> str:
        S = self.hyperparameters["prior_cov"]
        shown = "<symbolic>" if is_symbolic(S) else (f"{float(S):g}" if np.ndim(S) == 0 else f"<{np.shape(S)} array>")
        return f"FeatureKernel({self.phi!r}, prior_cov={shown})"
