"""The empirical-Bayes objective's gradient in numpy mode: squared ratios differentiated through r² (`_squared_ratios`),
sums of products sharing their common factors (`_summed_products`); the same numbers."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.scalar.basic import Clip, Mul
from pytensor.tensor.elemwise import Elemwise

import bayeskern as bk
from bayeskern import _compile
from bayeskern._compile import NUMPY, NUMPY_OBJECTIVE, numpy_function
from bayeskern._squared_ratios import AtMostLargest, SquaredRatio

K = bk.kernels
LARGEST = np.finfo(np.float64).max
#: z = (log a₁, log ℓ₁, log a₂, log ℓ₂, log ℓₚ, log a₃, log α, log ℓ₃, log σ)
Z = np.log([1.3, 2.0, 0.7, 3.0, 0.8, 0.5, 1.5, 0.4, 0.3])


def _objective(n: int = 80, kernel=None, X=None, names=("a1", "l1", "a2", "l2", "lp", "a3", "alpha", "l3")):
    """The objective of a sum of stationary kernels (RBF, RBF × Periodic, RatQuad: four squared ratios) on random times;
    or of `kernel(v)` (v: the hyperparameters `names` and s, by name) on X."""
    from bayeskern.fit.empirical_bayes import _Objective

    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(0.0, 10.0, n))[:, None] if X is None else X
    y = np.sin(2 * np.pi * X[:, 0]) + 0.1 * X.sum(axis=1) + 0.1 * rng.standard_normal(len(X))
    with pm.Model() as m:
        v = {name: pm.HalfNormal(name, 5.0) for name in [*names, "s"]}
        kernel = kernel or (lambda v: v["a1"] ** 2 * K.RBF(v["l1"]) + v["a2"] ** 2 * K.RBF(v["l2"]) * K.Periodic(1.0, v["lp"])
                            + v["a3"] ** 2 * K.RatQuad(v["alpha"], v["l3"]))
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=kernel(v), sigma=v["s"])
    return _Objective(m, m.observed_RVs[0], include_prior=False)


def _compiled_without(build, squared_ratios: bool = True, summed_products: bool = True):
    """`build()`'s objective compiled without either rewrite (a graph of its own, also on disk: without SquaredRatio the
    graph differs, and on NUMPY instead of NUMPY_OBJECTIVE its key does)."""
    with pytest.MonkeyPatch.context() as patch:
        if not squared_ratios:
            patch.setattr(_compile, "with_squared_ratios", lambda f: f)
        if not summed_products:
            patch.setattr(_compile, "NUMPY_OBJECTIVE", NUMPY)
        patch.setattr(_compile, "_GRAPHS", [])
        return build()


def _nodes(objective) -> list:
    return list(objective._value_and_grad.function.maker.fgraph.toposort())


# -- SquaredRatio ---------------------------------------------------------------------------------------------------

def test_squared_ratio_is_the_clipped_quotient_squared_to_the_bit():
    """(t/ℓ)² as the kernels compute it, sqr(clip(t/ℓ, ± the largest float)), bit for bit (assert_array_equal), for t
    from 0 to ± the largest float and ℓ from 1e-300 to 1e300: quotients that overflow (∞), underflow (0) or are exact."""
    t, ell = pt.vector("t"), pt.scalar("ell")
    f = numpy_function([t, ell], SquaredRatio()(t, ell))
    clipped = numpy_function([t, ell], pt.square(pt.clip(t / ell, -LARGEST, LARGEST)))
    values = np.array([0.0, -0.0, 1e-300, -3.5, 0.1, 2.0, 1e150, -1e200, LARGEST, -LARGEST])
    for scale in [1e-300, 1e-5, 1.0, 7.3, 1e5, 1e300]:
        np.testing.assert_array_equal(f(values, scale), clipped(values, scale))
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(f(values, scale), np.square(values / scale))


def test_squared_ratio_gradient_is_the_formula_and_zero_where_the_quotient_overflows():
    """∂/∂ℓ and ∂/∂t of Σ w·e, e = exp(−½(t/ℓ)²), against the formulas ∂/∂ℓ = Σ w·e·t²/ℓ³ and ∂/∂tᵢ = −wᵢ·eᵢ·tᵢ/ℓ²
    (rtol 1e-13: a few roundings), and against the autodiff of the clipped form. A quotient that overflows (t = 1e300,
    ℓ = 1e-10) adds 0 to both, as the clip's gradient does: not NaN."""
    t, ell, w = pt.vector("t"), pt.scalar("ell"), pt.vector("w")

    def gradients(r2):
        return numpy_function([t, ell, w], pt.grad(pt.sum(w * pt.exp(-0.5 * r2)), [ell, t]))

    ratio = gradients(SquaredRatio()(t, ell))
    clipped = gradients(pt.square(pt.clip(t / ell, -LARGEST, LARGEST)))
    rng = np.random.default_rng(0)
    tv, wv = rng.uniform(-3.0, 3.0, 40), rng.standard_normal(40)
    for ellv in [0.3, 1.0, 2.5]:
        e = np.exp(-0.5 * (tv / ellv) ** 2)
        d_ell, d_t = ratio(tv, ellv, wv)
        np.testing.assert_allclose(d_ell, np.sum(wv * e * tv**2) / ellv**3, rtol=1e-13)
        np.testing.assert_allclose(d_t, -wv * e * tv / ellv**2, rtol=1e-13)
        for a, b in zip(ratio(tv, ellv, wv), clipped(tv, ellv, wv), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-13)
    far = np.append(tv, 1e300)
    d_ell, d_t = ratio(far, 1e-10, np.append(wv, 1.0))
    assert np.isfinite(d_ell) and np.all(np.isfinite(d_t)) and d_t[-1] == 0.0
    np.testing.assert_allclose(d_ell, ratio(tv, 1e-10, wv)[0], rtol=0, atol=0)


def test_at_most_largest_is_the_input_itself_where_it_is_finite_else_its_minimum_with_the_largest_float():
    """`AtMostLargest` (the gradient's min(r², max)): the input where nothing is ∞ or NaN, else numpy's minimum (the
    input untouched), NaN kept; its gradient np.minimum's (1 below the largest float, 0 at ∞)."""
    x = pt.vector("x")
    op = AtMostLargest()
    f = numpy_function([x], op(x))
    finite = np.array([0.0, 3.5, 1e300, LARGEST])
    np.testing.assert_array_equal(f(finite), finite)
    wide = np.array([0.0, np.inf, 2.0, np.nan])
    kept = wide.copy()
    np.testing.assert_array_equal(f(wide), np.minimum(wide, LARGEST))
    np.testing.assert_array_equal(wide, kept)
    grad = numpy_function([x], pt.grad(pt.sum(op(x) * 3.0), x))
    np.testing.assert_array_equal(grad(np.array([1.0, np.inf, 2.0])), [3.0, 0.0, 3.0])


def test_the_objective_differentiates_its_squared_ratios_and_keeps_its_numbers():
    """The objective of RBF + RBF × Periodic + RatQuad on random times: each of its four squared ratios is one SquaredRatio
    (the Periodic's sines and the differences alike), no clip and no finiteness mask is left, and its value is the one
    compiled without the rewrite to the bit; its gradient to 1e-12 of its largest entry (the same terms, other order)."""
    rewritten = _objective()
    plain = _compiled_without(_objective, squared_ratios=False)
    assert sum(isinstance(node.op, SquaredRatio) for node in _nodes(rewritten)) == 4
    assert not any(isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Clip) for node in _nodes(rewritten))
    assert any(isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Clip) for node in _nodes(plain))
    for z in [Z, Z + 0.4, Z - 0.7]:
        (f, g), (f0, g0) = rewritten(z), plain(z)
        assert f == f0
        np.testing.assert_allclose(g, g0, rtol=0, atol=1e-12 * np.max(np.abs(g0)))


@pytest.mark.parametrize("case", ["isotropic on 2 columns", "free period"])
def test_where_pytensor_rewrites_the_division_the_objective_moves_by_a_rounding(case):
    """An isotropic RBF on two columns, and a Periodic whose period is a hyperparameter: PyTensor turns t/e^z into t·e^−z
    in the graph without SquaredRatio (`local_div_exp_to_mul_exp`), one rounding more; with it, r² is the exact
    quotient's square. The value agrees to 1e-11 relative (as the other objective tests, against the formulas), the
    gradient to 1e-10 of its largest entry (the review's worst at well-conditioned points: 7e-11)."""
    rng = np.random.default_rng(6)
    names = ("a1", "l1", "a2", "l2", "lp")
    if case == "free period":  # (l2 is the period)
        def build():
            return _objective(kernel=lambda v: v["a1"] ** 2 * K.Periodic(v["l2"], v["lp"]) + v["a2"] ** 2 * K.RBF(v["l1"]),
                              names=names)
    else:
        X = rng.uniform(0.0, 3.0, (60, 2))

        def build():
            return _objective(kernel=lambda v: v["a1"] ** 2 * K.RBF(v["l1"]) + v["a2"] ** 2 * K.Matern32(v["l2"]) * K.RBF(v["lp"]),
                              X=X, names=names)
    rewritten, plain = build(), _compiled_without(build, squared_ratios=False)
    assert any(isinstance(node.op, SquaredRatio) for node in _nodes(rewritten))
    z0 = np.log([1.3, 0.8, 0.7, 1.1, 0.9, 0.3])
    for z in [z0, z0 + 0.4, z0 - 0.7]:
        (f, g), (f0, g0) = rewritten(z), plain(z)
        np.testing.assert_allclose(f, f0, rtol=1e-11)
        np.testing.assert_allclose(g, g0, rtol=0, atol=1e-10 * np.max(np.abs(g0)))


# -- SummedProducts -------------------------------------------------------------------------------------------------

def _vector_products(fn) -> list:
    return [node for node in fn.maker.fgraph.toposort()
            if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Mul) and node.outputs[0].type.shape != (1,)
            and node.outputs[0].ndim == 1]


def test_sums_of_products_share_their_common_factors():
    """Σ(s₁·a·b) + Σ(s₂·a·b·c)·Σ(s₃·a·b·d): a·b is formed once and each larger product starts from it, the scalars
    multiply the sums (three products of two vectors each, where numpy alone makes three of 2–3 passes each);
    the numbers are numpy's to 1e-14 (the same terms in another order)."""
    a, b, c, d = (pt.vector(name) for name in "abcd")
    s1, s2, s3 = (pt.scalar(name) for name in ("s1", "s2", "s3"))
    f = pt.sum(s1 * a * b) + pt.sum(s2 * a * b * c) * pt.sum(s3 * a * b * d)
    inputs = [a, b, c, d, s1, s2, s3]
    shared = _compile._function(inputs, f, mode=NUMPY_OBJECTIVE)
    plain = _compile._function(inputs, f, mode=NUMPY)
    products = _vector_products(shared)
    assert len(products) == 3 and all(len(node.inputs) == 2 for node in products)
    ab = next(node.outputs[0] for node in products if {v.name for v in node.inputs} == {"a", "b"})
    assert sum(ab in node.inputs for node in products) == 2
    assert sum(len(node.inputs) - 1 for node in _vector_products(plain)) > 3
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(1000) for _ in range(4)] + [0.5, -1.5, 2.0]
    av, bv, cv, dv, v1, v2, v3 = values
    expected = np.sum(v1 * av * bv) + np.sum(v2 * av * bv * cv) * np.sum(v3 * av * bv * dv)
    np.testing.assert_allclose(shared(*values), expected, rtol=1e-14)


def test_sums_share_the_factors_they_have_in_common_and_take_constant_factors():
    """Σ(a·b·c) + Σ(a·b·d)·Σ(a·b·k), k a constant vector (each ARD length scale's sum: G·e·rₖ², no amplitude's G·e to
    start from): a·b formed once, each sum one more pass; the numbers are numpy's to 1e-14."""
    a, b, c, d = (pt.vector(name) for name in "abcd")
    k = np.linspace(0.5, 1.5, 1000)
    f = pt.sum(a * b * c) + pt.sum(a * b * d) * pt.sum(a * b * pt.constant(k))
    fn = _compile._function([a, b, c, d], f, mode=NUMPY_OBJECTIVE)
    products = _vector_products(fn)
    assert len(products) == 4 and all(len(node.inputs) == 2 for node in products)
    rng = np.random.default_rng(2)
    av, bv, cv, dv = (rng.standard_normal(1000) for _ in range(4))
    expected = np.sum(av * bv * cv) + np.sum(av * bv * dv) * np.sum(av * bv * k)
    np.testing.assert_allclose(fn(av, bv, cv, dv), expected, rtol=1e-14)


def test_the_objective_gradient_with_shared_products_is_the_same():
    """The objective above compiled without `SummedProducts` (mode NUMPY): the same value to the bit, the gradient to 1e-12
    of its largest entry; and central differences of the value agree with it (step 1e-6: truncation ~1e-12, round-off
    ~1e-10/h; rtol 1e-6)."""
    rewritten = _objective()
    plain = _compiled_without(_objective, summed_products=False)
    passes = [sum(len(node.inputs) - 1 for node in _nodes(o) if node in _vector_products(o._value_and_grad.function))
              for o in (rewritten, plain)]
    assert passes[0] < passes[1]  # (and `plain` is a graph compiled on NUMPY, not the rewritten one from disk)
    for z in [Z, Z + 0.3]:
        (f, g), (f0, g0) = rewritten(z), plain(z)
        assert f == f0
        np.testing.assert_allclose(g, g0, rtol=0, atol=1e-12 * np.max(np.abs(g0)))
    h = 1e-6
    central = [(rewritten(Z + h * e)[0] - rewritten(Z - h * e)[0]) / (2 * h) for e in np.eye(len(Z))]
    np.testing.assert_allclose(rewritten(Z)[1], central, rtol=1e-6, atol=1e-6)
