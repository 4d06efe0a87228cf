"""Cholesky factorisation with escalating, reported jitter; triangular solves."""

import warnings

import numpy as np
import scipy.linalg

__all__ = ["JITTER_STEPS", "LOG_2PI", "cho_solve", "cholesky", "solve_lower"]

LOG_2PI = float(np.log(2 * np.pi))

#: relative jitter tried in turn (times the mean of the diagonal) when a factorisation fails
JITTER_STEPS = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)


def cholesky(A: np.ndarray, name: str = "matrix") -> tuple[np.ndarray, float]:
    """Lower Cholesky factor L of A = L Lᵀ and the jitter added to the diagonal (0.0 if none).

    Jitter is tried only after the exact factorisation fails, in the steps of `JITTER_STEPS`
    relative to the mean diagonal; using any is announced with a RuntimeWarning.
    """
    try:
        return scipy.linalg.cholesky(A, lower=True, check_finite=False), 0.0
    except np.linalg.LinAlgError:
        pass
    scale = float(np.mean(np.diag(A)))
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    for step in JITTER_STEPS:
        jitter = step * scale
        try:
            L = scipy.linalg.cholesky(A + jitter * np.eye(A.shape[0]), lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
        warnings.warn(
            f"{name} is not numerically positive definite; added jitter {jitter:.3g} to its diagonal",
            RuntimeWarning,
            stacklevel=3,
        )
        return L, jitter
    raise ValueError(
        f"{name} is not positive definite, even with jitter up to {JITTER_STEPS[-1] * scale:.3g} "
        "on the diagonal: check that the kernel is positive semi-definite and the noise positive"
    )


def solve_lower(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """L⁻¹ B for lower-triangular L."""
    return scipy.linalg.solve_triangular(L, B, lower=True, check_finite=False)


def cho_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(L Lᵀ)⁻¹ B."""
    return scipy.linalg.cho_solve((L, True), B, check_finite=False)
