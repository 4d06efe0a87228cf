"""Bishop's re-estimation of a BLR's α and β (PRML 3.92, 3.95) from the SVD of Φ's R factor, its starts, its best fixed point."""

from typing import NamedTuple

import numpy as np

from bayeskern._linalg import EPS
from bayeskern._validation import check_finite_result

__all__ = ["Problem", "RanOff", "Run", "best_fixed_point", "data_scaled_starts", "fixed_point", "log_evidence", "terms"]

#: the starts besides the caller's (alpha, beta): β = 1/(f·var(t)) for each noise fraction f, and α = s·β·λ̄ (λ̄ the mean
#: eigenvalue of ΦᵀΦ) for each shrinkage s, from weights left alone to weights held at 0. The evidence of a BLR can have
#: several maxima: PRML's sinusoid (n = 25, noise 0.2) with a cubic has one at ln p = −24.43 (α = 0.64, β = 3.5, the
#: noise taking nearly all of t) and one at −11.36 (α = 0.0023, β = 28); the start α = β = 1 reaches the lower one
START_NOISE_FRACTIONS = (1.0, 1e-2, 1e-4)
START_SHRINKAGES = (1e-6, 1e-3, 1.0)
#: `best_fixed_point`'s iteration, a fitter's start (the fitter converges from there): a looser stop than the result's
START_TOL, START_MAXITER = 1e-6, 1000


def best_fixed_point(rows, t: np.ndarray, beta: float | None = None) -> tuple[float, float] | None:
    """(α, β) of the highest evidence among the fixed points reached from `data_scaled_starts`, β held at `beta` when
    given; None when every start ran off to an edge. A fitter's start (`BLRLikelihood.start_from_data`): the
    evidence of a BLR can have maxima far apart, and a fit started from its priors' draws reaches the one nearest them.
    `rows`: the `bayeskern.blr.DesignRows` of Φ and t."""
    with np.errstate(all="ignore"):  # a start far out ends as RanOff or unconverged, not as the caller's warnings
        try:
            problem = Problem.of(rows, t, START_TOL, START_MAXITER)
        except ValueError:  # ΦᵀΦ beyond float64: no start (the fit itself says what is wrong)
            return None
        ends = []
        for alpha, b in data_scaled_starts(t, problem.s2, problem.M, beta):
            try:
                run = fixed_point(problem, alpha, b, beta_fixed=beta is not None)
            except RanOff:
                continue
            if run.converged:
                ends.append((log_evidence(problem, run.alpha, run.beta), run.alpha, run.beta))
    ends = [end for end in ends if np.isfinite(end[0])]
    return max(ends)[1:] if ends else None


class Problem(NamedTuple):
    """The data of the iteration, from the thin SVD R = U_R diag(s) Wᵀ of the R factor of [Φ | t] (Φ = QR, so
    U = QU_R: ΦᵀΦ's non-zero eigenvalues are s², accurate where ΦᵀΦ's own eigendecomposition loses them to round-off:
    cond ΦᵀΦ = cond(Φ)²), and its stop."""

    s2: np.ndarray  # sᵢ², the r = min(N, M) eigenvalues of ΦᵀΦ that Φ's rows can make non-zero; the other M − r are 0
    u: np.ndarray  # Uᵀt
    outside: float  # ‖t − UUᵀt‖²: the part of t no weights reach
    N: int
    M: int
    t_max: float
    tol: float
    maxiter: int

    @classmethod
    def of(cls, rows, t: np.ndarray, tol: float, maxiter: int) -> "Problem":
        """From `rows.r_factor` (R, c = Qᵀt, ρ² = ‖t − QQᵀt‖²; `bayeskern.blr.DesignRows`) of t's design rows."""
        R, c, rho2 = rows.r_factor
        U, sv, _ = np.linalg.svd(R, full_matrices=False)
        s2 = check_finite_result(sv**2, "ΦᵀΦ of the features of X (its eigenvalues)")
        u = U.T @ c  # Uᵀt = U_RᵀQᵀt
        outside = rho2 + float(np.sum((c - U @ u) ** 2))  # ‖t − UUᵀt‖² = ρ² + ‖c − U_R U_Rᵀc‖²
        return cls(s2, u, outside, len(t), R.shape[1], float(np.max(np.abs(t))), tol, maxiter)


def data_scaled_starts(t: np.ndarray, s2: np.ndarray, M: int, beta: float | None = None) -> list[tuple[float, float]]:
    """(α, β) starts scaled to the data: β = 1/(f·var t) (or the `beta` given), α = s·β·mean eig ΦᵀΦ (Σsᵢ²/M)."""
    var_t, mean_eig = float(np.var(t)), float(np.sum(s2)) / M
    if not (var_t > 0 and mean_eig > 0 and np.isfinite(var_t) and np.isfinite(mean_eig)):
        return []
    if beta is not None:
        return [(s * mean_eig * beta, beta) for s in START_SHRINKAGES]
    return [(s * mean_eig / (f * var_t), 1.0 / (f * var_t)) for f in START_NOISE_FRACTIONS for s in START_SHRINKAGES]


class Run(NamedTuple):
    """Where PRML 3.92 and 3.95, iterated from one start, ended."""

    alpha: float
    beta: float
    iterations: int
    converged: bool
    change: float  # the last relative change of α or β


class RanOff(ValueError):
    """The re-estimation ran off to α or β → ∞."""


def fixed_point(problem: Problem, alpha: float, beta: float, beta_fixed: bool = False) -> Run:
    """PRML 3.92 and 3.95 iterated from (alpha, beta) until α and β change by less than the problem's tol; with
    `beta_fixed`, 3.92 alone: the α that maximises the evidence at this β."""
    change = np.inf
    for iteration in range(1, problem.maxiter + 1):
        alpha_new, beta_new = re_estimate(problem, alpha, beta)
        if beta_fixed:
            beta_new = beta
        change = max(abs(alpha_new - alpha) / alpha, abs(beta_new - beta) / beta)
        alpha, beta = alpha_new, beta_new
        if change < problem.tol:
            return Run(alpha, beta, iteration, True, change)
    return Run(alpha, beta, problem.maxiter, False, change)


def terms(problem: Problem, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(βsᵢ², Wᵀm_N, γ, ‖t − Φm_N‖²) at (α, β), from the SVD of Φ."""
    lam = beta * problem.s2  # λᵢ: eigenvalues of βΦᵀΦ   (PRML 3.87)
    c = beta * np.sqrt(problem.s2) * problem.u / (alpha + lam)  # Wᵀm_N: m_N = β A⁻¹ Φᵀ t, Φᵀt = W S Uᵀt   (PRML 3.84)
    gamma = float(np.sum(lam / (alpha + lam)))  # γ = Σ λᵢ/(α + λᵢ)   (PRML 3.91)
    # t − Φm_N = (I − UUᵀ)t + U(Uᵀt − S Wᵀm_N), and uᵢ − sᵢcᵢ = uᵢ·α/(α + λᵢ): no cancellation as β grows
    residual = problem.outside + float(np.sum((problem.u * (alpha / (alpha + lam))) ** 2))
    return lam, c, gamma, residual


def log_evidence(problem: Problem, alpha: float, beta: float) -> float:
    """ln p(t | α, β) = M/2 ln α + N/2 ln β − E(m_N) − ½ ln|A| − N/2 ln 2π   (PRML 3.86), ln|A| = Σ ln(α + λᵢ) over ΦᵀΦ's
    M eigenvalues (M − r of them 0): the probe along β, where conditioning the BLR would need jitter."""
    lam, c, _, residual = terms(problem, alpha, beta)
    N, M = problem.N, problem.M
    E = beta / 2 * residual + alpha / 2 * float(c @ c)  # E(m_N) = β/2‖t − Φm_N‖² + α/2 m_Nᵀm_N   (PRML 3.82)
    log_det_A = float(np.sum(np.log(alpha + lam))) + (M - len(lam)) * np.log(alpha)
    return float(M / 2 * np.log(alpha) + N / 2 * np.log(beta) - E - log_det_A / 2 - N / 2 * np.log(2 * np.pi))


def re_estimate(problem: Problem, alpha: float, beta: float) -> tuple[float, float]:
    """One step of PRML 3.92 and 3.95 from (alpha, beta); a `RanOff` where α or β runs off to an edge."""
    N = problem.N
    _, c, gamma, residual = terms(problem, alpha, beta)
    # a residual at the round-off level of the fit (‖t‖∞·1e3·ε per point) means the features fit t exactly
    if residual <= N * (1e3 * EPS * problem.t_max) ** 2 or N - gamma <= 0.0:
        raise RanOff("beta -> infinity: the features fit t exactly, so the evidence has no finite maximum; use fewer features")
    if float(c @ c) == 0.0:
        raise RanOff(
            "alpha -> infinity: the features explain nothing of t, so the evidence is largest with all weights zero "
            f"(the iteration reached alpha={alpha:.3g}, beta={beta:.3g}, where m_N is 0; or a start so extreme that m_N "
            "underflowed to 0: start nearer 1)"
        )
    alpha_new = gamma / float(c @ c)  # α = γ / m_Nᵀm_N   (PRML 3.92; ‖m_N‖ = ‖Wᵀm_N‖)
    beta_new = (N - gamma) / residual  # 1/β = Σ (tₙ − m_Nᵀφₙ)² / (N − γ)   (PRML 3.95)
    if not (alpha_new > 0 and beta_new > 0 and np.isfinite(alpha_new) and np.isfinite(beta_new)):
        which = "alpha" if not (alpha_new > 0 and np.isfinite(alpha_new)) else "beta"
        raise RanOff(
            f"{which} ran off to 0 or infinity during the re-estimation: the evidence has no finite maximum for these "
            "features (or the starting alpha, beta are too extreme for float64: start nearer 1)"
        )
    return alpha_new, beta_new

