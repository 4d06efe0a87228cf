"""The sigmoid (hyperbolic tangent) kernel tanh(a·xᵀx′ + b), which is in general not positive semi-definite."""

import pytensor.tensor as pt

from bayeskern._validation import check_number
from bayeskern.kernels.base import Kernel

__all__ = ["Sigmoid"]


class Sigmoid(Kernel):
    """k(x, x′) = tanh(a·xᵀx′ + b), the "neural network" kernel of SVMs.

    `a`: the slope a of the inner product; `b`: the offset b. Not a Mercer kernel in general: b < 0
    makes k(0, 0) = tanh(b) negative, and even with b = 0 two collinear inputs can give a Gram
    matrix with a negative eigenvalue (x = 1, 2 with a = 1). For small a, tanh(b + a·s) ≈ tanh b +
    a(1 − tanh²b)·s − a²tanh b(1 − tanh²b)·s² + …: a constant plus a linear kernel (rank ≤ d + 1)
    and higher-order terms of both signs, so it is PSD on a few points and not on many —
    `bayeskern.checks.psd` tells on the data at hand. A GP given a Sigmoid kernel that is not PSD on
    its inputs refuses with a ValueError.
    """

    def __init__(self, a=1.0, b=0.0):
        a, b = check_number(a, "a"), check_number(b, "b")
        for name, v in (("a", a), ("b", b)):
            if v.ndim != 0:
                raise ValueError(f"{name} must be a scalar")
        super().__init__(a=a, b=b)

    def _full(self, X, Xs, p):
        Xs = X if Xs is None else Xs
        return pt.tanh(p["a"] * pt.dot(X, Xs.T) + p["b"])  # tanh(a·xᵀx′ + b)

    def _diag(self, X, p):
        return pt.tanh(p["a"] * pt.sum(X**2, axis=1) + p["b"])
