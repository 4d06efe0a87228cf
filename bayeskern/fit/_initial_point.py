"""A model's initial point, or draws from its priors, unconstrained, as PyMC computes them: compiled once per structure."""

import numpy as np
from pymc.initial_point import make_initial_point_expression
from pymc.pytensorf import find_rng_nodes
from pytensor.graph.replace import graph_replace

from bayeskern._compile import NUMPY, compiled_graph

__all__ = ["point_draws"]


def point_draws(model, strategy: str | None = None):
    """seed → {value variable: its initial value, unconstrained}: `make_initial_point_fn`'s numbers — the model's
    initial values (`strategy` None) or draws from the priors ("prior") — each random generator seeded from the seed as
    PyMC seeds it; the same to the bit where `NUMPY`'s rewrites and PyMC's FAST_COMPILE compute alike (a hierarchical
    draw through exp(log a), which FAST_RUN's rewrites simplify to a, can move by an ulp). PyMC compiles a new function
    for every call of `make_initial_point_fn` (~0.1–0.2 s of every fit, HalfNormal draws importing scipy.stats); here
    the generators are inputs, so the graph goes through `compiled_graph` on `NUMPY`: compiled once per structure, its rewritten graph
    kept on disk for later processes."""
    values = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={**model.rvs_to_initial_values, **{rv: strategy for rv in model.free_RVs if strategy}},
        return_transformed=True,
    )
    rngs = find_rng_nodes(values)
    generators = [rng.type() for rng in rngs]
    draw = compiled_graph(generators, graph_replace(values, dict(zip(rngs, generators, strict=True)), strict=False), mode=NUMPY)
    names = [model.rvs_to_values[rv].name for rv in model.free_RVs]

    def seeded(seed=None) -> dict:
        streams = np.random.SeedSequence(seed).spawn(len(rngs))  # `pymc.pytensorf.reseed_rngs`' seeding
        return dict(zip(names, draw(*(np.random.Generator(np.random.PCG64(s)) for s in streams)), strict=True))
    return seeded
