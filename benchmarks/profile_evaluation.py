"""Where one evaluation of the additive kernel's empirical-Bayes objective goes, node by node (numpy mode).

Each node's thunk of the compiled objective (its per-call part, `_Hoisted.main`) is wrapped by a timer (~20 µs a node on
top of the plain figure); 30 evaluations at perturbed points, as `bench_additive_kernel.py --per-evaluation` makes them.
Nodes whose output is a vector of the pairs are grouped by their scalar op ("vec:…"), the rest by their Op.

    .venv/bin/python benchmarks/profile_evaluation.py 500 2000
"""

import collections
import sys
import time

import numpy as np

from bench_additive_kernel import model, seasonal_series
from bayeskern._reused_arrays import reused_arrays
from bayeskern.fit.empirical_bayes import _Objective
from bayeskern.likelihood import find_likelihood

EVALUATIONS = 30


def profile(n: int) -> None:
    m = model(*seasonal_series(n))
    objective = _Objective(m, find_likelihood(m)[0], include_prior=False)
    z = objective.flat(objective.point)
    objective(z)  # compiles
    streamline = objective._value_and_grad.function.vm  # the Python linker's loop over its thunks, in order
    cells = dict(zip(streamline.__code__.co_freevars, (c.cell_contents for c in streamline.__closure__), strict=True))
    nodes, thunks = cells["order"], cells["thunks"]
    seconds = collections.defaultdict(float)

    def timed(k, thunk):
        def run():
            started = time.perf_counter()
            out = thunk()
            seconds[k] += time.perf_counter() - started
            return out
        for attribute in ("inputs", "outputs", "lazy"):
            if hasattr(thunk, attribute):
                setattr(run, attribute, getattr(thunk, attribute))
        return run

    thunks[:] = [timed(k, thunk) for k, thunk in enumerate(thunks)]
    rng = np.random.default_rng(0)
    with reused_arrays():
        started = time.perf_counter()
        for _ in range(EVALUATIONS):
            objective(z + 1e-3 * rng.standard_normal(len(z)))
        total = (time.perf_counter() - started) / EVALUATIONS
    groups, counts = collections.defaultdict(float), collections.Counter()
    for k, node in enumerate(nodes):
        out = node.outputs[0]
        pairs = out.ndim == 1 and out.type.shape[0] is None
        name = f"vec:{type(node.op).__name__}:{getattr(node.op, 'scalar_op', '')}" if pairs else type(node.op).__name__
        groups[name] += seconds[k] / EVALUATIONS
        counts[name] += 1
    print(f"n = {n}: one evaluation {total * 1e3:.2f} ms (its nodes {sum(seconds.values()) / EVALUATIONS * 1e3:.2f} ms), {len(nodes)} nodes")
    for name, s in sorted(groups.items(), key=lambda item: -item[1])[:15]:
        print(f"  {s * 1e3:8.3f} ms  {counts[name]:3d} × {name}")


if __name__ == "__main__":
    for n in map(int, sys.argv[1:] or ["500"]):
        profile(n)
