"""Input-independent kernels: a constant c and white noise σ²δ(x, x′), PyMC's `Constant` and `WhiteNoise`."""

import pymc as pm
import pytensor.tensor as pt

from bayeskern._validation import check_number, check_squarable
from bayeskern.kernels.base import Kernel

__all__ = ["Constant", "White"]


class Constant(Kernel):
    """k(x, x′) = c, with c ≥ 0 a scalar (the prior variance of a constant offset)."""

    def __init__(self, c):
        super().__init__(c=check_number(c, "c", nonnegative=True, scalar=True))

    def _full(self, X, Xs, p):
        return pm.gp.cov.Constant(p["c"]).full(X, Xs)

    def _diag(self, X, p):
        return pm.gp.cov.Constant(p["c"]).diag(X)

    def _pairs(self, X, rows, cols, p):
        return pm.gp.cov.Constant(p["c"]).diag(rows[:, None])  # c for every pair


class White(Kernel):
    """k(x, x′) = σ² δ(x, x′): σ² on the diagonal of K(X, X), zero between two different input sets.

    `sigma`: σ ≥ 0, a scalar, the standard deviation of the white noise (σ² must be finite).
    """

    def __init__(self, sigma):
        super().__init__(sigma=check_squarable(check_number(sigma, "sigma", nonnegative=True, scalar=True), "sigma"))

    def _full(self, X, Xs, p):
        return pm.gp.cov.WhiteNoise(p["sigma"]).full(X, Xs)

    def _diag(self, X, p):
        return pm.gp.cov.WhiteNoise(p["sigma"]).diag(X)

    def _pairs(self, X, rows, cols, p):
        return pt.square(p["sigma"]) * pt.eq(rows, cols)  # σ² δ(x, x′): σ² where a pair is one point with itself
