"""Covariance functions as PyTensor graphs: k.full(X) for PyMC models, k.evaluate(X) for numbers."""

from bayeskern.kernels.arccosine import ArcCosine
from bayeskern.kernels.base import Kernel, Product, Scaled, Sum
from bayeskern.kernels.constant import Constant, White
from bayeskern.kernels.discrete import SetIntersection
from bayeskern.kernels.dot_product import Linear, Polynomial
from bayeskern.kernels.feature import FeatureKernel
from bayeskern.kernels.fisher import FisherKernel
from bayeskern.kernels.neural import NNGP, NTK
from bayeskern.kernels.prml import PRML
from bayeskern.kernels.probability import Mixture, ProbabilityProduct
from bayeskern.kernels.sigmoid import Sigmoid
from bayeskern.kernels.boxcar import Boxcar
from bayeskern.kernels.stationary import RBF, MahalanobisRBF, Matern12, Matern32, Matern52, Periodic, RatQuad

__all__ = [
    "NNGP",
    "NTK",
    "PRML",
    "RBF",
    "ArcCosine",
    "Boxcar",
    "Constant",
    "FeatureKernel",
    "FisherKernel",
    "Kernel",
    "Linear",
    "MahalanobisRBF",
    "Matern12",
    "Matern32",
    "Matern52",
    "Mixture",
    "Periodic",
    "Polynomial",
    "ProbabilityProduct",
    "Product",
    "RatQuad",
    "Scaled",
    "SetIntersection",
    "Sigmoid",
    "Sum",
    "White",
]
