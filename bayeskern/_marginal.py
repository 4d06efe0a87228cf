"""The record a marginal Gaussian likelihood leaves on its observed variable, for `bayeskern.fit` to find."""

from dataclasses import dataclass

import numpy as np

__all__ = ["MarginalGaussian", "find_marginal"]


@dataclass(frozen=True)
class MarginalGaussian:
    """What t ~ N(0, C) was built from: `kind` "gp" (C = K + σ²I, `kernel`) or "blr" (C = ΦΣΦᵀ + σ²I).

    `sigma`, the kernel's hyperparameters and `prior_cov` may be PyMC random variables; `X` and `y`
    are the numeric data.
    """

    kind: str
    X: np.ndarray
    y: np.ndarray
    sigma: object
    kernel: object = None
    features: object = None
    prior_cov: object = None


def find_marginal(model):
    """The observed variable of `model` and its MarginalGaussian record; a ValueError if there is none."""
    observed = list(model.observed_RVs)
    tagged = [v for v in observed if isinstance(getattr(v.tag, "bayeskern", None), MarginalGaussian)]
    if len(observed) != 1 or len(tagged) != 1:
        names = ", ".join(v.name for v in observed) or "none"
        raise ValueError(
            "the model needs exactly one observed variable, a marginal Gaussian likelihood made by "
            "bayeskern.gp.marginal_likelihood or bayeskern.blr.likelihood(collapsed=True); "
            f"its observed variables are: {names}"
        )
    return tagged[0], tagged[0].tag.bayeskern
