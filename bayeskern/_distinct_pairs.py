"""A kernel's pairs evaluated once per distinct data (the differences of points on a grid), the pairs reading it off."""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply, equal_computations
from pytensor.graph.op import Op
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs, io_toposort
from pytensor.tensor.basic import Alloc
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.subtensor import AdvancedIncSubtensor

__all__ = ["DISTINCT_MAX_SHARE", "GROWING", "SAMPLE_PAIRS", "Collapse", "Distinct", "Expand", "with_distinct_pairs"]

#: the pairs are evaluated once per distinct data only where the distinct data are at most this share of the pairs
#: (points on a grid: n lags, each a few bit patterns of xᵢ − xⱼ, among n(n + 1)/2 pairs: 5934 of 125 250 for 500
#: monthly times x = i/12); elsewhere every pair is evaluated, as before
DISTINCT_MAX_SHARE = 0.25
#: how many pairs, the first in `Kernel.lower_triangle`'s order (those among the first ~√(2·SAMPLE_PAIRS) points), are
#: looked at first, and a quarter of them: where their distinct rows are more than DISTINCT_MAX_SHARE of them and grow
#: more than GROWING-fold from the quarter to the whole (as the pairs do where all are distinct), the whole set is not
#: sorted (points at random positions: that look costs a few ms, sorting 2 001 000 pairs ~0.4 s per vector). On a grid
#: the share falls with more points; on a lattice seen at scattered points (days with gaps, values recorded to 2
#: decimals) it is high among the first pairs but the distinct differences grow slower than the pairs (measured at
#: n = 2000: random reals 4.03-fold, 99.9 % distinct in all; reals rounded to 2 decimals 2.38-fold, 1.6 %; unsorted
#: integers in [0, 20000) 2.86-fold, 2.0 %; monthly times 2.03-fold, 0.4 %)
SAMPLE_PAIRS = 2**15
GROWING = 3.5


def _codes(vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index, inverse) of the distinct bit patterns of a vector: equal bits, the same kernel value (−0.0 and
    0.0 apart; a NaN equal only to the same NaN)."""
    bits = np.ascontiguousarray(vector).view(np.dtype(f"u{vector.dtype.itemsize}"))
    _, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _joint(vectors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first index, inverse) of the distinct rows of the vectors taken together: codes combined one vector at a time."""
    first, inverse = _codes(vectors[0])
    for v in vectors[1:]:
        v_first, v_inverse = _codes(v)
        first, inverse = _codes(inverse.astype(np.int64) * len(v_first) + v_inverse)
    return first, inverse


def _few(vectors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """`_joint` of the vectors where their distinct rows are at most DISTINCT_MAX_SHARE of them (judged first on the
    first SAMPLE_PAIRS rows and a quarter of them), else None."""
    if len(vectors[0]) > SAMPLE_PAIRS:
        quarter, whole = (len(_joint([v[:k] for v in vectors])[0]) for k in (SAMPLE_PAIRS // 4, SAMPLE_PAIRS))
        if whole > DISTINCT_MAX_SHARE * SAMPLE_PAIRS and whole > GROWING * quarter:
            return None
    first, inverse = _joint(vectors)
    return (first, inverse) if len(first) <= DISTINCT_MAX_SHARE * len(vectors[0]) else None


class Distinct(Op):
    """(v₁ … vₘ) ↦ (v₁[f] … vₘ[f], inverse): the distinct rows of m vectors of one length, each at its first position f,
    and where each row is among them (vₖ = vₖ[f][inverse], int32). Where they are not few (more than DISTINCT_MAX_SHARE
    of the rows; the first SAMPLE_PAIRS rows are looked at first, `_few`), or longer than `max_rows`, the vectors
    themselves and an empty inverse: every row its own."""

    __props__ = ("m", "max_rows")

    def __init__(self, m: int, max_rows: int):
        self.m, self.max_rows = m, max_rows
        self.view_map = {k: [k] for k in range(m)}  # (where every row is its own)

    def make_node(self, *vectors):
        vectors = [pt.as_tensor_variable(v) for v in vectors]
        if len(vectors) != self.m:
            raise TypeError(f"Distinct({self.m}) takes {self.m} vectors, not {len(vectors)}")
        return Apply(self, vectors, [pt.TensorType(v.dtype, shape=(None,))() for v in vectors] + [pt.ivector()])

    def perform(self, node, inputs, output_storage):
        few = _few(inputs) if len(inputs[0]) <= self.max_rows else None
        if few is None:
            outputs = [*inputs, np.empty(0, dtype=np.int32)]
        else:
            first, inverse = few
            outputs = [*(v[first] for v in inputs), inverse.astype(np.int32)]
        for storage, value in zip(output_storage, outputs, strict=True):
            storage[0] = value

    def connection_pattern(self, node):
        return [[False] * len(node.outputs) for _ in node.inputs]  # data: nothing is differentiated with respect to them

    def pullback(self, inputs, outputs, cotangents):
        return [disconnected_type() for _ in inputs]


class Expand(Op):
    """(values at the distinct rows, inverse) ↦ the values at every row: values[inverse], or values where the inverse
    is empty (`Distinct` kept every row)."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, values, inverse):
        values, inverse = pt.as_tensor_variable(values), pt.as_tensor_variable(inverse)
        return Apply(self, [values, inverse], [pt.TensorType(values.dtype, shape=(None,))()])

    def perform(self, node, inputs, output_storage):
        values, inverse = inputs
        output_storage[0][0] = values if inverse.size == 0 else values[inverse]

    def connection_pattern(self, node):
        return [[True], [False]]

    def pullback(self, inputs, outputs, cotangents):
        values, inverse = inputs
        return [Collapse()(cotangents[0], inverse, values.shape[0]), disconnected_type()]


class Collapse(Op):
    """`Expand`'s adjoint: (g at every row, inverse, number of distinct rows) ↦ the sum of g over each distinct row's
    pairs (np.bincount), or g where the inverse is empty."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, g, inverse, size):
        g, inverse, size = pt.as_tensor_variable(g), pt.as_tensor_variable(inverse), pt.as_tensor_variable(size)
        return Apply(self, [g, inverse, size], [pt.TensorType(g.dtype, shape=(None,))()])

    def perform(self, node, inputs, output_storage):
        g, inverse, size = inputs
        output_storage[0][0] = g if inverse.size == 0 else np.bincount(inverse, weights=g, minlength=int(size)).astype(g.dtype, copy=False)

    def connection_pattern(self, node):
        return [[True], [False], [False]]

    def pullback(self, inputs, outputs, cotangents):
        return [Expand()(cotangents[0], inputs[1]), disconnected_type(), disconnected_type()]


def _placed_pairs(f, depends: set) -> list:
    """The vectors set into an array at data-only positions (`Kernel.lower_triangle` places its pairs so), where they
    depend on the inputs."""
    placed = []
    for node in io_toposort(list(graph_inputs([f])), [f]):
        op = node.op
        if isinstance(op, AdvancedIncSubtensor) and op.set_instead_of_inc and len(node.inputs) == 3:
            _, y, index = node.inputs
            if y in depends and index not in depends and y.ndim == 1 and y.dtype == "float64":
                placed.append(y)
    return placed


def _data_of_pairs(y, depends: set) -> tuple[list, dict] | None:
    """(the data-only vectors y is computed from element by element (through Elemwise nodes alone), the values filled
    along the pairs (`Constant`'s c: an Alloc of one value) mapped to that value as a broadcast vector), or None where
    a value along the pairs that depends on the inputs enters otherwise (then the pairs cannot be told apart by data)."""
    data, fills, seen, todo = [], {}, set(), [y]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v.type.broadcastable == (True,) or v.ndim == 0:
            continue  # one value for every pair (a hyperparameter, a constant)
        if v.owner is not None and isinstance(v.owner.op, Alloc) and v.owner.inputs[0].ndim == 0 and not depends.intersection(v.owner.inputs[1:]):
            fills[v] = pt.shape_padleft(v.owner.inputs[0])  # one value filled along the pairs: broadcast over any number of rows
        elif v not in depends:
            data.append(v)
        elif v.owner is not None and isinstance(v.owner.op, Elemwise):
            todo.extend(v.owner.inputs)
        else:
            return None
    return (data, fills) if data else None


def _representatives(variables: list) -> dict:
    """Each variable → the first of them that computes the same (each kernel of a sum forms its own differences)."""
    first = {}
    for v in variables:
        first[v] = next((u for u in dict.fromkeys(first.values()) if equal_computations([v], [u])), v)
    return first


def _at_distinct_rows(y, representative: dict, fills: dict, max_rows: int):
    """Expand(y at the distinct rows of its data, inverse): y's data (`representative`: datum → the one computing the
    same) replaced by their distinct rows, its fills by their broadcast value."""
    unique = list(dict.fromkeys(representative.values()))
    *distinct, inverse = Distinct(len(unique), max_rows)(*unique)
    at_distinct = dict(zip(unique, distinct, strict=True))
    return Expand()(graph_replace(y, {v: at_distinct[u] for v, u in representative.items()} | fills, strict=False), inverse)


def with_distinct_pairs(f, inputs: list, kept_bytes: int):
    """f with each vector of pairs a kernel places (`Kernel.lower_triangle`) computed once per distinct row of the data
    it is computed from, element by element: `Expand(y(distinct data), inverse)`, which is y's value to the bit (equal
    data, equal ufunc results). Its gradient sums each pair's share per distinct row first (`Collapse`): the same
    terms in another order. A sum over data that are not few together (RBF + Linear on a grid: the products xᵢᵀxⱼ are
    distinct) keeps every pair, as before.

    The distinct rows are found once per data set, with the other data-only values of the function split by
    `_compile._Hoisted`, which keeps those values only up to `kept_bytes`. A Distinct of m data vectors therefore looks
    for rows only up to kept_bytes / (8·(m + 2)) of them: there, even with every row its own, the kept values (m float64
    vectors, the int64 positions the pairs are placed at, and room for one more) fit; beyond, Distinct would run again
    at every call, so it keeps every row at once.

    "To the bit": numpy's ufuncs give one input the same result wherever it lies in a contiguous vector."""
    depends = set(inputs)
    for node in io_toposort(list(graph_inputs([f])), [f]):
        if any(v in depends for v in node.inputs):
            depends.update(node.outputs)
    replacements = {}
    for y in _placed_pairs(f, depends):
        found = _data_of_pairs(y, depends)
        if found is not None:
            representative = _representatives(found[0])
            m = len(set(representative.values()))
            replacements[y] = _at_distinct_rows(y, representative, found[1], kept_bytes // (8 * (m + 2)))
    return graph_replace(f, replacements, strict=False) if replacements else f
