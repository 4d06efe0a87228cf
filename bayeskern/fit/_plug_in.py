"""Plug hyperparameter values into a marginal Gaussian model and get its conditioned model: one path for EB and MCMC."""

import copy

import numpy as np
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors

from bayeskern._compile import numpy_function
from bayeskern._validation import check_model, check_number, is_symbolic
from bayeskern.likelihood import Likelihood

__all__ = ["PlugIn"]


def _in_model(symbols: list, model) -> list:
    """The hyperparameter expressions with the model's own variables in them, matched by name.

    A record keeps the variables of the model it was built in; a clone of that model
    (`pm.model.fgraph.clone_model`) holds new variables of the same names.
    """
    named = model.named_vars
    foreign = {v: named[v.name] for v in ancestors(symbols) if v.name in named and named[v.name] is not v}
    return graph_replace(symbols, foreign, strict=False) if foreign else symbols


class PlugIn:
    """Turns values of a model's free random variables into the numeric likelihood record and its conditioned model.

    Built once per model: the record's hyperparameter expressions (σ, the kernel's hyperparameters, Σ)
    are compiled as a function of the free variables on their natural scale, so every call — the EB
    optimum, or each MCMC draw — costs a function call, not a compilation.
    """

    def __init__(self, model, record: Likelihood):
        model = check_model(model)
        if not isinstance(record, Likelihood):
            raise ValueError(f"record must be the likelihood record of the model, got {type(record).__name__}")
        self.record = record
        self.names = [rv.name for rv in model.free_RVs]
        self._symbols = record.symbols()
        inputs = [rv.type(name=rv.name) for rv in model.free_RVs]
        own = _in_model(self._symbols, model)
        outputs = graph_replace(own, dict(zip(model.free_RVs, inputs, strict=True)), strict=False)
        self._fn = numpy_function(inputs, outputs, on_unused_input="ignore")

    def with_record(self, record: Likelihood) -> "PlugIn":
        """The same compiled hyperparameters for `record`, a refined copy of this one's (the same symbols)."""
        other = copy.copy(self)
        other.record = record
        return other

    def numeric(self, params: dict) -> Likelihood:
        """The record with every hyperparameter a number, given `params` (free variable name → value)."""
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict {{name: value}} of the free random variables, got {type(params).__name__}")
        missing = [n for n in self.names if n not in params]
        if missing:
            raise ValueError(f"params lacks values for: {', '.join(missing)}")
        values = self._fn(*(check_number(params[n], f"params[{n!r}]") for n in self.names))
        by_id = {id(s): np.asarray(v) for s, v in zip(self._symbols, values, strict=True)}
        return self.record.with_values(lambda v: by_id[id(v)] if is_symbolic(v) else v)

    def condition(self, params: dict, predict_at=None):
        """The conditioned model (`bayeskern.conditioned.Conditioned`) at `params`; `predict_at`: the points of a
        full-covariance prediction to come, if known (`Likelihood.condition`)."""
        return self.numeric(params).condition(predict_at)
