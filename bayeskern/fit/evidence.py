"""Bishop's evidence approximation for Bayesian linear regression: fixed-point re-estimation of α and β."""

import warnings
from dataclasses import dataclass
import numpy as np

from bayeskern._evidence_iteration import (
    Problem, RanOff, data_scaled_starts, fixed_point, log_evidence, terms,
)
from bayeskern._validation import PACKAGE_DIR, as_inputs, as_targets, check_finite_result, check_integer, check_number, numerical_failure
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


#: past the best fixed point the evidence (α re-estimated) is probed at β·10^(k/2) up to this many decades: a fixed point can be a local
#: maximum below a supremum at β → ∞, where the features fit t exactly (noise-free targets, fewer points than features:
#: N = 10, M = 13 monomials on sin 6x has a fixed point at ln p = 0.077, β = 5.1e4, and ln p = 2.41 at β = 1e7), which no
#: start's iteration reaches (from β = 1e10 they come back to β = 5.1e4)
BETA_PROBE_DECADES = 12
#: the probe stops where the evidence has fallen this many nats below the best fixed point: the residual term β‖t − Φm‖²/2
#: then dominates, and grows with β
PROBE_DROP = 50.0
#: where the probe finds the evidence higher, the fixed point is iterated from there, at most this many times in a row
#: (at N = 10, noise 1e-3, it reaches ln p = −6.53 at β = 1.7e7 from a best start's −8.71 at β = 4.1e3)
BETA_CONTINUATIONS = 3


@numerical_failure("the features of X, or y, are too large for float64 (or the features are numerically rank-deficient): scale or center X and y, or use fewer features")
def evidence_approximation(features, X, y, alpha: float = 1.0, beta: float = 1.0, tol: float = 1e-10, maxiter: int = 10_000) -> EvidenceResult:
    """Re-estimate α and β by PRML 3.92 and 3.95 until they change by less than `tol` (relative), from several starts,
    and keep the fixed point of highest evidence.

    `features`: φ, a feature map or callable X → Φ (n, M). `alpha`, `beta`: the first start; the others are fixed
    (`bayeskern._evidence_iteration.START_NOISE_FRACTIONS` × `START_SHRINKAGES`, scaled to var(t) and ΦᵀΦ). The evidence can have several maxima:
    `optima` lists the distinct fixed points the starts converged to, best first, and a FitWarning says when there is
    more than one; the result is the best of them (a start that did not converge is the result only when none did). A
    start that runs off to α or β → ∞ is dropped; a ValueError says when every start did. Where the evidence rises as β
    grows past the best fixed point (probed `BETA_PROBE_DECADES` decades out, α re-estimated), the iteration is continued
    from there; a FitWarning says when it still rises beyond float64's reach (β → ∞), or when the evidence with all
    weights zero (its supremum as α → ∞) is larger than at the best fixed point: the result is then a local maximum.
    Φ's thin SVD is computed once; each iteration costs O(min(n, M)).
    """
    from bayeskern import blr
    from bayeskern.fit.empirical_bayes import Optimum, _group_optima

    X = as_inputs(X, "X")
    t = as_targets(y, X.shape[0], "y")
    alpha = float(check_number(alpha, "alpha", positive=True, scalar=True))
    beta = float(check_number(beta, "beta", positive=True, scalar=True))
    tol = float(check_number(tol, "tol", positive=True, scalar=True))
    if tol >= 1.0:
        raise ValueError(f"tol must be below 1 (a relative change of alpha and beta per step), got {tol:g}")
    maxiter = check_integer(maxiter, "maxiter", 1)
    Phi = design_matrix(features, X, "features")
    with np.errstate(over="ignore"):  # (features too large for float64: the ValueError below, not numpy's warning)
        check_finite_result(t @ t, "‖y‖², the squared norm of the targets y")  # β ~ N/‖y‖² must be representable
        rows = blr.DesignRows(features, X, t, Phi)
        problem = Problem.of(rows, t, tol, maxiter)

    runs, first_edge = [], None
    for start in [(alpha, beta), *data_scaled_starts(t, problem.s2, problem.M)]:
        try:
            runs.append(fixed_point(problem, *start))
        except RanOff as edge:  # the iteration ran off to α or β → ∞ from this start
            first_edge = first_edge or edge
    if not runs:
        raise first_edge  # the caller's start's own reason, if it ran off too
    fitted = _ranked([(blr._condition_on(features, X, t, run.beta**-0.5, 1.0 / run.alpha, rows), run) for run in runs])
    with np.errstate(all="ignore"):  # far out along β, 0/0 and overflow end an iteration (RanOff), not the caller's warnings
        fitted, rising = _continued_past(problem, lambda a, b: _quiet_fit(features, X, t, a, b, rows), fitted)
    optima = [Optimum({"alpha": run.alpha, "beta": run.beta}, model.log_marginal_likelihood, model.log_marginal_likelihood, True, count)
              for (model, run), count in _group_optima([f for f in fitted if f[1].converged], lambda f: -f[0].log_marginal_likelihood)]
    best, (alpha, beta, iterations, converged, _) = fitted[0]
    for message in _warnings(fitted[0], optima, rising, Phi.shape, maxiter):
        warnings.warn(message, FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
    gamma = terms(problem, alpha, beta)[2]
    return EvidenceResult(alpha, beta, gamma, best.log_marginal_likelihood, best.weights_mean, iterations, converged, tuple(optima))


def _ranked(fitted: list) -> list:
    """(conditioned model, run) pairs, converged runs first (fixed points), each group by evidence, best first."""
    return sorted(fitted, key=lambda f: (not f[1].converged, -f[0].log_marginal_likelihood))


def _quiet_fit(features, X, t, alpha: float, beta: float, rows):
    """The BLR at (α, β), or None where float64 cannot condition it without jitter (far out along β)."""
    from bayeskern import blr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jitter: the model is not used
        try:
            model = blr._condition_on(features, X, t, beta**-0.5, 1.0 / alpha, rows)
        except ValueError:
            return None
    return model if model.jitter == 0 else None


def _continued_past(problem: Problem, fit_at, fitted: list) -> tuple[list, tuple | None]:
    """`fitted` with the fixed points reached from where the evidence rises past the best one as β grows, up to
    BETA_CONTINUATIONS of them; and the rise still left past the best one, (β, α, ln p), or None."""
    from bayeskern.fit.empirical_bayes import LML_SAME

    for _ in range(BETA_CONTINUATIONS + 1):
        model, run = fitted[0]
        if not run.converged:
            return fitted, None
        rising = _rising_past(problem, model.log_marginal_likelihood, run.alpha, run.beta)
        if rising is None:
            return fitted, None
        try:
            further = fixed_point(problem, rising[1], rising[0])
        except RanOff:
            return fitted, rising
        further_model = fit_at(further.alpha, further.beta) if further.converged else None
        if further_model is None or further_model.log_marginal_likelihood <= model.log_marginal_likelihood + LML_SAME:
            return fitted, rising
        fitted = _ranked([*fitted, (further_model, further)])
    return fitted, rising


def _rising_past(problem: Problem, lml: float, alpha: float, beta: float) -> tuple[float, float, float] | None:
    """(β, α, ln p) at the first of β·10^(k/2), k = 1 … 2·`BETA_PROBE_DECADES`, α re-estimated at each, where the evidence
    (PRML 3.86) exceeds `lml` by `LML_SAME`; None if none does before it falls `PROBE_DROP` nats below `lml` (then the
    residual dominates and it only falls further) or the iteration runs off an edge."""
    from bayeskern.fit.empirical_bayes import LML_SAME

    for k in range(1, 2 * BETA_PROBE_DECADES + 1):
        b = beta * 10.0 ** (k / 2)
        try:
            run = fixed_point(problem, alpha, b, beta_fixed=True)
        except RanOff:
            return None
        here = log_evidence(problem, run.alpha, b) if run.converged else -np.inf
        if here > lml + LML_SAME:
            return b, run.alpha, here
        if not here > lml - PROBE_DROP:
            return None
        alpha = run.alpha
    return None


def _warnings(best: tuple, optima: list, rising: tuple | None, shape: tuple[int, int], maxiter: int) -> list[str]:
    """What the caller is told about the result: (conditioned model, run) `best`, the distinct fixed points, the rise
    left along β (`_continued_past`), Φ's shape."""
    from bayeskern.fit.empirical_bayes import LML_SAME

    model, (alpha, beta, _, converged, change) = best
    lml, weights_zero = model.log_marginal_likelihood, _weights_zero_limit(model.targets)
    out = []
    if not converged:
        out.append(f"evidence_approximation did not converge in {maxiter} iterations: alpha, beta still change by "
                   f"{change:.3g} (relative) per step; alpha={alpha:.4g}, beta={beta:.4g}")
    if weights_zero > lml + LML_SAME:  # (one point and a cubic: 4e-16 nats more, round-off, not a better limit)
        out.append(f"the evidence is larger with all weights zero (alpha -> infinity: log evidence {weights_zero:.10g} there, "
                   f"{weights_zero - lml:.3g} nats more) than at the result ({lml:.10g}); the features explain less of t "
                   "than noise alone does")
    if len(optima) > 1:
        out.append(f"the evidence has {len(optima)} distinct fixed points of alpha, beta from the starts; kept the best "
                   f"(log evidence {optima[0].log_marginal_likelihood:.6g}), next best {optima[1].log_marginal_likelihood:.6g} — see .optima")
    if rising is not None:
        out.append(f"the evidence rises past the best fixed point as beta grows: log evidence {rising[2]:.6g} at beta={rising[0]:.4g} "
                   f"(alpha={rising[1]:.4g} re-estimated there) against {lml:.6g} at beta={beta:.4g}; what lies beyond (a higher "
                   f"fixed point, or a supremum as beta -> infinity where the {shape[1]} features fit the {shape[0]} targets "
                   "exactly) cannot be conditioned in float64 with these features, so the result is a local maximum: use fewer "
                   "or better-conditioned features")
    return out


def _weights_zero_limit(t: np.ndarray) -> float:
    """sup of ln p(t | α, β) as α → ∞ (w = 0, t ~ N(0, β⁻¹I)), at β = N/tᵀt: −N/2·(ln(2π tᵀt/N) + 1)."""
    N = len(t)
    with np.errstate(divide="ignore"):  # t = 0: +∞, no finite maximum either
        return float(-N / 2 * (np.log(2 * np.pi * (t @ t) / N) + 1.0))
