"""Checks a user can run on their own model: the kernel trick, feature approximations, Mercer (PSD) diagnostics, the RKHS."""

from bayeskern._lazy import lazy_names
from bayeskern.checks.approximation import ApproximationError, FeatureError, RFFConvergence, approximation_error, feature_error, rff_convergence
from bayeskern.checks.kernel_trick import KernelTrickResult, RidgeDualityResult, kernel_trick, ridge_duality
from bayeskern.checks.psd import PSDCheck, psd
from bayeskern.checks.rkhs import rkhs_inner, rkhs_norm

# ArviZ-based: imported when first used (ArviZ and its plotting stack cost about 1.5 s to import)
__getattr__, __dir__ = lazy_names(__name__, {"SamplingCheckResult": "sampling", "kernel_trick_mcmc": "sampling"})

__all__ = [
    "ApproximationError",
    "FeatureError",
    "KernelTrickResult",
    "PSDCheck",
    "RFFConvergence",
    "RidgeDualityResult",
    "SamplingCheckResult",
    "approximation_error",
    "feature_error",
    "kernel_trick",
    "kernel_trick_mcmc",
    "psd",
    "ridge_duality",
    "rff_convergence",
    "rkhs_inner",
    "rkhs_norm",
]
