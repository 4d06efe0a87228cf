"""Classical kernel smoothers: Nadaraya–Watson, kernel density estimation, kernel ridge, and their comparison."""

from bayeskern.smoothing._blocks import SmoothingWarning
from bayeskern.smoothing.compare import SmootherComparison, compare_smoothers
from bayeskern.smoothing.density import BANDWIDTH_METHODS, KDE
from bayeskern.smoothing.orders import KDEOrders, kde_orders
from bayeskern.smoothing.local import NadarayaWatsonResult, default_bandwidth_grid, nadaraya_watson, smoothing_weights
from bayeskern.smoothing.profiles import SMOOTHING_KERNELS, SmoothingKernel, smoothing_kernel
from bayeskern.smoothing.ridge import KernelRidgeResult, default_lam_grid, kernel_ridge

__all__ = [
    "BANDWIDTH_METHODS",
    "KDE",
    "KDEOrders",
    "KernelRidgeResult",
    "NadarayaWatsonResult",
    "SMOOTHING_KERNELS",
    "SmootherComparison",
    "SmoothingKernel",
    "SmoothingWarning",
    "compare_smoothers",
    "default_bandwidth_grid",
    "default_lam_grid",
    "kde_orders",
    "kernel_ridge",
    "nadaraya_watson",
    "smoothing_kernel",
    "smoothing_weights",
]
