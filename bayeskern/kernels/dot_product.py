"""Dot-product kernels: linear xᵀx′ and polynomial (xᵀx′ + c)^M, PyMC's `Linear` and `Polynomial`."""

import pymc as pm
import pytensor.tensor as pt

from bayeskern._validation import check_integer, check_number
from bayeskern.kernels.base import Kernel

__all__ = ["Linear", "Polynomial"]


class Linear(Kernel):
    """k(x, x′) = xᵀx′."""

    def _full(self, X, Xs, p):
        return pm.gp.cov.Linear(X.type.shape[1], c=0.0).full(X, Xs)

    def _diag(self, X, p):
        return pm.gp.cov.Linear(X.type.shape[1], c=0.0).diag(X)

    def _pairs(self, X, rows, cols, p):
        return pt.sum(X[rows] * X[cols], axis=1)  # x_rowsᵀ x_cols, pair by pair


class Polynomial(Kernel):
    """k(x, x′) = (xᵀx′ + c)^M.

    `degree`: M, a positive integer. `c`: the offset c ≥ 0 (c > 0 keeps all monomials of degree ≤ M).
    """

    def __init__(self, degree: int, c=1.0):
        self.degree = check_integer(degree, "degree", 1)
        super().__init__(c=check_number(c, "c", nonnegative=True, scalar=True))

    def _config(self):
        return self.degree

    def _pymc(self, X, p):
        return pm.gp.cov.Polynomial(X.type.shape[1], c=0.0, d=self.degree, offset=p["c"])

    def _full(self, X, Xs, p):
        return self._pymc(X, p).full(X, Xs)

    def _diag(self, X, p):
        return self._pymc(X, p).diag(X)

    def __repr__(self) -> str:
        return f"Polynomial(degree={self.degree}, c={self.hyperparameters['c']!s})"
