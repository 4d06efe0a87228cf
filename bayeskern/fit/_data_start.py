"""A fit's start where the data put some hyperparameters (`Likelihood.start_from_data`), in PyMC's unconstrained space."""

import numpy as np
import pytensor.tensor as pt
import scipy.optimize
from pytensor.graph.traversal import ancestors

from bayeskern._compile import NUMPY, compiled_graph

#: where a hyperparameter's value is sought along its value variable: a sign change of log e(x) − log target on this
#: many points of [−limit, limit], then Brent's method in it (x² of a Normal variable has its roots inside, not at the ends)
SEARCH_POINTS = 121


def data_start(objective, record, limit: float) -> np.ndarray | None:
    """z at the model's initial point with the hyperparameters the record suggests values for moved to them, in the
    record's order: the one scalar value variable an expression still depends on is solved for in [−limit, limit] (the
    root nearest its initial value), those moved before held where they were put (σ = s, then Σ = s²/λ for λ). An
    expression of a vector, or of several variables not moved yet, or one whose value the interval does not reach, is
    left at the initial point; None if nothing moved."""
    z, moved = objective.flat(objective.point), []
    offsets = np.cumsum([0, *objective.sizes])
    for expression, value in record.start_from_data().items():
        [natural] = objective.model.replace_rvs_by_values([pt.as_tensor_variable(expression)])
        inputs = [i for i, v in enumerate(objective.value_vars) if v in set(ancestors([natural]))]
        free = [i for i in inputs if i not in moved]
        if len(free) != 1 or objective.sizes[free[0]] != 1 or natural.ndim != 0 or not all(objective.sizes[i] == 1 for i in inputs):
            continue
        evaluate = compiled_graph([objective.value_vars[i] for i in inputs], [natural], mode=NUMPY)
        at = free[0]

        def expression_at(x: float) -> float:
            values = [np.asarray(x if i == at else z[offsets[i]], dtype=objective.value_vars[i].dtype) for i in inputs]
            return float(evaluate(*values)[0])

        solved = _solve(expression_at, value, limit, z[offsets[at]])
        if solved is not None:
            z[offsets[at]] = solved
            moved.append(at)
    return z if moved else None


def _solve(expression, value: float, limit: float, near: float) -> float | None:
    """The x in [−limit, limit] with log expression(x) = log value nearest `near` (Brent's method in each sign change of
    the gap on SEARCH_POINTS points), or None where there is none."""
    def gap(x: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.log(expression(x)) - np.log(value))

    grid = np.linspace(-limit, limit, SEARCH_POINTS)
    gaps = np.array([gap(x) for x in grid])
    roots = [float(x) for x, g in zip(grid, gaps) if g == 0.0]
    for k in np.flatnonzero(np.isfinite(gaps[:-1]) & np.isfinite(gaps[1:]) & (gaps[:-1] * gaps[1:] < 0)):
        roots.append(float(scipy.optimize.brentq(gap, grid[k], grid[k + 1], xtol=1e-12)))
    return min(roots, key=lambda x: abs(x - near)) if roots else None
