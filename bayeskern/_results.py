"""The predictive distribution shared by the GP and BLR posteriors: a named result, not a tuple."""

from dataclasses import dataclass

import numpy as np

__all__ = ["Posterior"]


@dataclass(frozen=True)
class Posterior:
    """A Gaussian predictive distribution at `Xnew`, and the log marginal likelihood of the data.

    `include_noise` says whether `cov`/`var` describe f(Xnew) (False) or new observations (True).
    """

    mean: np.ndarray
    cov: np.ndarray
    var: np.ndarray
    log_marginal_likelihood: float
    include_noise: bool
    Xnew: np.ndarray

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)
