"""A fit's start where the data put some hyperparameters (`Likelihood.start_from_data`), in PyMC's unconstrained space."""

import numpy as np
import pytensor.tensor as pt
import scipy.optimize
from pytensor.graph.traversal import ancestors

from bayeskern._compile import NUMPY, compiled_graph


def data_start(objective, record, limit: float) -> np.ndarray | None:
    """z at the model's initial point with each hyperparameter the record suggests a value for moved to it: the one
    scalar value variable its expression depends on, solved for in [−limit, limit] (an expression of several, or of a
    vector, or one whose value the interval does not reach, is left at the initial point); None if none moved."""
    z, moved = objective.flat(objective.point), False
    offsets = np.cumsum([0, *objective.sizes])
    for expression, value in record.start_from_data().items():
        [natural] = objective.model.replace_rvs_by_values([pt.as_tensor_variable(expression)])
        owners = [i for i, v in enumerate(objective.value_vars) if v in set(ancestors([natural]))]
        if len(owners) != 1 or objective.sizes[owners[0]] != 1 or natural.ndim != 0:
            continue
        solved = _solve(compiled_graph([objective.value_vars[owners[0]]], [natural], mode=NUMPY), value, limit)
        if solved is not None:
            z[offsets[owners[0]]], moved = solved, True
    return z if moved else None


def _solve(expression, value: float, limit: float) -> float | None:
    """The x in [−limit, limit] with log expression(x) = log value (Brent's method), or None where the ends do not
    bracket it."""
    def gap(x: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.log(expression(np.asarray(x, dtype=np.float64))[0]) - np.log(value))

    low, high = gap(-limit), gap(limit)
    if not (np.isfinite(low) and np.isfinite(high) and low * high < 0):
        return None
    return float(scipy.optimize.brentq(gap, -limit, limit, xtol=1e-12))
