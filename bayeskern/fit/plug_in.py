"""Plug hyperparameter values into a marginal Gaussian model and get its exact posterior: one path for EB and MCMC."""

import numpy as np
import pytensor
from pytensor.graph.replace import graph_replace

from bayeskern._marginal import MarginalGaussian
from bayeskern._validation import check_model, check_number, is_symbolic

__all__ = ["PlugIn", "posterior_of"]


class PlugIn:
    """Turns values of a model's free random variables into the numeric GP or BLR posterior.

    Built once per model: the hyperparameter expressions of the likelihood (σ, the kernel's
    hyperparameters, Σ) are compiled as a function of the free variables on their natural scale,
    so every call — the EB optimum, or each MCMC draw — costs a function call, not a compilation.
    """

    def __init__(self, model, record: MarginalGaussian):
        model = check_model(model)
        if not isinstance(record, MarginalGaussian):
            raise ValueError(f"record must be the MarginalGaussian record of the model's likelihood, got {type(record).__name__}")
        self.record = record
        self.names = [rv.name for rv in model.free_RVs]
        symbols = [record.sigma, record.prior_cov]
        if record.kernel is not None:
            symbols += [v for node in record.kernel.walk() for v in node.parameters().values()]
        self._symbols = [v for v in symbols if is_symbolic(v)]
        inputs = [rv.type(name=rv.name) for rv in model.free_RVs]
        outputs = graph_replace(self._symbols, dict(zip(model.free_RVs, inputs, strict=True)), strict=False)
        self._fn = pytensor.function(inputs, outputs, mode="FAST_COMPILE", on_unused_input="ignore")

    def numeric(self, params: dict) -> MarginalGaussian:
        """The record with every hyperparameter a number, given `params` (free variable name → value)."""
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict {{name: value}} of the free random variables, got {type(params).__name__}")
        missing = [n for n in self.names if n not in params]
        if missing:
            raise ValueError(f"params lacks values for: {', '.join(missing)}")
        values = self._fn(*(check_number(params[n], f"params[{n!r}]") for n in self.names))
        by_id = {id(s): np.asarray(v) for s, v in zip(self._symbols, values, strict=True)}
        value = lambda v: by_id[id(v)] if is_symbolic(v) else v  # noqa: E731
        r = self.record
        kernel = None if r.kernel is None else r.kernel.map_hyperparameters(value)
        return MarginalGaussian(r.kind, r.X, r.y, float(value(r.sigma)), kernel, r.features, value(r.prior_cov))

    def posterior(self, params: dict, Xnew=None, include_noise: bool = False):
        """The exact GP or BLR posterior (`bayeskern.gp.posterior` / `bayeskern.blr.posterior`) at `params`."""
        return posterior_of(self.numeric(params), Xnew, include_noise)


def posterior_of(r: MarginalGaussian, Xnew=None, include_noise: bool = False):
    """The exact posterior of a numeric record (every hyperparameter a number)."""
    from bayeskern import blr, gp

    if r.kind == "gp":
        return gp.posterior(r.kernel, r.X, r.y, r.sigma, Xnew=Xnew, include_noise=include_noise)
    return blr.posterior(r.features, r.X, r.y, r.sigma, r.prior_cov, Xnew=Xnew, include_noise=include_noise)
