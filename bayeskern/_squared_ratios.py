"""A stationary kernel's squared ratios r² = (t/ℓ)² as one Op whose gradient reads r² itself (the objective, numpy mode)."""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs, io_toposort
from pytensor.scalar.basic import Clip, Sqr, TrueDiv
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError

from bayeskern._linalg import LARGEST
from bayeskern._reused_arrays import reused_arrays

__all__ = ["AtMostLargest", "SquaredRatio", "with_squared_ratios"]


class SquaredRatio(Op):
    """r² = (t/ℓ)² of float64 differences t (any shape) and a length scale ℓ (a scalar): the kernels' sqr(clip(t/ℓ,
    ± the largest float)) (`kernels.stationary._sum_of_squares`) of the same t and ℓ to the bit, as the clip changes no
    square (a quotient of ±∞ squares to ∞, as ± the largest float does). In a graph, PyTensor rewrites a division it
    sees, t/e^z, into t·e^−z (`local_div_exp_to_mul_exp`): where it would have, r² here is the exact quotient's square,
    a rounding apart (an isotropic kernel on several columns, a Periodic whose period is a hyperparameter).

    Its gradient: ∂r²/∂ℓ = −2r²/ℓ reads r², capped at the largest float (r² = ∞ only where the kernel is 0, and its
    gradient there with it; `AtMostLargest`): Σ gz·min(r², max)·(−2/ℓ), one pass over the pairs for the product with
    the factors its sum shares with the amplitude's (`_summed_products`). Differentiating the clip instead forms t/ℓ's
    finiteness mask and multiplies gz by it, by the clipped quotient and by t: three passes more, per component of a
    sum of kernels. ∂r²/∂t = 2(t/ℓ)/ℓ where t/ℓ is finite, 0 where it overflows (the clip's gradient), for t that
    depends on the inputs (a Periodic's period).
    """

    __props__ = ()

    def make_node(self, t, ell):
        t, ell = pt.as_tensor_variable(t), pt.as_tensor_variable(ell)
        if t.type.dtype != "float64" or ell.type.dtype != "float64" or ell.type.ndim != 0:
            raise TypeError(f"SquaredRatio takes float64 t and a float64 scalar ℓ, not {t.type} and {ell.type}")
        return Apply(self, [t, ell], [t.type()])

    def infer_shape(self, node, shapes):
        return [shapes[0]]

    def perform(self, node, inputs, output_storage):
        t, ell = inputs
        out = reused_arrays.empty(np.shape(t), "float64")
        with np.errstate(all="ignore"):
            np.divide(t, ell, out=out)
            np.square(out, out=out)
        output_storage[0][0] = out

    def pullback(self, inputs, outputs, output_grads):
        t, ell = inputs
        (r2,) = outputs
        (gz,) = output_grads
        quotient = t / ell
        d_t = 2.0 * gz * pt.switch(pt.isfinite(quotient), quotient, 0.0) / ell  # ∂(t/ℓ)²/∂t = 2(t/ℓ)/ℓ
        d_ell = pt.sum(gz * _at_most_largest(r2)) * (-2.0 / ell)  # ∂(t/ℓ)²/∂ℓ = −2(t/ℓ)²/ℓ
        return [d_t, d_ell]


_squared_ratio = SquaredRatio()


class AtMostLargest(Op):
    """min(x, the largest float) of a float64 x: x itself (a view) where no entry is ∞ or NaN — one pass that reads x,
    where np.minimum writes a new array (a vector of pairs kept until the gradient's end: new memory at each call)."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def infer_shape(self, node, shapes):
        return [shapes[0]]

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = x if np.isfinite(np.max(x, initial=0.0)) else np.minimum(x, LARGEST)

    def pullback(self, inputs, outputs, output_grads):
        (x,) = inputs
        (gz,) = output_grads
        return [gz * pt.le(x, LARGEST)]  # (np.minimum's: 1 below the largest float, 0 at ∞)


_at_most_largest = AtMostLargest()


def with_squared_ratios(f):
    """f with each sqr(clip(t/ℓ, −max, max)) of a float64 t and a scalar ℓ (a stationary kernel's r² per input column,
    as `kernels.stationary._sum_of_squares` builds it) as SquaredRatio(t, ℓ), before f is differentiated: the same
    value to a rounding of r² (to the bit where PyTensor would not rewrite the division). After
    `_distinct_pairs.with_distinct_pairs`, which looks for pairs computed by Elemwise nodes alone."""
    replacements = {}
    for node in io_toposort(list(graph_inputs([f])), [f]):
        found = _squared_ratio_of(node)
        if found is not None:
            replacements[node.outputs[0]] = _squared_ratio(*found)
    return graph_replace(f, replacements, strict=False) if replacements else f


def _squared_ratio_of(node):
    """(t, ℓ) where `node` is sqr(clip(t/ℓ, −max, max)), t float64 and ℓ a scalar broadcast; else None."""
    if not _is_elemwise(node, Sqr) or node.outputs[0].type.dtype != "float64":
        return None
    clipped = node.inputs[0].owner
    if not _is_elemwise(clipped, Clip):
        return None
    quotient, lo, hi = clipped.inputs
    bounds = all(_is_constant(b, v) for b, v in ((lo, -LARGEST), (hi, LARGEST)))
    division = quotient.owner
    if not bounds or not _is_elemwise(division, TrueDiv):
        return None
    t, ell = division.inputs
    if t.type.dtype != "float64" or t.type.broadcastable != quotient.type.broadcastable:
        return None
    scalar = ell.owner.inputs[0] if ell.owner is not None and isinstance(ell.owner.op, DimShuffle) else ell
    if scalar.type.ndim != 0 or scalar.type.dtype != "float64" or not all(ell.type.broadcastable):
        return None
    return t, scalar


def _is_constant(v, value: float) -> bool:
    """v is the constant `value` (one number, perhaps broadcast)."""
    try:
        return float(get_underlying_scalar_constant_value(v)) == value
    except NotScalarConstantError:
        return False


def _is_elemwise(node, scalar_op: type) -> bool:
    return node is not None and isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, scalar_op)
