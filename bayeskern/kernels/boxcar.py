"""The boxcar (top-hat) kernel 1[‖x − x′‖ ≤ h] (seed 001), a smoothing kernel that is not a Mercer kernel."""

import pytensor.tensor as pt

from bayeskern._fills import filled
from bayeskern._validation import check_number
from bayeskern.kernels.base import Kernel

__all__ = ["Boxcar"]


class Boxcar(Kernel):
    """k(x, x′) = 1[‖x − x′‖ ≤ h], the boxcar (top-hat) smoothing kernel, without normalisation.

    `width`: h > 0, the half-width of the box. A Nadaraya–Watson smoother uses it happily, but it is
    not a Mercer kernel: on x = 0, 1, 2 with h = 1.5 its Gram matrix has the eigenvalue 1 − √2 < 0
    (`bayeskern.checks.psd` flags it). The distance is formed by direct differences (n·m·d memory),
    so that k is exactly symmetric and exact on the boundary ‖x − x′‖ = h.
    """

    def __init__(self, width=1.0):
        width = check_number(width, "width", positive=True)
        if width.ndim != 0:
            raise ValueError("width must be a scalar")
        super().__init__(width=width)

    def _full(self, X, Xs, p):
        Xs = X if Xs is None else Xs
        r2 = pt.sum((X[:, None, :] - Xs[None, :, :]) ** 2, axis=-1)  # ‖x − x′‖²
        return pt.cast(pt.le(r2, p["width"] ** 2), "float64")  # 1[‖x − x′‖ ≤ h]

    def _diag(self, X, p):
        return filled(1.0, X.shape[0])
