"""bayeskern: Bayesian kernel methods on PyMC — Gaussian processes and Bayesian linear regression."""

from bayeskern import approx, blr, checks, datasets, features, fit, gp, kernels, ntk, smoothing

__all__ = ["approx", "blr", "checks", "datasets", "features", "fit", "gp", "kernels", "ntk", "smoothing"]
__version__ = "0.1.0"
