"""A model whose covariance is factorised once: log marginal likelihood, jitter, LOO, predictions and samples.

The solvers (`bayeskern.gp.ExactGP`: Cholesky of K + σ²I; `bayeskern.blr.WeightSpaceBLR`: the M × M
Woodbury route, or n × n with fewer points than features) factor in their constructor and implement `_latent`, `_loo` and `prior_variance`;
everything a user or `bayeskern.fit` asks of a conditioned model is written here once.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bayeskern._linalg import psd_factor
from bayeskern._validation import as_inputs, check_finite_result, check_flag, check_integer, numerical_failure, owned, rng_from, same_columns

__all__ = ["Conditioned", "Prediction"]

#: predictions without the full covariance are computed this many points at a time, so memory stays
#: O(n · PREDICT_BLOCK) whatever the number of points asked for
PREDICT_BLOCK = 2048

#: what can push a prediction over float64's edge, for a ValueError that says so (`numerical_failure`)
PREDICTION_OVERFLOW = "Xnew is too large for float64 at these hyperparameters (k(X, Xnew) or φ(Xnew) overflows): scale or center X and Xnew"


@dataclass(frozen=True)
class Prediction:
    """The predictive distribution at `Xnew`: `mean`, `var` (never negative), and `cov` only when asked for.

    `include_noise`: whether `var`/`cov` describe f(Xnew) (False) or new observations t (True).
    `cov` is None unless `full_cov=True` was passed (an m × m matrix nobody asked for is never built).
    """

    mean: np.ndarray
    var: np.ndarray
    cov: np.ndarray | None
    include_noise: bool
    Xnew: np.ndarray

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)


class Conditioned(ABC):
    """A Gaussian model t = f(X) + ε, ε ~ N(0, σ²I), conditioned on t: the factorisation is held, never redone.

    Attributes set by every solver: `X` (n, d), `targets` t (n,), `sigma` σ, `jitter` (what was added to
    the diagonal of the factorised matrix, 0.0 if nothing) and `log_marginal_likelihood` log p(t) of
    that same factorisation.
    """

    X: np.ndarray
    targets: np.ndarray
    sigma: float
    jitter: float
    log_marginal_likelihood: float

    # -- what a solver implements ----------------------------------------------------------------
    @abstractmethod
    def _latent(self, Xnew: np.ndarray, full_cov: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Mean, variance (clipped at 0) and, with `full_cov`, covariance of f(Xnew) given t."""

    @abstractmethod
    def _loo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Leave-one-out predictive p(tᵢ | t₋ᵢ) at every training point: means, variances, log densities."""

    @abstractmethod
    def prior_variance(self, Xnew: np.ndarray) -> float:
        """max k(x, x) over Xnew (checked: a prediction's): the scale of the terms whose difference is the posterior covariance."""

    @property
    @abstractmethod
    def gram_kernel(self):
        """The kernel k whose Gram matrix K(X, X) is the prior covariance of f (φᵀΣφ for a feature map)."""

    # -- written once for every solver -------------------------------------------------------------
    def _points(self, Xnew) -> np.ndarray:
        if Xnew is None:
            return self.X
        Xnew = as_inputs(Xnew, "Xnew")
        same_columns(self.X, Xnew, "X", "Xnew")
        return Xnew

    @numerical_failure(PREDICTION_OVERFLOW)
    def predict(self, Xnew=None, include_noise: bool = False, full_cov: bool = False) -> Prediction:
        """The posterior predictive at `Xnew` (X if not given) from the held factorisation.

        `include_noise`: variances of new observations t (f plus σ²) instead of f. `full_cov`: also the
        m × m covariance; without it the points are processed in blocks and memory stays O(n·block).
        """
        Xnew = self._points(Xnew)
        include_noise, full_cov = check_flag(include_noise, "include_noise"), check_flag(full_cov, "full_cov")
        if full_cov:
            mean, var, cov = self._latent(Xnew, True)
        else:
            parts = [self._latent(Xnew[i : i + PREDICT_BLOCK], False) for i in range(0, len(Xnew), PREDICT_BLOCK)]
            mean = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
            var, cov = (np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)), None
        if include_noise:
            var = var + self.sigma**2  # c = k(x, x) + β⁻¹   (PRML 6.67)
            if cov is not None:
                cov = cov + self.sigma**2 * np.eye(len(Xnew))
        if cov is not None:
            cov[np.diag_indices_from(cov)] = var
        return Prediction(mean, var, cov, include_noise, owned(Xnew))  # (not the caller's array, which may change)

    @numerical_failure(PREDICTION_OVERFLOW)
    def sample(self, Xnew=None, n: int = 1, seed=None, include_noise: bool = False) -> np.ndarray:
        """n draws (n, m) from the posterior predictive at `Xnew` (of f, or of t with `include_noise`).

        Drawn through a factor F Fᵀ of the covariance (`draws_from`: no jitter, round-off relative to the prior
        variance dropped). `seed` may be a Generator, whose stream goes on.
        """
        n, rng = check_integer(n, "n", 1), rng_from(seed)
        include_noise = check_flag(include_noise, "include_noise")
        f = self.draws_from(self.predict(Xnew, full_cov=True), n, rng)
        return f + self.sigma * rng.standard_normal(f.shape) if include_noise else f

    def draws_from(self, prediction: Prediction, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws (n, m) of f(Xnew) given this model's full-covariance `prediction` of f at Xnew (no second prediction).

        Through a factor F Fᵀ of the covariance (`bayeskern._linalg.psd_factor`: pivoted Cholesky, else the
        eigendecomposition; no jitter, round-off relative to the prior variance max k(x, x) the covariance is a
        difference of dropped, a covariance that is not PSD refused).
        """
        F = psd_factor(prediction.cov, "the predictive covariance", scale=self.prior_variance(prediction.Xnew))
        return prediction.mean + rng.standard_normal((n, F.shape[1])) @ F.T  # f = m + F z, F Fᵀ = K** − kᵀC⁻¹k

    @cached_property
    def loo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(means, variances, log densities) of p(tᵢ | t₋ᵢ) at these hyperparameters, computed once on first use.

        A ValueError (not −inf) when a density overflows float64: targets t far out for their predictive sd.
        """
        mean, var, log_density = self._loo()
        check_finite_result(log_density, "the leave-one-out log density log p(tᵢ | t₋ᵢ) of the targets y")
        return mean, var, log_density

    @property
    def loo_log_predictive(self) -> np.ndarray:
        """log p(tᵢ | t₋ᵢ) for each training point: exact leave-one-out without refitting (R&W 5.10–5.12)."""
        return self.loo[2]
