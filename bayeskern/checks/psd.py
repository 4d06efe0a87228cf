"""Mercer diagnostics on the user's data: is the kernel matrix positive semi-definite, and by what margin."""

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from bayeskern._json import record_dict
from bayeskern._linalg import PSD_ROUNDOFF, TINY, escalate_jitter, exact_cholesky, jitter_scale, psd_tolerance
from bayeskern._validation import as_inputs, check_kernel
from bayeskern.kernels import Kernel

__all__ = ["PSDCheck", "psd"]


@dataclass(frozen=True)
class PSDCheck:
    """What `psd(kernel, X)` found on K = k(X, X).

    `eigenvalues`: λ₁ ≤ … ≤ λₙ of K (the spectrum a report plots). `min_relative`: λ₁ / (n·ε·λₙ), the
    smallest eigenvalue in units of the round-off scale of an n × n eigensolver. `condition_number`:
    λₙ/λ₁ (inf when λ₁ ≤ 0). `jitter`: the smallest diagonal jitter with which Cholesky succeeds —
    0.0 if none is needed, else the first of `JITTER_STEPS` × mean diagonal that works, None if none
    does. `passed`: λ₁ ≥ −c·n·ε·max|λ| with c = `PSD_ROUNDOFF` (100), `_linalg.psd_tolerance`: PSD up
    to round-off (`is_psd` is the same flag under its former name).
    `asymmetry`: max|K − Kᵀ| / max|K| (a kernel must be symmetric; K is symmetrised before eigh).
    `verdict`: one sentence for a person.
    """

    kernel: str
    n: int
    eigenvalues: np.ndarray = field(repr=False)
    min_relative: float
    condition_number: float
    jitter: float | None
    passed: bool
    asymmetry: float
    verdict: str

    @property
    def is_psd(self) -> bool:
        """The former name of `passed`: K is PSD up to round-off."""
        return self.passed

    def to_dict(self) -> dict:
        """The fields as JSON values (`_json.jsonable`: lists, None for an infinite condition number), and `is_psd` = `passed`."""
        return {**record_dict(self), "is_psd": self.passed}  # is_psd: the key summary.json has always had


def _smallest_jitter(K: np.ndarray) -> float | None:
    """0.0 if K factorises, else the first jitter of the escalating steps that works, else None.

    "Factorises" is the package's one rule (`_linalg.exact_cholesky`: Cholesky succeeds and 1/cond₁ > n·ε),
    the rule `gp.condition` and the marginal likelihood apply.
    """
    if exact_cholesky(K) is not None:
        return 0.0
    L, jitter = escalate_jitter(lambda j: exact_cholesky(K, j), jitter_scale(np.diag(K)))
    return None if L is None else jitter


def psd(kernel: Kernel, X) -> PSDCheck:
    """Check Mercer's condition on the data: the eigen-spectrum of K = k(X, X) and what Cholesky makes of it.

    `kernel`: any bayeskern kernel with numeric hyperparameters. `X`: inputs (n, d).
    A Mercer kernel gives λ₁ ≥ 0 on every X; on a computer λ₁ may come out as small as −n·ε·λₙ, so
    λ₁ ≥ −100·n·ε·λₙ counts as PSD. One failing X proves a kernel is not Mercer; passing on X proves
    only that it is PSD there.
    """
    kernel, X = check_kernel(kernel), as_inputs(X, "X")
    K = kernel.evaluate(X)
    n = len(K)
    top = float(np.max(np.abs(K))) or 1.0
    asymmetry = float(np.max(np.abs(K - K.T))) / top
    lam = scipy.linalg.eigvalsh(0.5 * (K + K.T))  # ascending
    tolerance = psd_tolerance(lam)  # c·n·ε·max|λ|, the one PSD rule
    roundoff = max(tolerance / PSD_ROUNDOFF, TINY)  # n·ε·max|λ|, > 0 also for K = 0
    min_relative = float(lam[0]) / roundoff
    passed = bool(lam[0] >= -tolerance)
    condition = float(lam[-1] / lam[0]) if lam[0] > 0 else float("inf")
    jitter = _smallest_jitter(K)
    name = repr(kernel)
    if not passed:
        verdict = (
            f"{name} is not positive semi-definite on these {n} inputs: its smallest eigenvalue "
            f"{lam[0]:.3g} is {-min_relative:.3g} times the round-off scale n·ε·λmax = {roundoff:.3g} below zero, "
            "so it is not a Mercer kernel and cannot be a GP covariance"
            + ("" if jitter is None else f" (jitter {jitter:.3g} would hide this from Cholesky)")
            + "."
        )
    elif lam[0] <= tolerance:
        verdict = (
            f"{name} is positive semi-definite on these {n} inputs up to round-off, but singular "
            f"(smallest eigenvalue {lam[0]:.3g}, round-off scale {roundoff:.3g}); "
            + ("Cholesky needs no jitter." if jitter == 0.0 else "Cholesky needs jitter " + (f"{jitter:.3g}." if jitter is not None else "beyond the last step."))
        )
    else:
        verdict = (
            f"{name} is positive definite on these {n} inputs (smallest eigenvalue {lam[0]:.3g}, "
            f"condition number {condition:.3g})"
            + ("." if jitter == 0.0 else f"; Cholesky still needs jitter {jitter:.3g} at this conditioning.")
        )
    return PSDCheck(name, n, lam, min_relative, condition, jitter, passed, asymmetry, verdict)
