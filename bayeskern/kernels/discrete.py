"""Kernels on discrete objects: the set kernel 2^|A ∩ B| on binary indicator vectors (seed 003)."""

import pymc as pm
import pytensor.tensor as pt

from bayeskern.kernels.base import Kernel

__all__ = ["SetIntersection"]


class SetIntersection(Kernel):
    """k(x, x′) = 2^|x ∩ x′| for sets written as 0/1 indicator vectors, where |x ∩ x′| = xᵀx′.

    Its feature map is the power set: φ_A(x) = 1 if A ⊆ x (`bayeskern.features.PowerSet`). The inputs
    must be 0/1; other values give 2^(xᵀx′), which is not a set kernel.
    """

    def _full(self, X, Xs, p):
        return pt.power(2.0, pm.gp.cov.Linear(X.type.shape[1], c=0.0).full(X, Xs))  # 2^(xᵀx′)

    def _diag(self, X, p):
        return pt.power(2.0, pt.sum(pt.square(X), axis=1))
