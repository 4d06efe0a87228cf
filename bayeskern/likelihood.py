"""The record a marginal Gaussian likelihood leaves in a PyMC model, and how `bayeskern.fit` finds it.

A record says what t ~ N(0, C) was built from — a kernel (`bayeskern.gp.GPLikelihood`, C = K + σ²I) or
a feature map (`bayeskern.blr.BLRLikelihood`, C = ΦΣΦᵀ + σ²I) — and answers for itself: its symbolic
hyperparameters, a numeric copy, its Gram kernel, its conditioned model. Fitters ask it; they never
branch on which one it is.
"""

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from bayeskern._validation import is_symbolic

__all__ = ["KernelLikelihood", "Likelihood", "attach", "find_likelihood"]


class Likelihood(ABC):
    """t ~ N(0, C) with data `X`, `y` and noise sd `sigma` (a number or a PyMC random variable)."""

    X: np.ndarray
    y: np.ndarray
    sigma: object

    @abstractmethod
    def hyperparameters(self) -> list:
        """Every hyperparameter value of C (σ first), numbers and PyMC expressions alike."""

    @abstractmethod
    def with_values(self, value: Callable) -> "Likelihood":
        """A copy with every hyperparameter v replaced by value(v) (a number, for a numeric record)."""

    @abstractmethod
    def gram_kernel(self):
        """The kernel k with K(X, X) the prior covariance of f (the model's kernel, or φᵀΣφ)."""

    @abstractmethod
    def check_inputs(self, X: np.ndarray) -> None:
        """A ValueError if the hyperparameters do not fit inputs like X (checked without compiling anything)."""

    @abstractmethod
    def condition(self, predict_at=None):
        """The conditioned model (`bayeskern.conditioned.Conditioned`) of a numeric record. `predict_at`: the points of a
        full-covariance prediction to come, which a solver may prepare for (the exact GP's, `gp.JOINT_MAX_PAIRS`)."""

    def size(self) -> int:
        """The largest dimension of the matrices one evaluation or one conditioning works on (n here): what decides
        whether the problem is small (`bayeskern._blas.SMALL_PROBLEM_MAX_N`)."""
        return len(self.y)

    def rows_per_evaluation(self) -> int:
        """How many data rows one evaluation of the log density passes over (n; 0 when it works from statistics)."""
        return len(self.y)

    def on_rows(self, rows: np.ndarray) -> "Likelihood":
        """The same model — hyperparameters, basis, inducing points — on the data rows `rows` only (a training split)."""
        return dataclasses.replace(self, X=self.X[rows], y=self.y[rows])

    def fit_warnings(self, conditioned=None) -> list[str]:
        """What a numeric record at fitted hyperparameters finds wrong with its own approximation (none for an exact model);
        `conditioned`: the model conditioned there, when the caller holds it already."""
        return []

    def sampling_warnings(self) -> list[str]:
        """What sampling the hyperparameters through this record's approximation, as the model holds it, would find
        wrong with it (none for an exact model)."""
        return []

    def start_from_data(self) -> dict:
        """{symbolic hyperparameter: natural value} where the data alone suggest a value for some of them, for a fitter's
        start; {} (the default) where they do not."""
        return {}

    def refined(self, numeric: "Likelihood") -> "Likelihood | None":
        """A copy of this model record with the approximation its own rule chooses at the hyperparameters of `numeric`
        (a fit's optimum), to be installed (`install`); None (the default) when the choice stays."""
        return None

    def install(self) -> None:
        """Put this record's approximation into its model's graph (the shared variables the record was built with)."""

    def approximation_as_fitted(self, given):
        """The approximation to audit against the exact GP: `given` (the model's settings), or the one the fit chose in
        its place (an automatic HSGP basis)."""
        return given

    def weight_space(self) -> tuple | None:
        """(φ, Σ) when the model is a regression on features, w ~ N(0, Σ); None for a kernel model."""
        return None

    def symbols(self) -> list:
        """The symbolic hyperparameters (PyMC expressions), each once."""
        seen = {}
        for v in self.hyperparameters():
            if is_symbolic(v):
                seen.setdefault(id(v), v)
        return list(seen.values())


class KernelLikelihood(Likelihood):
    """A record whose covariance is a kernel's, exact or approximated (a dataclass with `kernel` among its fields):
    σ and every kernel hyperparameter, substituted in one place; the prior of f is the kernel's."""

    kernel: object

    def hyperparameters(self) -> list:
        return [self.sigma] + [v for node in self.kernel.walk() for v in node.parameters().values()]

    def with_values(self, value) -> "KernelLikelihood":
        return dataclasses.replace(self, sigma=float(value(self.sigma)), kernel=self.kernel.map_hyperparameters(value))

    def gram_kernel(self):
        return self.kernel


def attach(obs, record: Likelihood):
    """Tag the observed variable `obs` with its record (the tag survives PyMC's model cloning)."""
    obs.tag.bayeskern = record
    return obs


def find_likelihood(model) -> tuple[object, Likelihood]:
    """The observed variable of `model` and its likelihood record; a ValueError if there is none."""
    observed = list(model.observed_RVs)
    tagged = [v for v in observed if isinstance(getattr(v.tag, "bayeskern", None), Likelihood)]
    if len(observed) == 1 and not tagged:
        explicit = f"{observed[0].name}_weights" in model.named_vars  # blr.likelihood(collapsed=False)'s weights
        raise ValueError(
            f"the model's observed variable {observed[0].name} is not a marginal Gaussian likelihood made by "
            "bayeskern.gp.marginal_likelihood or bayeskern.blr.likelihood(collapsed=True)"
            + (" (a BLR with collapsed=False keeps its weights as random variables: build it with collapsed=True, or sample "
               "it with pm.sample)" if explicit else "")
        )
    if len(observed) != 1 or len(tagged) != 1:
        names = ", ".join(v.name for v in observed) or "none"
        raise ValueError(
            "the model needs exactly one observed variable, a marginal Gaussian likelihood made by "
            "bayeskern.gp.marginal_likelihood or bayeskern.blr.likelihood(collapsed=True); "
            f"its observed variables are: {names}"
        )
    return tagged[0], tagged[0].tag.bayeskern
