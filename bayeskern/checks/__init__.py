"""Checks a user can run on their own model: the kernel trick (weight vs function space), feature approximations."""

from bayeskern.checks.approximation import FeatureError, RFFConvergence, feature_error, rff_convergence
from bayeskern.checks.kernel_trick import KernelTrickResult, RidgeDualityResult, kernel_trick, ridge_duality
from bayeskern.checks.sampling import SamplingCheckResult, kernel_trick_mcmc

__all__ = [
    "FeatureError",
    "KernelTrickResult",
    "RFFConvergence",
    "RidgeDualityResult",
    "SamplingCheckResult",
    "feature_error",
    "kernel_trick",
    "kernel_trick_mcmc",
    "ridge_duality",
    "rff_convergence",
]
