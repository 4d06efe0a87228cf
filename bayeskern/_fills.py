"""Arrays of one value in PyTensor graphs, filled from a one-element value: what PyTensor's Numba `Alloc` fills cheaply.

PyTensor's Numba `Alloc` fills a 0-d value by an array assignment, for which Numba compiles its shape-mismatch message:
1.5–4.6 s per use on a new machine (BENCHMARKS.md, sessions 32 and 38: `lower_triangle`'s zeros 3.65 → 0.30 s for a
first call; a first φ(X) of 200 000 points with a bias column 5.3 → 2.6 s; a BLR model's first NUTS compile 27.2 →
24.9 s). A value of shape (1, …, 1) it fills by its one element: the same array. The package's own fills are built so
(`filled`); those PyTensor adds itself (the zeros of a Cholesky's gradient) are rewritten so where the package compiles
for NUTS (`fill_from_one_element`, in `_compile.NUMBA_NOGIL`).
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.basic import Alloc

__all__ = ["fill_from_one_element", "filled"]


def filled(value, *shape, dtype="float64"):
    """An array of `shape` whose every element is `value`, allocated from a constant of shape (1, …, 1)."""
    return pt.alloc(np.full((1,) * len(shape), value, dtype=dtype), *shape)


@node_rewriter([Alloc])
def fill_from_one_element(fgraph, node):
    """alloc(v, *shape) of a 0-d v as alloc of v shaped (1, …, 1): the same fill."""
    value, *shape = node.inputs
    if value.ndim != 0 or not shape:
        return None
    if isinstance(value, Constant):
        return [filled(value.data, *shape, dtype=value.dtype)]
    return [pt.alloc(pt.shape_padleft(value, len(shape)), *shape)]
