"""A kernel's pairs evaluated once per distinct data (`_distinct_pairs`): points on a grid, the same numbers."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import bayeskern as bk
from bayeskern import _distinct_pairs
from bayeskern._distinct_pairs import Distinct, Expand

import reference as ref

K = bk.kernels
#: z = (log a₁, log ℓ₁, log a₂, log ℓ₂, log ℓₚ, log a₃, log α, log ℓ₃, log σ): every kind of pair vector a time
#: series' additive kernel forms (differences, the periodic's sines of reduced inputs)
Z = np.log([1.3, 2.0, 0.7, 3.0, 0.8, 0.5, 1.5, 0.4, 0.3])


def _model(X, y):
    with pm.Model() as m:
        names = ["a1", "l1", "a2", "l2", "lp", "a3", "alpha", "l3", "s"]
        v = {name: pm.HalfNormal(name, 5.0) for name in names}
        kernel = (v["a1"] ** 2 * K.RBF(v["l1"]) + v["a2"] ** 2 * K.RBF(v["l2"]) * K.Periodic(1.0, v["lp"])
                  + v["a3"] ** 2 * K.RatQuad(v["alpha"], v["l3"]))
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=kernel, sigma=v["s"])
    return m


def _reference_lml(z, X, y):
    """The log marginal likelihood from the formulas (tests/reference.py), R&W (2.30)."""
    a1, l1, a2, l2, lp, a3, alpha, l3, s = np.exp(z)
    Kx = (a1**2 * ref.rbf(X, X, l1) + a2**2 * ref.rbf(X, X, l2) * ref.periodic(X, X, 1.0, lp)
          + a3**2 * ref.rational_quadratic(X, X, alpha, l3))
    return ref.gp_posterior(Kx, Kx[:, :1], Kx[:1, :1], y, s)[2]


def _series(X):
    return np.sin(2 * np.pi * X[:, 0]) + 0.05 * X[:, 0] + 0.1 * np.random.default_rng(3).standard_normal(len(X))


def _objective(X, y):
    from bayeskern.fit.empirical_bayes import _Objective

    model = _model(X, y)
    return _Objective(model, model.observed_RVs[0], include_prior=False)


def _without_transform(build):
    """`build()`'s objective compiled without `with_distinct_pairs` (a graph of its own, also on disk): the pairwise
    numbers the transform is to reproduce."""
    from bayeskern import _compile

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_compile, "with_distinct_pairs", lambda f, inputs, kept_bytes: f)
        patch.setattr(_compile, "_GRAPHS", [])
        return build()


def _distinct_calls(monkeypatch) -> list:
    """The (rows, distinct rows) each `Distinct` finds from now on (distinct rows 0: every row kept). (`_few` is looked up
    at each call; a compiled function's thunks hold the Op's `perform` of the process's first compile.)"""
    calls, few = [], _distinct_pairs._few

    def spy(vectors):
        found = few(vectors)
        calls.append((len(vectors[0]), 0 if found is None else len(found[0])))
        return found

    monkeypatch.setattr(_distinct_pairs, "_few", spy)
    return calls


def test_monthly_points_are_evaluated_once_per_distinct_difference_with_the_same_numbers(monkeypatch):
    """60 monthly points (x = i/12): the objective's kernel is evaluated at the distinct pairs' data only — as many as
    numpy counts distinct bit patterns of xᵢ − xⱼ (i ≥ j) — and its value is the one computed with every pair to the
    bit (equal data, equal ufunc results), and the formulas' to round-off (rtol 1e-11, as the other objective tests);
    its gradient is every pair's to 1e-12 of its largest entry (the same terms summed in another order) and matches
    central differences of the formulas' LML (step 1e-6: truncation ~1e-12, round-off ~1e-10/h; rtol 1e-6)."""
    X = (np.arange(60) / 12.0)[:, None]
    y = _series(X)
    calls = _distinct_calls(monkeypatch)
    objective = _objective(X, y)
    value, gradient = objective._value_and_grad(*objective._split(Z))
    rows, cols = np.tril_indices(60)
    differences = X[rows, 0] - X[cols, 0]
    reduced = np.fmod(X[rows, 0], 1.0) - np.fmod(X[cols, 0], 1.0)  # the periodic's differences (of inputs mod T)
    fewest = len(np.unique(differences.view(np.uint64)))
    most = len(np.unique(np.stack([differences, reduced], axis=1).view(np.uint64), axis=0))
    [(pairs, found)] = calls
    assert pairs == len(rows) and fewest <= found <= most and found <= 0.25 * len(rows)
    np.testing.assert_allclose(value, _reference_lml(Z, X, y), rtol=1e-11)
    h = 1e-6
    central = [(_reference_lml(Z + h * e, X, y) - _reference_lml(Z - h * e, X, y)) / (2 * h) for e in np.eye(len(Z))]
    np.testing.assert_allclose(gradient, central, rtol=1e-6, atol=1e-6)

    pairwise = _without_transform(lambda: _objective(X, y))
    every_value, every_gradient = pairwise._value_and_grad(*pairwise._split(Z))
    assert value == every_value
    np.testing.assert_allclose(gradient, every_gradient, rtol=0, atol=1e-12 * np.abs(every_gradient).max())


def test_points_off_a_grid_keep_every_pair_and_the_same_bits(monkeypatch):
    """Random points: every difference is distinct, the pairs are evaluated as before — value and gradient the same
    bits as the objective compiled without the transform."""
    X = np.sort(np.random.default_rng(4).uniform(0, 5, 60))[:, None]
    y = _series(X)
    calls = _distinct_calls(monkeypatch)
    objective = _objective(X, y)
    value, gradient = objective._value_and_grad(*objective._split(Z))
    assert calls == [(60 * 61 // 2, 0)]
    np.testing.assert_allclose(value, _reference_lml(Z, X, y), rtol=1e-11)
    pairwise = _without_transform(lambda: _objective(X, y))
    every_value, every_gradient = pairwise._value_and_grad(*pairwise._split(Z))
    assert value == every_value
    np.testing.assert_array_equal(gradient, every_gradient)


def test_distinct_rows_are_told_apart_by_their_bits_and_taken_together():
    """Rows are equal where every vector's bits are: −0.0 and 0.0 are two rows (1/x tells them apart), a NaN equals the
    same NaN; two vectors are taken jointly; beyond `max_rows`, or where the distinct rows are more than
    DISTINCT_MAX_SHARE of them, every row is its own (an empty inverse, the vectors themselves)."""
    a = np.array([0.0, -0.0, 1.0, 1.0, np.nan, np.nan] + [2.0] * 24)  # 6 distinct rows of 30: a fifth
    b = np.array([5.0, 5.0, 5.0, 6.0, 7.0, 7.0] + [8.0] * 24)
    x, w = pt.dvector(), pt.dvector()
    fn = pytensor.function([x, w], Distinct(2, 100)(x, w), mode="FAST_COMPILE")
    da, db, inverse = fn(a, b)
    assert len(da) == 6  # (0, 5) (−0, 5) (1, 5) (1, 6) (nan, 7) (2, 8)
    np.testing.assert_array_equal(da[inverse].view(np.uint64), a.view(np.uint64))
    np.testing.assert_array_equal(db[inverse], b)
    assert np.signbit(da[inverse][1]) and not np.signbit(da[inverse][0])
    _, _, inverse = pytensor.function([x, w], Distinct(2, 29)(x, w), mode="FAST_COMPILE")(a, b)  # longer than max_rows
    assert inverse.size == 0
    spread = np.arange(30.0)
    kept, _, inverse = fn(spread, spread)
    assert inverse.size == 0 and np.array_equal(kept, spread)


def test_expand_and_collapse_are_adjoint_gathers_and_sums():
    """Expand(v, inverse) = v[inverse]; its gradient is Collapse, the per-row sums np.add.at gives; with an empty
    inverse both are the identity."""
    values, inverse, g = pt.dvector(), pt.ivector(), pt.dvector()
    expanded = Expand()(values, inverse)
    pullback = pytensor.grad(pt.sum(expanded * g), values)
    fn = pytensor.function([values, inverse, g], [expanded, pullback], mode="FAST_COMPILE")
    v, idx = np.array([1.5, -2.0, 4.0]), np.array([2, 0, 0, 1, 2, 2], dtype=np.int32)
    weights = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    out, back = fn(v, idx, weights)
    np.testing.assert_array_equal(out, v[idx])
    summed = np.zeros(3)
    np.add.at(summed, idx, weights)
    np.testing.assert_allclose(back, summed, rtol=1e-15)
    out, back = fn(v, np.empty(0, dtype=np.int32), weights[:3])
    np.testing.assert_array_equal(out, v)
    np.testing.assert_array_equal(back, weights[:3])


def test_a_first_look_at_the_pairs_spares_sorting_them_all(monkeypatch):
    """The first SAMPLE_PAIRS rows and a quarter of them are looked at first. All distinct and growing with the rows
    (random reals): the whole set is not sorted. Few among the first rows (a grid), or many there but growing slower
    than the rows (a lattice seen at scattered points: 40 values repeated), it is — and found few."""
    looked = []
    joint = _distinct_pairs._joint
    monkeypatch.setattr(_distinct_pairs, "_joint", lambda vectors: looked.append(len(vectors[0])) or joint(vectors))
    monkeypatch.setattr(_distinct_pairs, "SAMPLE_PAIRS", 64)
    assert _distinct_pairs._few([np.random.default_rng(0).standard_normal(1000)]) is None
    assert looked == [16, 64]
    for repeated, distinct in ((np.tile([1.0, 2.0, 3.0], 400), 3), (np.tile(np.arange(40.0), 25), 40)):
        looked.clear()
        few = _distinct_pairs._few([repeated])
        assert looked == [16, 64, len(repeated)] and len(few[0]) == distinct


def test_a_constant_term_is_filled_at_the_distinct_rows_too(monkeypatch):
    """RBF + Constant (a fitted offset's prior variance) on monthly points: the constant's fill does not stop the
    pairs from being evaluated once per distinct difference; the value is the objective's compiled without the
    transform to the bit, the gradient to 1e-12 of its largest entry (reordered sums)."""
    from bayeskern.fit.empirical_bayes import _Objective

    X = (np.arange(48) / 12.0)[:, None]
    with pm.Model() as model:
        amp, ls, c, s = (pm.HalfNormal(name, 3.0) for name in ("amp", "ls", "c", "s"))
        bk.gp.marginal_likelihood("y", X=X, y=_series(X), kernel=amp * K.RBF(ls) + K.Constant(c), sigma=s)
    calls = _distinct_calls(monkeypatch)
    objective = _Objective(model, model.observed_RVs[0], include_prior=False)
    z = np.log([1.2, 0.7, 0.4, 0.3])
    value, gradient = objective._value_and_grad(*objective._split(z))
    [(pairs, found)] = calls
    assert pairs == 48 * 49 // 2 and 0 < found <= 0.25 * pairs
    pairwise = _without_transform(lambda: _Objective(model, model.observed_RVs[0], include_prior=False))
    every_value, every_gradient = pairwise._value_and_grad(*pairwise._split(z))
    assert value == every_value
    np.testing.assert_allclose(gradient, every_gradient, rtol=0, atol=1e-12 * np.abs(every_gradient).max())


def test_distinct_rows_are_looked_for_only_where_the_data_only_values_are_kept(monkeypatch):
    """A Distinct of m vectors looks for distinct rows only up to kept_bytes / (8·(m + 2)) rows: where every row stays
    its own, the function keeps the m vectors and the pairs' positions, and beyond the budget they are recomputed at
    every call — Distinct with them. 4-column inputs (4 difference vectors, 40 bytes a pair kept), 1830 pairs, a
    budget of 60 000 bytes: it keeps every row without looking, and no call looks again."""
    from bayeskern import _compile
    from bayeskern.fit.empirical_bayes import _Objective

    monkeypatch.setattr(_compile, "HOIST_MAX_BYTES", 60_000)  # (read when the structure is compiled, and at each call)
    X = np.random.default_rng(6).uniform(-1, 1, (60, 4))
    with pm.Model() as model:  # a structure no other test compiles: its Distinct sized by this budget
        amp, s = pm.HalfNormal("amp", 2.0), pm.HalfNormal("s", 1.0)
        ls = pm.HalfNormal("ls", 2.0, shape=4)
        bk.gp.marginal_likelihood("y", X=X, y=X.sum(1), kernel=amp * K.Matern32(ls) + K.Constant(0.5), sigma=s)
    calls = _distinct_calls(monkeypatch)
    objective = _Objective(model, model.observed_RVs[0], include_prior=False)
    for k in range(3):
        objective._value_and_grad(*objective._split(np.full(6, 0.1 * k)))
    assert calls == []


def test_a_sum_over_data_that_are_many_together_keeps_every_pair(monkeypatch):
    """The seeds' sum kernel θ0·exp(−θ1/2‖x − x′‖²) + θ2 + θ3·xᵀx′ on PRML's evenly spaced points: the differences are
    few, but the products xᵢxⱼ with them are not, so its one Distinct keeps every pair, and value and gradient are the
    objective's compiled without the transform, to the bit, and the formulas' (tests/reference.py's PRML kernel; rtol
    1e-11 for the value, central differences with step 1e-6 for the gradient: rtol 1e-6)."""
    from bayeskern.fit.empirical_bayes import _Objective

    X, y = bk.datasets.sinusoid(n=70, noise=0.2, seed=1)
    with pm.Model() as model:
        t0, t1, t2, t3, s = (pm.HalfNormal(name, 10.0) for name in ("t0", "t1", "t2", "t3", "s"))
        bk.gp.marginal_likelihood("y", X=X, y=y, kernel=K.PRML(t0, t1, t2, t3), sigma=s)
    calls = _distinct_calls(monkeypatch)
    objective = _Objective(model, model.observed_RVs[0], include_prior=False)
    z = np.log([1.1, 9.0, 0.6, 0.4, 0.2])
    value, gradient = objective._value_and_grad(*objective._split(z))
    assert calls == [(70 * 71 // 2, 0)]

    def lml(z):
        t0, t1, t2, t3, s = np.exp(z)
        Kx = ref.prml(X, X, t0, t1, t2, t3)
        return ref.gp_posterior(Kx, Kx[:, :1], Kx[:1, :1], y, s)[2]

    np.testing.assert_allclose(value, lml(z), rtol=1e-11)
    h = 1e-6
    np.testing.assert_allclose(gradient, [(lml(z + h * e) - lml(z - h * e)) / (2 * h) for e in np.eye(5)], rtol=1e-6, atol=1e-6)
    pairwise = _without_transform(lambda: _Objective(model, model.observed_RVs[0], include_prior=False))
    every_value, every_gradient = pairwise._value_and_grad(*pairwise._split(z))
    assert value == every_value
    np.testing.assert_array_equal(gradient, every_gradient)


def test_a_filled_number_is_no_datum():
    """`kernel + 1.0` fills 1.0 along the pairs (an Alloc of a constant): it is broadcast at the distinct rows like a
    hyperparameter's fill, not sorted, kept and gathered as a vector of the data."""
    from pytensor.graph.traversal import graph_inputs, io_toposort

    x, ell = pt.dvector("differences"), pt.dscalar("ell")
    y = pt.exp(-0.5 * (x / ell) ** 2) + pt.alloc(np.float64(1.0), x.shape[0])
    depends = {ell}
    for node in io_toposort(list(graph_inputs([y])), [y]):
        if any(v in depends for v in node.inputs):
            depends.update(node.outputs)
    data, fills = _distinct_pairs._data_of_pairs(y, depends)
    assert data == [x] and len(fills) == 1
