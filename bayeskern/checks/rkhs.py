"""The RKHS of a kernel on finite expansions f = Σᵢ αᵢ k(xᵢ, ·): inner products, norms, the reproducing property."""

import numpy as np

from bayeskern._validation import as_inputs, as_targets, check_finite_result, check_kernel, same_columns
from bayeskern.kernels import Kernel

__all__ = ["rkhs_inner", "rkhs_norm"]


def rkhs_inner(kernel: Kernel, X, alpha, Z, beta) -> float:
    """⟨f, g⟩_H = αᵀ K(X, Z) β for f = Σᵢ αᵢ k(xᵢ, ·) and g = Σⱼ βⱼ k(zⱼ, ·) (seed 001).

    With g = k(x, ·) (Z = [x], β = [1]) this is the reproducing property ⟨f, k(x, ·)⟩_H = f(x).
    `X` (n, d) and `alpha` (n,) define f; `Z` (m, d) and `beta` (m,) define g.
    """
    kernel, X, Z = check_kernel(kernel), as_inputs(X, "X"), as_inputs(Z, "Z")
    same_columns(X, Z, "X", "Z")
    alpha, beta = as_targets(alpha, len(X), "alpha"), as_targets(beta, len(Z), "beta")
    with np.errstate(over="ignore", invalid="ignore"):
        inner = alpha @ kernel.evaluate(X, Z) @ beta
    return float(check_finite_result(inner, "⟨f, g⟩_H = αᵀK(X, Z)β (alpha, beta or the kernel's values are too large)"))


def rkhs_norm(kernel: Kernel, X, alpha) -> float:
    """‖f‖_H = √(αᵀ K α) for f = Σᵢ αᵢ k(xᵢ, ·).

    A ValueError if αᵀKα is negative beyond round-off: then k is not positive semi-definite on X
    (not a Mercer kernel) and defines no RKHS; `bayeskern.checks.psd` says more.
    """
    kernel, X = check_kernel(kernel), as_inputs(X, "X")
    alpha = as_targets(alpha, len(X), "alpha")
    K = kernel.evaluate(X)
    with np.errstate(over="ignore", invalid="ignore"):
        q = float(alpha @ K @ alpha)  # ‖f‖² = Σᵢⱼ αᵢ αⱼ k(xᵢ, xⱼ)
    check_finite_result(q, "‖f‖²_H = αᵀKα (alpha or the kernel's values on X are too large)")
    if q < -1e-12 * float(np.abs(alpha) @ np.abs(K) @ np.abs(alpha)):
        raise ValueError(f"αᵀKα = {q:.3g} < 0: {kernel!r} is not positive semi-definite on X and defines no RKHS norm")
    return float(np.sqrt(max(q, 0.0)))
