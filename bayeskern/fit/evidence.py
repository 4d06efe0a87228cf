"""Bishop's evidence approximation for Bayesian linear regression: fixed-point re-estimation of α and β."""

import warnings
from dataclasses import dataclass
from typing import NamedTuple

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
    `n_iterations`, `converged`: how the best start's iteration ended. `optima`: the distinct fixed points the starts
    converged to (`bayeskern.fit.Optimum`: params {"alpha", "beta"}, the log evidence, converged, how many starts), best
    first. `sigma` = β̂^(-1/2), `prior_cov` = 1/α̂: the same model in the parametrisation of `bayeskern.blr`.
    """

    alpha: float
    beta: float
    gamma: float
    log_marginal_likelihood: float
    weights_mean: np.ndarray
    n_iterations: int
    converged: bool
    optima: tuple = ()

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


#: the starts besides the caller's (alpha, beta): β = 1/(f·var(t)) for each noise fraction f, and α = s·β·λ̄ (λ̄ the mean
#: eigenvalue of ΦᵀΦ) for each shrinkage s, from weights left alone to weights held at 0. The evidence of a BLR can have
#: several maxima: PRML's sinusoid (n = 25, noise 0.2) with a cubic has one at ln p = −24.43 (α = 0.64, β = 3.5, the
#: noise taking nearly all of t) and one at −11.36 (α = 0.0023, β = 28); the start α = β = 1 reaches the lower one
START_NOISE_FRACTIONS = (1.0, 1e-2, 1e-4)
START_SHRINKAGES = (1e-6, 1e-3, 1.0)


@numerical_failure("the features of X, or y, are too large for float64 (or the features are numerically rank-deficient): scale or center X and y, or use fewer features")
def evidence_approximation(features, X, y, alpha: float = 1.0, beta: float = 1.0, tol: float = 1e-10, maxiter: int = 10_000) -> EvidenceResult:
    """Re-estimate α and β by PRML 3.92 and 3.95 until they change by less than `tol` (relative), from several starts,
    and keep the fixed point of highest evidence.

    `features`: φ, a feature map or callable X → Φ (n, M). `alpha`, `beta`: the first start; the others are fixed
    (`START_NOISE_FRACTIONS` × `START_SHRINKAGES`, scaled to var(t) and ΦᵀΦ). The evidence can have several maxima:
    `optima` lists the distinct fixed points the starts converged to, best first, and a FitWarning says when there is
    more than one; the result is the best of them (a start that did not converge is the result only when none did). A
    start that runs off to α or β → ∞ is dropped, unless it is the first (then its ValueError is raised). The eigenvalues of ΦᵀΦ are computed once; each iteration costs O(nM).
    """
    from bayeskern import blr
    from bayeskern.fit.empirical_bayes import Optimum, _group_optima

    X = as_inputs(X, "X")
    t = as_targets(y, X.shape[0], "y")
    alpha = float(check_number(alpha, "alpha", positive=True, scalar=True))
    beta = float(check_number(beta, "beta", positive=True, scalar=True))
    tol = float(check_number(tol, "tol", positive=True, scalar=True))
    maxiter = check_integer(maxiter, "maxiter", 1)
    Phi = design_matrix(features, X, "features")
    with np.errstate(over="ignore"):
        gram = check_finite_result(Phi.T @ Phi, "ΦᵀΦ of the features of X")
        check_finite_result(t @ t, "‖y‖², the squared norm of the targets y")  # β ~ N/‖y‖² must be representable
    eig, V = np.linalg.eigh(gram)  # ΦᵀΦ = V diag(eig) Vᵀ
    eig = np.clip(eig, 0.0, None)
    problem = (Phi, t, eig, V, V.T @ (Phi.T @ t), tol, maxiter)  # b = Vᵀ Φᵀ t

    runs = [_fixed_point(problem, alpha, beta)]  # the caller's start: its failure is the caller's to see
    for start in _starts(t, eig):
        try:
            runs.append(_fixed_point(problem, *start))
        except ValueError:  # ran off to α or β → ∞ from this start
            continue
    rows = blr.DesignRows(features, X, t, Phi)
    # converged runs first (a fixed point), each group by evidence, best first
    fitted = sorted(((blr._condition_on(features, X, t, run.beta**-0.5, 1.0 / run.alpha, rows), run) for run in runs),
                    key=lambda f: (not f[1].converged, -f[0].log_marginal_likelihood))
    optima = [Optimum({"alpha": run.alpha, "beta": run.beta}, model.log_marginal_likelihood, model.log_marginal_likelihood, True, count)
              for (model, run), count in _group_optima([f for f in fitted if f[1].converged], lambda f: -f[0].log_marginal_likelihood)]
    best, (alpha, beta, iterations, converged, change) = fitted[0]
    if not converged:
        warnings.warn(
            f"evidence_approximation did not converge in {maxiter} iterations: alpha, beta still change by "
            f"{change:.3g} (relative) per step; alpha={alpha:.4g}, beta={beta:.4g}",
            FitWarning,
            stacklevel=3,  # past numerical_failure's wrapper, to the caller
        )
    if len(optima) > 1:
        warnings.warn(
            f"the evidence has {len(optima)} distinct fixed points of alpha, beta from the starts; kept the best "
            f"(log evidence {optima[0].log_marginal_likelihood:.6g}), next best {optima[1].log_marginal_likelihood:.6g} — see .optima",
            FitWarning,
            stacklevel=3,  # past numerical_failure's wrapper, to the caller
        )
    lam = beta * eig
    return EvidenceResult(
        alpha, beta, float(np.sum(lam / (alpha + lam))), best.log_marginal_likelihood, best.weights_mean, iterations, converged, tuple(optima)
    )


def _starts(t: np.ndarray, eig: np.ndarray) -> list[tuple[float, float]]:
    """(α, β) starts scaled to the data: β = 1/(f·var t), α = s·β·mean eig."""
    var_t, mean_eig = float(np.var(t)), float(np.mean(eig))
    if not (var_t > 0 and mean_eig > 0 and np.isfinite(var_t) and np.isfinite(mean_eig)):
        return []
    return [(s * mean_eig / (f * var_t), 1.0 / (f * var_t)) for f in START_NOISE_FRACTIONS for s in START_SHRINKAGES]


class _Run(NamedTuple):
    """Where PRML 3.92 and 3.95, iterated from one start, ended."""

    alpha: float
    beta: float
    iterations: int
    converged: bool
    change: float  # the last relative change of α or β


def _fixed_point(problem: tuple, alpha: float, beta: float) -> _Run:
    """PRML 3.92 and 3.95 iterated from (alpha, beta) until α and β change by less than the problem's tol."""
    Phi, t, eig, V, b, tol, maxiter = problem
    N = len(t)
    change = np.inf
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
            return _Run(alpha, beta, iteration, True, change)
    return _Run(alpha, beta, maxiter, False, change)

