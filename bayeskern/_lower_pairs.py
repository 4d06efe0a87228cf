"""The pairs i ≥ j of an n × n matrix as one Op: their rows, columns and flat positions, from n alone."""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.type import integer_dtypes

__all__ = ["LowerPairs", "lower_pairs"]


class LowerPairs(Op):
    """n ↦ (rows, cols, flat): the pairs i ≥ j of an n × n matrix row by row — `np.tril_indices(n)`'s order — and
    their positions i·n + j in the row-major matrix, int64 vectors of n(n + 1)/2 entries.

    One node where the same from `pt.arange` and `pt.repeat` took twelve, whose Numba implementations compiled for
    seconds on a new machine: a first NUTS compile of the seeds' sum kernel on an empty compile directory took
    18.0 s with them and 14.1 s with this loop (BENCHMARKS.md, session 38).
    """

    __props__ = ()

    def make_node(self, n):
        n = pt.as_tensor_variable(n)
        if n.ndim != 0 or n.dtype not in integer_dtypes:
            raise TypeError(f"LowerPairs takes an integer scalar n, not {n.type}")
        return Apply(self, [pt.cast(n, "int64")], [pt.lvector(), pt.lvector(), pt.lvector()])

    def perform(self, node, inputs, output_storage):
        n = int(inputs[0])
        i = np.arange(n)
        # row i holds the pairs (i, 0) … (i, i): rows repeats i i + 1 times; cols counts 0 … i, the position in the
        # flat list less the i(i + 1)/2 pairs of the rows before (two repeats: at n = 500, 0.5 ms against 4.4 ms for
        # the nonzero entries of a mask)
        rows = np.repeat(i, i + 1)
        cols = np.arange(n * (n + 1) // 2) - np.repeat(i * (i + 1) // 2, i + 1)
        for storage, value in zip(output_storage, (rows, cols, rows * n + cols), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        n = node.inputs[0]
        size = n * (n + 1) // 2
        return [(size,), (size,), (size,)]

    def connection_pattern(self, node):
        return [[False, False, False]]  # integers of a shape: nothing to differentiate

    def pullback(self, inputs, outputs, cotangents):
        return [disconnected_type()]


def lower_pairs(n):
    """(rows, cols, flat) of the pairs i ≥ j of an n × n matrix: `LowerPairs`."""
    return LowerPairs()(n)
