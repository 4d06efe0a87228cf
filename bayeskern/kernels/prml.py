"""The seeds' (PRML eq. 6.63) sum kernel θ0·exp(−θ1/2‖x−x′‖²) + θ2 + θ3·xᵀx′, built from the kernel algebra."""

import numpy as np
import pytensor.tensor as pt

from bayeskern._validation import check_number, is_symbolic
from bayeskern.kernels.base import Scaled, Sum, _show
from bayeskern.kernels.constant import Constant
from bayeskern.kernels.dot_product import Linear
from bayeskern.kernels.stationary import RBF

__all__ = ["PRML"]


class PRML(Sum):
    """k(x, x′) = θ0·exp(−θ1/2·‖x − x′‖²) + θ2 + θ3·xᵀx′   (PRML 6.63).

    `theta0`: θ0 ≥ 0, the variance of the squared-exponential term. `theta1`: θ1 > 0, its inverse
    squared length scale (ℓ = 1/√θ1). `theta2`: θ2 ≥ 0, a constant offset. `theta3`: θ3 ≥ 0, the
    weight of the linear term. Each is a number or a PyMC random variable.
    """

    def __init__(self, theta0, theta1, theta2, theta3):
        theta0 = check_number(theta0, "theta0", nonnegative=True, scalar=True)
        theta1 = check_number(theta1, "theta1", positive=True, scalar=True)
        theta2 = check_number(theta2, "theta2", nonnegative=True, scalar=True)
        theta3 = check_number(theta3, "theta3", nonnegative=True, scalar=True)
        self.theta = (theta0, theta1, theta2, theta3)
        lengthscale = 1.0 / (pt.sqrt(theta1) if is_symbolic(theta1) else np.sqrt(theta1))
        super().__init__(Scaled(RBF(lengthscale), theta0), Constant(theta2), Scaled(Linear(), theta3))

    def __repr__(self) -> str:
        rbf, constant, linear = self.children
        ell = rbf.children[0].hyperparameters["lengthscale"]
        now = (rbf.hyperparameters["scale"], ell, constant.hyperparameters["c"], linear.hyperparameters["scale"])
        # after map_hyperparameters (numbers plugged in) the children hold the values: θ1 = 1/ℓ²
        theta = self.theta if any(is_symbolic(v) for v in now) else (now[0], 1.0 / np.asarray(ell) ** 2, now[2], now[3])
        return "PRML(" + ", ".join(f"theta{i}={_show(t)}" for i, t in enumerate(theta)) + ")"
