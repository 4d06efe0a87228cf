"""NUTS with nutpie: a model's log density compiled once per structure and cached on disk, later models get their data.

`nutpie.compile_pymc_model` wraps the log density PyTensor compiles with Numba in two `numba.cfunc`s that Numba
cannot cache (they reference the data's addresses): for the seeds' sum-kernel model at n = 200, 12.7 s in every process
on a 2-core EPYC VM, 40.6 s on an empty compile cache (benchmarks/bench_nuts_compile.py), against seconds of sampling.
Here the same PyTensor functions — nutpie's own `_make_functions`, the same rewrites and initial points — are compiled by
PyTensor's Numba linker with the GIL released while they run (`bayeskern._compile.NUMBA_NOGIL`), which PyTensor caches on
disk, and handed to nutpie's Python-callback interface (`nutpie.from_pyfunc`, what its JAX backend uses): 3.4 s in a
later process, 30.4 s on an empty cache. Each call pays ~20 µs of Python; nutpie's chains, threads of this process, run
the compiled code in parallel (sampling measured 5–25 % slower than through the cfuncs at n = 200, where a gradient
costs ~1.4 ms). The log density and gradient are the cfuncs' to the bit, so the draws are
`pm.sample(nuts_sampler="nutpie")`'s with the same seed (its convergence checks off, as bk.fit.mcmc asks of pm.sample).
The graphs of those functions, as `_make_functions` builds and rewrites them, are kept on disk by structure too
(`_graph_cache`): a later process links them as they are, with nothing built, differentiated or rewritten (the seeds'
sum-kernel model at n = 200: 1.2–2.0 s → 0.34–0.49 s a compile, BENCHMARKS.md, session 24).

A PyMC model of bayeskern holds its data in shared variables, so two models that differ only in their data share one
compiled model: `with_data` points it at the new model's arrays (any number of rows, unless coords name the rows).
"Same structure" is `bayeskern._compile`'s rule for every graph the package compiles (the same operations, constants
and wiring from the value variables and the data), plus what nutpie fixes when it compiles besides the graphs: the
variables' names and shapes, dims, coords, bound checks and the initial point.
"""

import os
import threading
import time

import numpy as np
from pymc.backends.arviz import patch_nutpie_idata
from pymc.util import get_random_generator

from bayeskern import _graph_cache
from bayeskern._compile import NUMBA_NOGIL, data_stand_ins, exact_arithmetic, linked, on_data_inputs, same_structure, split_off_data
from bayeskern.fit._initial_point import point_draws

__all__ = ["sample"]

#: with at most this many observations (the likelihood record's `size`) nutpie's chains run one after the other, in one thread: a gradient is then so
#: cheap that two chain threads spend their time handing Python's lock (each call enters Python, ~20 µs) to each
#: other. The seeds' sum kernel, 2 chains × 1000 + 1000 on this 2-core machine: n = 25 0.95 s in one thread against
#: 1.8 s in two, n = 50 1.85 against 2.0–2.2 s; n = 100 5.3–5.5 against 3.2–3.4 s, n = 200 20–21 against 12 s
#: (BENCHMARKS.md, session 28). The draws are the same either way
SEQUENTIAL_CHAINS_MAX_N = 50
#: the compiled models kept, most recently used last
_MAX_MODELS = 16
_MODELS: list = []  # (description, inputs, outputs, compiled model, the names of the data it reads)
_MODELS_LOCK = threading.Lock()


def sample(model, draws: int, tune: int, chains: int, seed: int, progressbar: bool, target_accept: float | None = None,
           problem_size: int | None = None):
    """What `pm.sample(draws, tune, chains, random_seed=seed, nuts_sampler="nutpie")` returns, the same draws, with
    nutpie's compiled model reused from an earlier model of the same structure, and a chain per available core (one
    after the other when the record's `problem_size` — n, or M for a BLR of more features — is at most SEQUENTIAL_CHAINS_MAX_N)."""
    import nutpie

    compile_started = time.perf_counter()
    compiled = _compiled(model)
    compile_seconds = time.perf_counter() - compile_started
    # pm.sample's seeds: one per chain from `seed`, nutpie takes the first. The chains run in parallel on every core
    # this process may use, where pm.sample uses half of them (PyMC's `_cpu_count` takes every other core for a
    # hyperthread: on a 2-core machine, one core, the chains one after the other). The draws do not depend on it
    first_seed = int([rng.integers(2**30) for rng in get_random_generator(seed).spawn(chains)][0])
    started = time.time()
    sequential = problem_size is not None and problem_size <= SEQUENTIAL_CHAINS_MAX_N
    idata = nutpie.sample(compiled, draws=draws, tune=max(tune, 1), chains=chains, cores=1 if sequential else min(_cores(), chains), seed=first_seed,
                          save_warmup=False, store_unconstrained=False, progress_bar=progressbar,
                          **({} if target_accept is None else {"target_accept": target_accept}))
    patch_nutpie_idata(idata, model, sampling_time=time.time() - started)
    idata.attrs["bayeskern_compile_seconds"] = compile_seconds  # compiled, or loaded from the compile directory
    return idata


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compiled(model):
    """nutpie's compiled model of `model`: an earlier one of the same structure with this model's data, else compiled
    now — from the graphs an earlier process kept on disk where it compiled this structure (`_graph_cache`)."""
    shared, stand_ins, outputs = data_stand_ins(_graphs(model))
    inputs = [*model.value_vars, *stand_ins]
    description = _description(model, shared, [*model.value_vars, *outputs[1:]])
    with _MODELS_LOCK:
        for k in range(len(_MODELS) - 1, -1, -1):
            entry_description, entry_inputs, entry_outputs, compiled, reads = _MODELS[k]
            if description is not None and entry_description == description and same_structure((entry_inputs, entry_outputs), (inputs, outputs)):
                _MODELS.append(_MODELS.pop(k))
                return compiled.with_data(**_data([v for v in shared if v.name in reads]))
    if description is None:
        return _compile(model, None, shared)[0]
    import nutpie

    key = _graph_cache.structure_key(inputs, outputs, f"nutpie {nutpie.__version__}\n{description!r}")
    compiled, reads = _compile(model, key, shared)
    with _MODELS_LOCK:
        _MODELS.append((description, inputs, outputs, compiled, reads))
        del _MODELS[:-_MAX_MODELS]
    return compiled


def _graphs(model) -> list:
    """What nutpie's functions compute: the model's log density, then its unobserved variables on their values."""
    return [model.logp(), *model.replace_rvs_by_values(model.unobserved_RVs)]


def _compile(model, key: str | None, shared: list):
    """(what `nutpie.compile_pymc_model(model, backend="numba")` samples — the same functions, data and initial points —
    on nutpie's Python-callback interface, the names of the data it reads). The functions are compiled on `NUMBA_NOGIL`
    without fastmath: the draws do not depend on what the compile cache holds. `key`: the graphs kept under it by an
    earlier process are linked as they are (nothing built, differentiated or rewritten: ~1 s of a warm compile at
    n = 200), or this compile's are kept under it once they have linked. `shared`: the model's data variables, those of
    `_graphs` (what nutpie's functions read)."""
    from nutpie.compile_pymc import _wrap_with_lock
    from pymc.initial_point import make_initial_point_fn

    initial_point = _wrap_with_lock(make_initial_point_fn(  # compile_pymc_model's: support points, jittered
        model=model, default_strategy="support_point", jitter_rvs=set(model.free_RVs), return_transformed=True))
    shared_by_name = {v.name: v for v in shared}
    parts = None if key is None else _graph_cache.kept(key)
    if parts is not None:
        try:
            return _assembled(model, parts, shared_by_name, initial_point)
        except Exception:  # noqa: BLE001 — kept by classes that changed since: compiled anew below, and kept again
            pass
    parts = _parts(model, initial_point)
    compiled = _assembled(model, parts, shared_by_name, initial_point)
    if key is not None:
        _graph_cache.keep(key, parts)
    return compiled


def _parts(model, initial_point) -> dict:
    """nutpie's functions of `model` as graphs to link — `_make_functions`' own, rewritten as it rewrites them — with
    what nutpie needs besides. `_make_functions` links its functions too; only their graphs are used (a Numba
    conversion of the graph is spent, ~0.1 s, where a structure is new)."""
    from nutpie.compile_pymc import _make_functions

    with exact_arithmetic():
        n_dim, _, logp_fn, expand_fn, _, shape_info, reparameterized = _make_functions(
            model, mode=NUMBA_NOGIL, compute_grad=True, join_expanded=False, pymc_initial_point_fn=initial_point)
    split = split_off_data(logp_fn)
    return {"n_dim": n_dim, "shape_info": shape_info, "reparameterized": reparameterized,
            "logp": (None, *on_data_inputs(logp_fn)) if split is None else split, "expand": on_data_inputs(expand_fn)}


def _assembled(model, parts: dict, shared_by_name: dict, initial_point):
    """(nutpie's compiled model from `_parts`, the names of the data it reads) on this model's data variables."""
    from nutpie.compile_pymc import _prepare_dims_and_coords, _rv_dict_to_flat_array_wrapper
    from nutpie.compiled_pyfunc import from_pyfunc

    n_dim, shape_info, (data_graph, main_graph, logp_data), (expand_graph, expand_data) = (
        parts["n_dim"], parts["shape_info"], parts["logp"], parts["expand"])
    names, _, shapes = shape_info
    data = _data([shared_by_name[name] for name in {*logp_data, *expand_data}])
    new_logp, expand = _logp_on_data(data_graph, main_graph), linked(expand_graph)
    # Numba compiles (or loads from the cache) a function at its first call: here, not in the chains (a compile error
    # raised here, not taken for a divergence). Any point will do; the origin of the unconstrained space
    new_logp()(np.zeros(n_dim), [data[name] for name in logp_data]), expand(np.zeros(n_dim), *[data[name] for name in expand_data])

    def make_logp():
        logp = new_logp()

        def log_density(point, /, **data):  # positional only: a datum may be named anything
            try:
                value, grad = logp(point, [data[name] for name in logp_data])
            except Exception as err:  # noqa: BLE001 — as in nutpie's cfunc (its code 1): a divergence, not the end of the run
                raise _BadPoint(f"the log density failed: {err}") from err
            if not np.all(np.isfinite(grad)):  # the cfunc's code 3; a non-finite value (its code 4) nutpie checks itself
                raise _BadPoint("the gradient is not finite")
            return float(value), grad
        return log_density

    def make_expand(seed1, seed2, chain):
        def draw(point, /, **data):
            values = expand(point, *[data[name] for name in expand_data])
            return {name: np.asarray(v, dtype=np.float64).reshape(shape) for name, v, shape in zip(names, values, shapes, strict=True)}
        return draw

    free = len(model.free_RVs)  # nutpie's initial points: the free variables' values, flattened in order
    initial_point_fn = _rv_dict_to_flat_array_wrapper(initial_point, names=names[:free], shapes=shapes[:free])
    dims, coords = _prepare_dims_and_coords(model, shape_info, parts["reparameterized"])
    compiled = from_pyfunc(
        ndim=n_dim, make_logp_fn=make_logp, make_expand_fn=make_expand, make_initial_point_fn=initial_point_fn,
        expanded_dtypes=[np.dtype(np.float64)] * len(names), expanded_shapes=shapes, expanded_names=names,
        shared_data=data, dims=dims, coords=coords, reparameterized_names=parts["reparameterized"],
    )
    return compiled, frozenset(data)


def _logp_on_data(data_graph, main_graph):
    """A maker of `logp(point, data arrays) -> (log density, gradient)`. What depends on the data alone (the pairs of
    points, the inputs gathered at them: `data_graph`, None if nothing) is computed once per data arrays
    (`split_off_data`; nutpie passes the same arrays to every call of a chain's function): per gradient, n = 200 1.08 →
    1.01 ms, n = 500 21.8 → 17.3 ms (BENCHMARKS.md, session 18)."""
    main = linked(main_graph)
    if data_graph is None:
        return lambda: lambda point, arrays: main(point, *arrays)
    data_part = linked(data_graph)

    def new_logp():
        kept = [(), ()]  # the arrays last seen, their data-only values

        def logp(point, arrays):
            if len(arrays) != len(kept[0]) or any(a is not b for a, b in zip(arrays, kept[0], strict=True)):
                values = data_part(*arrays)
                kept[:] = arrays, (values if isinstance(values, tuple) else (values,))
            return main(point, *kept[1], *arrays)
        return logp
    return new_logp


class _BadPoint(Exception):
    """A point where the log density failed or its gradient is not finite: nutpie counts it as a divergence."""

    is_recoverable = True  # read by nutpie's Python-callback interface


def _data(shared) -> dict:
    """name → a C-ordered copy of each shared variable's value, as nutpie's compiled models hold their data."""
    return {v.name: np.array(v.get_value(), order="C", copy=True) for v in shared}


def _description(model, shared: list, sampled: list) -> tuple | None:
    """What nutpie fixes when it compiles besides the graphs: names, shapes, dims, coords, bound checks, the initial point
    (evaluated: it may come from the data), the data's names — plain values, whose `repr` keys the graphs kept on disk.
    None — never shared — if a sampled variable's or a deterministic's shape is not fixed in the graph (it may follow
    the data, and nutpie fixes it), or an initial value is symbolic."""
    shapes = tuple(tuple(v.type.shape) for v in sampled)
    if any(None in shape for shape in shapes):
        return None
    start = point_draws(model)()
    try:
        start = {name: _plain(value) for name, value in start.items()}
        initial = tuple((rv.name, _plain(value)) for rv, value in model.rvs_to_initial_values.items())
    except (TypeError, ValueError):  # a symbolic initial value: equal to nothing else
        return None
    coords = tuple((name, None if values is None else tuple(values)) for name, values in model.coords.items())
    dims = tuple((name, tuple(d)) for name, d in model.named_vars_to_dims.items())
    return (tuple(v.name for v in model.value_vars), tuple(v.name for v in model.unobserved_RVs), shapes, model.check_bounds,
            tuple(sorted(start.items())), initial, coords, dims, tuple(v.name for v in shared))


def _plain(value):
    """An initial value as something `==` compares: None, a strategy's name, or the numbers as text (exact: `repr`)."""
    if value is None or isinstance(value, str):
        return value
    return ("numbers", repr(np.asarray(value, dtype=float).tolist()))
