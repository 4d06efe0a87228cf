"""Sums of elementwise products over the pairs, Σᵢ ∏ₖ vₖᵢ, with the factors they share multiplied once (numpy mode)."""

from collections import Counter

import pytensor.tensor as pt
from pytensor.graph.features import ReplaceValidate
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.scalar.basic import Mul
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum

__all__ = ["SummedProducts"]


class SummedProducts(GraphRewriter):
    """Each Σ(s·v₁·v₂·…·vₘ) of vectors vₖ and broadcast scalars s as s·Σ(P·vⱼ·…), where P is the product of the
    largest set of its vector factors that another such sum multiplies too (all of that sum's factors, or those the two
    have in common), formed once for both: the gradient of a kernel's objective sums G·∂K/∂θ over the pairs for each
    θ, where one component's terms share most factors (G·e for its amplitude, G·e·r² for its length scale, G·e·rₖ²
    for each ARD length scale, with G = ½(ααᵀ − K⁻¹) and e its exponential). numpy multiplies a product's factors one
    pass at a time, a broadcast scalar too; here each pass over the pairs multiplies by a vector not multiplied before.

    The same terms in another order: the sums to a few roundings of their terms' magnitudes, still summed by numpy's
    pairwise `add.reduce`. The factors are ordered as they come in the graph (by the position of what computes them),
    so that a graph is rewritten the same way in every process: the rounding does not depend on the run.
    """

    def add_requirements(self, fgraph):
        fgraph.attach_feature(ReplaceValidate())

    def apply(self, fgraph):
        nodes = fgraph.toposort()
        rank = {v: k for k, v in enumerate(fgraph.inputs)}
        for node in nodes:
            rank.update((v, len(rank)) for v in node.outputs)

        def order(v):  # (a constant factor: before the rest, in the product's own order)
            return rank.get(v, -1)

        sums = [s for s in (_summed_product(fgraph, node, order) for node in nodes) if s is not None]
        sums.sort(key=lambda s: len(s[2]))  # (stable: the graph's order among sums of as many factors)
        formed = {}  # the factors of a product formed (sorted by `order`) → the product
        replacements = []
        for k, (node, scalars, vectors) in enumerate(sums):
            have = Counter(vectors)
            shared = [tuple(sorted((have & Counter(other)).elements(), key=order)) for j, (_, _, other) in enumerate(sums) if j != k]
            common = max([f for f in formed if not Counter(f) - have] + [f for f in shared if len(f) >= 2], key=len, default=())
            if common and common not in formed:
                formed[common] = _product(list(common))
            rest = sorted((have - Counter(common)).elements(), key=order)
            product = _product(([formed[common]] if common else []) + rest)
            formed.setdefault(tuple(vectors), product)
            total = pt.sum(product)
            for s in scalars:
                total = total * s.squeeze()
            replacements.append((node.outputs[0], total.astype(node.outputs[0].type.dtype)))
        if replacements:
            fgraph.replace_all_validate(replacements, reason="summed_products")


def _summed_product(fgraph, node, order):
    """(node, broadcast scalar factors, vector factors sorted by `order`) for a full Sum of a float64 vector product read by
    that Sum alone, with at least two vector factors; else None."""
    if type(node.op) is not Sum or node.inputs[0].ndim != 1 or node.outputs[0].type.dtype != "float64":
        return None
    if node.op.axis not in (None, (0,)) or node.op.acc_dtype not in (None, "float64"):
        return None
    x = node.inputs[0]
    product = x.owner
    if product is None or type(product.op) is not Elemwise or not isinstance(product.op.scalar_op, Mul):
        return None
    if x.type.dtype != "float64" or len(fgraph.clients[x]) != 1:
        return None
    scalars = [v for v in product.inputs if v.type.broadcastable == (True,)]
    vectors = sorted((v for v in product.inputs if v.type.broadcastable == (False,)), key=order)
    if len(vectors) < 2 or len(scalars) + len(vectors) != len(product.inputs):
        return None
    return node, scalars, vectors


def _product(factors: list):
    """v₁·v₂·…, one factor alone as it is."""
    return factors[0] if len(factors) == 1 else pt.mul(*factors)
