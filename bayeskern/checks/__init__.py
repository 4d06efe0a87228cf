"""Checks a user can run on their own model: the kernel trick, feature approximations, Mercer (PSD) diagnostics, the RKHS."""

from bayeskern.checks.approximation import FeatureError, RFFConvergence, feature_error, rff_convergence
from bayeskern.checks.kernel_trick import KernelTrickResult, RidgeDualityResult, kernel_trick, ridge_duality
from bayeskern.checks.psd import PSDCheck, psd
from bayeskern.checks.rkhs import rkhs_inner, rkhs_norm
from bayeskern.checks.sampling import SamplingCheckResult, kernel_trick_mcmc

__all__ = [
    "FeatureError",
    "KernelTrickResult",
    "PSDCheck",
    "RFFConvergence",
    "RidgeDualityResult",
    "SamplingCheckResult",
    "feature_error",
    "kernel_trick",
    "kernel_trick_mcmc",
    "psd",
    "ridge_duality",
    "rff_convergence",
    "rkhs_inner",
    "rkhs_norm",
]
