"""NUTS with nutpie, its model compiled once per model structure: a later model of that structure gets its own data.

nutpie compiles a model's log density and gradient into Numba callbacks that it does not cache: 6–8 s for the
first model of a process and 3–4 s for each further one (a 20-point GP with three hyperparameters; the sampling
itself took 0.1 s). A PyMC model of bayeskern holds its data in shared variables, so two models that differ
only in their data share nutpie's compiled callbacks: `CompiledPyMCModel.with_data` points them at the new model's
arrays (any number of rows, unless coords name the rows). "Same structure" is `bayeskern._compile`'s rule for
every graph the package compiles (the same operations, constants and wiring from the value variables and the
data), plus what nutpie fixes when it compiles besides the graphs: the variables' names and shapes, dims, coords,
bound checks and the initial point. The draws are `pm.sample(nuts_sampler="nutpie")`'s with the same seed, to
the last bit (its convergence checks off, as bk.fit.mcmc asks of pm.sample).
"""

import threading
import time

import numpy as np
from pymc.backends.arviz import patch_nutpie_idata
from pymc.sampling.parallel import _cpu_count
from pymc.util import get_random_generator

from bayeskern._compile import data_stand_ins, exact_arithmetic, numpy_mode, same_structure

__all__ = ["sample"]

#: the compiled models kept, most recently used last
_MAX_MODELS = 16
_MODELS: list = []  # (description, inputs, outputs, compiled model)
_MODELS_LOCK = threading.Lock()


def sample(model, draws: int, tune: int, chains: int, seed: int, progressbar: bool, target_accept: float | None = None):
    """What `pm.sample(draws, tune, chains, random_seed=seed, nuts_sampler="nutpie")` returns, the same draws, with
    nutpie's compiled model reused from an earlier model of the same structure."""
    import nutpie

    compiled = _compiled(model)
    # pm.sample's seeds and cores: one seed per chain from `seed`, nutpie takes the first; at most 4 cores, one per chain
    first_seed = int([rng.integers(2**30) for rng in get_random_generator(seed).spawn(chains)][0])
    started = time.time()
    idata = nutpie.sample(compiled, draws=draws, tune=max(tune, 1), chains=chains, cores=min(4, _cpu_count(), chains), seed=first_seed,
                          save_warmup=False, store_unconstrained=False, progress_bar=progressbar,
                          **({} if target_accept is None else {"target_accept": target_accept}))
    patch_nutpie_idata(idata, model, sampling_time=time.time() - started)
    return idata


def _compiled(model):
    """nutpie's compiled model of `model`: an earlier one of the same structure with this model's data, else compiled now."""
    import nutpie

    shared, stand_ins, outputs = data_stand_ins([model.logp(), *model.replace_rvs_by_values(model.unobserved_RVs)])
    inputs = [*model.value_vars, *stand_ins]
    description = _description(model, shared, [*model.value_vars, *outputs[1:]])
    with _MODELS_LOCK:
        for k in range(len(_MODELS) - 1, -1, -1):
            entry_description, entry_inputs, entry_outputs, compiled = _MODELS[k]
            if description is not None and entry_description == description and same_structure((entry_inputs, entry_outputs), (inputs, outputs)):
                _MODELS.append(_MODELS.pop(k))
                known = {v.name for v in compiled.shared_var_keys}  # the data nutpie's functions read
                return compiled.with_data(**{v.name: v.get_value() for v in shared if v.name in known})
    with exact_arithmetic():  # no fastmath: the draws do not depend on what the compile cache holds
        compiled = nutpie.compile_pymc_model(model, backend="numba")
    if description is not None:
        with _MODELS_LOCK:
            _MODELS.append((description, inputs, outputs, compiled))
            del _MODELS[:-_MAX_MODELS]
    return compiled


def _description(model, shared: list, sampled: list) -> tuple | None:
    """What nutpie fixes when it compiles besides the graphs: names, shapes, dims, coords, bound checks, the initial point
    (evaluated: it may come from the data), the data's names. None — never shared — if a sampled variable's or a
    deterministic's shape is not fixed in the graph (it may follow the data, and nutpie fixes it)."""
    shapes = tuple(tuple(v.type.shape) for v in sampled)
    if any(None in shape for shape in shapes):
        return None
    with numpy_mode():  # evaluated once
        start = {name: _plain(value) for name, value in model.initial_point().items()}
    initial = tuple((rv.name, _plain(value)) for rv, value in model.rvs_to_initial_values.items())
    coords = tuple((name, None if values is None else tuple(values)) for name, values in model.coords.items())
    dims = tuple((name, tuple(d)) for name, d in model.named_vars_to_dims.items())
    return (tuple(v.name for v in model.value_vars), tuple(v.name for v in model.unobserved_RVs), shapes, model.check_bounds,
            tuple(sorted(start.items())), initial, coords, dims, tuple(v.name for v in shared))


def _plain(value):
    """An initial value as something `==` compares: None, a strategy's name, or the numbers as nested tuples."""
    if value is None or isinstance(value, str):
        return value
    try:
        return ("numbers", np.asarray(value, dtype=float).tolist().__repr__())
    except (TypeError, ValueError):  # a symbolic initial value: equal to nothing else, so never shared
        return ("object", object())
