"""Bishop's evidence approximation for Bayesian linear regression: fixed-point re-estimation of α and β."""

import warnings
from dataclasses import dataclass

import numpy as np

from bayeskern._linalg import EPS
from bayeskern._validation import as_inputs, as_targets, check_finite_result, check_integer, check_number, numerical_failure
from bayeskern.features import design_matrix
from bayeskern.fit.warning import FitWarning

__all__ = ["EvidenceResult", "evidence_approximation"]


@dataclass(frozen=True)
class EvidenceResult:
    """α̂, β̂ maximising the evidence of w ~ N(0, α⁻¹I), t = Φw + ε, ε ~ N(0, β⁻¹I) (PRML §3.5).

    `gamma`: γ = Σᵢ λᵢ/(α + λᵢ), the effective number of well-determined parameters.
    `log_marginal_likelihood`: ln p(t | α̂, β̂) (PRML 3.86; `log_evidence` is its former name). `weights_mean`: m_N at α̂, β̂.
    `n_iterations`, `converged`: how the fixed point ended. `sigma` = β̂^(-1/2), `prior_cov` = 1/α̂:
    the same model in the parametrisation of `bayeskern.blr`.
    """

    alpha: float
    beta: float
    gamma: float
    log_marginal_likelihood: float
    weights_mean: np.ndarray
    n_iterations: int
    converged: bool

    @property
    def log_evidence(self) -> float:
        """The former name of `log_marginal_likelihood`, ln p(t | α̂, β̂)."""
        return self.log_marginal_likelihood

    @property
    def sigma(self) -> float:
        return float(self.beta**-0.5)

    @property
    def prior_cov(self) -> float:
        return float(1.0 / self.alpha)


@numerical_failure("the features of X, or y, are too large for float64 (or the features are numerically rank-deficient): scale or center X and y, or use fewer features")
def evidence_approximation(features, X, y, alpha: float = 1.0, beta: float = 1.0, tol: float = 1e-10, maxiter: int = 10_000) -> EvidenceResult:
    """Re-estimate α and β by PRML 3.92 and 3.95 until they change by less than `tol` (relative).

    `features`: φ, a feature map or callable X → Φ (n, M). `alpha`, `beta`: the starting values.
    The eigenvalues of ΦᵀΦ are computed once; each iteration costs O(M²).
    """
    from bayeskern import blr

    X = as_inputs(X, "X")
    t = as_targets(y, X.shape[0], "y")
    alpha = float(check_number(alpha, "alpha", positive=True, scalar=True))
    beta = float(check_number(beta, "beta", positive=True, scalar=True))
    tol = float(check_number(tol, "tol", positive=True, scalar=True))
    maxiter = check_integer(maxiter, "maxiter", 1)
    Phi = design_matrix(features, X, "features")
    N, M = Phi.shape
    with np.errstate(over="ignore"):
        gram = check_finite_result(Phi.T @ Phi, "ΦᵀΦ of the features of X")
        check_finite_result(t @ t, "‖y‖², the squared norm of the targets y")  # β ~ N/‖y‖² must be representable
    eig, V = np.linalg.eigh(gram)  # ΦᵀΦ = V diag(eig) Vᵀ
    eig = np.clip(eig, 0.0, None)
    b = V.T @ (Phi.T @ t)  # Vᵀ Φᵀ t

    converged = False
    for iteration in range(1, maxiter + 1):
        lam = beta * eig  # λᵢ: eigenvalues of βΦᵀΦ   (PRML 3.87)
        m_N = V @ (beta * b / (alpha + lam))  # m_N = β A⁻¹ Φᵀ t, A = αI + βΦᵀΦ   (PRML 3.84)
        gamma = float(np.sum(lam / (alpha + lam)))  # γ = Σ λᵢ/(α + λᵢ)   (PRML 3.91)
        residual = float(np.sum((t - Phi @ m_N) ** 2))
        # a residual at the round-off level of the fit (‖t‖∞·1e3·ε per point) means the features fit t exactly
        if residual <= N * (1e3 * EPS * np.max(np.abs(t))) ** 2 or N - gamma <= 0.0:
            raise ValueError("beta -> infinity: the features fit t exactly, so the evidence has no finite maximum; use fewer features")
        if float(m_N @ m_N) == 0.0:
            raise ValueError(
                "alpha -> infinity: the features explain nothing of t, so the evidence is largest with all weights zero "
                f"(or the starting alpha={alpha:.3g}, beta={beta:.3g} are so extreme that m_N underflowed to 0: start nearer 1)"
            )
        alpha_new = gamma / float(m_N @ m_N)  # α = γ / m_Nᵀm_N   (PRML 3.92)
        beta_new = (N - gamma) / residual  # 1/β = Σ (tₙ − m_Nᵀφₙ)² / (N − γ)   (PRML 3.95)
        if not (np.isfinite(alpha_new) and np.isfinite(beta_new)):
            which = "alpha" if not np.isfinite(alpha_new) else "beta"
            raise ValueError(
                f"{which} -> infinity during the re-estimation: the evidence has no finite maximum for these features "
                "(or the starting alpha, beta are too extreme for float64: start nearer 1)"
            )
        change = max(abs(alpha_new - alpha) / alpha, abs(beta_new - beta) / beta)
        alpha, beta = alpha_new, beta_new
        if change < tol:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"evidence_approximation did not converge in {maxiter} iterations: alpha, beta still change by "
            f"{change:.3g} (relative) per step; alpha={alpha:.4g}, beta={beta:.4g}",
            FitWarning,
            stacklevel=2,
        )
    fitted = blr.condition(features, X, t, sigma=beta**-0.5, prior_cov=1.0 / alpha)
    lam = beta * eig
    return EvidenceResult(
        alpha, beta, float(np.sum(lam / (alpha + lam))), fitted.log_marginal_likelihood, fitted.weights_mean, iteration, converged
    )
