"""Covariance functions as PyTensor graphs: k.full(X) for PyMC models, k.evaluate(X) for numbers."""

from bayeskern.kernels.base import Kernel, Product, Scaled, Sum
from bayeskern.kernels.constant import Constant, White
from bayeskern.kernels.discrete import SetIntersection
from bayeskern.kernels.dot_product import Linear, Polynomial
from bayeskern.kernels.feature import FeatureKernel
from bayeskern.kernels.prml import PRML
from bayeskern.kernels.stationary import RBF, MahalanobisRBF, Matern12, Matern32, Matern52, Periodic, RatQuad

__all__ = [
    "PRML",
    "RBF",
    "Constant",
    "FeatureKernel",
    "Kernel",
    "Linear",
    "MahalanobisRBF",
    "Matern12",
    "Matern32",
    "Matern52",
    "Periodic",
    "Polynomial",
    "Product",
    "RatQuad",
    "Scaled",
    "SetIntersection",
    "Sum",
    "White",
]
