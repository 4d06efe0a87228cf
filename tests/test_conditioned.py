"""The conditioned core: factor once, predict many times; the exact and the weight-space solvers behind one interface."""

import time
import tracemalloc
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K
from bayeskern.conditioned import Conditioned, Prediction

RNG = np.random.default_rng(3)
X = np.sort(RNG.uniform(-2, 2, 40))[:, None]
Y = np.sin(2 * X[:, 0]) + 0.1 * RNG.standard_normal(40)
XNEW = np.linspace(-2.5, 2.5, 23)[:, None]
KERNEL = 1.5 * K.RBF(0.7) + K.Constant(0.3) + 0.2 * K.Linear()
PHI = bk.features.GaussianBasis(np.linspace(-2, 2, 9), 0.6, bias=True)
S = np.linspace(0.5, 2.0, 10)  # a diagonal prior covariance of the 10 weights


def test_gp_condition_predicts_what_gp_posterior_gives():
    conditioned = bk.gp.condition(KERNEL, X, Y, 0.2)
    assert isinstance(conditioned, Conditioned)
    post = bk.gp.posterior(KERNEL, X, Y, 0.2, Xnew=XNEW)
    full = conditioned.predict(XNEW, full_cov=True)
    # the same arithmetic on the same factor: 1e-10 (mean) / 1e-9 (cov) leave room only for summation order
    np.testing.assert_allclose(full.mean, post.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(full.cov, post.cov, rtol=0, atol=1e-9)
    assert conditioned.log_marginal_likelihood == post.log_marginal_likelihood and conditioned.jitter == post.jitter == 0.0
    diag = conditioned.predict(XNEW)  # without full_cov: the diagonal only, no m × m matrix
    assert isinstance(diag, Prediction) and diag.cov is None
    np.testing.assert_allclose(diag.var, np.diag(post.cov), rtol=0, atol=1e-12)
    noisy = conditioned.predict(XNEW, include_noise=True)
    np.testing.assert_allclose(noisy.var, diag.var + 0.04, rtol=1e-14)  # σ² = 0.2²
    np.testing.assert_allclose(conditioned.loo_log_predictive, ref.gp_loo(KERNEL.evaluate(X) + 0.04 * np.eye(40), Y)[2], rtol=1e-9)


def test_blr_condition_predicts_what_blr_posterior_gives():
    conditioned = bk.blr.condition(PHI, X, Y, 0.2, S)
    post = bk.blr.posterior(PHI, X, Y, 0.2, S, Xnew=XNEW, include_noise=True)
    full = conditioned.predict(XNEW, include_noise=True, full_cov=True)
    np.testing.assert_allclose(full.mean, post.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(full.cov, post.cov, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(conditioned.weights_mean, post.weights_mean)
    np.testing.assert_array_equal(conditioned.weights_cov, post.weights_cov)
    assert conditioned.log_marginal_likelihood == post.log_marginal_likelihood and conditioned.jitter == 0.0


def test_the_kernel_trick_through_the_conditioned_interface():
    weight = bk.blr.condition(PHI, X, Y, 0.2, S)
    function = bk.gp.condition(K.FeatureKernel(PHI, S), X, Y, 0.2)
    a, b = weight.predict(XNEW, full_cov=True), function.predict(XNEW, full_cov=True)
    # two routes (M × M Woodbury against n × n Cholesky) to the same numbers: agreement to 1e-7, the bar
    np.testing.assert_allclose(a.mean, b.mean, rtol=0, atol=1e-7)
    np.testing.assert_allclose(a.cov, b.cov, rtol=0, atol=1e-7)
    assert weight.log_marginal_likelihood == pytest.approx(function.log_marginal_likelihood, rel=1e-7)
    for left, right in zip(weight.loo, function.loo, strict=True):  # the Woodbury LOO against the n × n one
        np.testing.assert_allclose(left, right, rtol=1e-7)


def test_weight_space_loo_equals_the_n_by_n_formula():
    conditioned = bk.blr.condition(PHI, X, Y, 0.2, S)
    Phi = PHI(X)
    reference = ref.gp_loo(Phi @ np.diag(S) @ Phi.T + 0.04 * np.eye(40), Y)
    for ours, theirs in zip(conditioned.loo, reference, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9)  # C here has condition ~1e3: inv loses ≲ 1e-12


def test_predicting_and_sampling_never_refactorise(monkeypatch):
    import bayeskern.gp as gp_module

    calls = []
    real = gp_module.cholesky
    monkeypatch.setattr(gp_module, "cholesky", lambda *a, **k: calls.append(1) or real(*a, **k))
    conditioned = bk.gp.condition(KERNEL, X, Y, 0.2)
    for _ in range(3):
        conditioned.predict(XNEW), conditioned.predict(XNEW, full_cov=True), conditioned.sample(XNEW, 2, seed=0)
    _ = conditioned.loo_log_predictive
    assert calls == [1]  # once, in the constructor


def _counting_kernel_evaluations(monkeypatch) -> list:
    """Every numeric kernel evaluation from now on appends the number of points it was asked for."""
    calls = []
    real = K.Kernel._values
    monkeypatch.setattr(K.Kernel, "_values", lambda self, A, B=None, diag=False: calls.append(len(A)) or real(self, A, B, diag))
    return calls


@pytest.mark.parametrize("kernel", [KERNEL, bk.kernels.PRML(1.2, 9.0, 0.4, 0.3), 1.3 * K.RBF(0.6) * K.Periodic(1.7, 0.9) + K.Matern32(0.4)])
def test_a_gp_told_where_it_will_predict_evaluates_its_kernel_once_and_predicts_the_same(monkeypatch, kernel):
    """The posterior draws' loop conditions with `predict_at`: one kernel evaluation on X and X* stacked gives K(X, X),
    K(X, X*), K(X*, X*) and the draws' prior variance, instead of four. Each entry k(xᵢ, xⱼ) of these kernels is the
    same arithmetic on the same two inputs whichever points are evaluated with them, so every number is the same to the bit."""
    rng = np.random.default_rng(7)
    Xd, Xs = rng.uniform(-2, 2, (30, 1)), rng.uniform(-2.5, 2.5, (17, 1))
    yd = np.sin(3 * Xd[:, 0]) + 0.1 * rng.standard_normal(30)
    apart = bk.gp.ExactGP(kernel, Xd, yd, 0.2)
    calls = _counting_kernel_evaluations(monkeypatch)
    joint = bk.gp.ExactGP(kernel, Xd, yd, 0.2, predict_at=Xs)
    p = joint.predict(Xs.copy(), full_cov=True)  # (equal points, another array)
    f = joint.draws_from(p, 3, np.random.default_rng(0))
    assert calls == [47]  # once, on the 30 + 17 points
    q = apart.predict(Xs, full_cov=True)
    np.testing.assert_array_equal(joint.chol, apart.chol)
    assert joint.log_marginal_likelihood == apart.log_marginal_likelihood
    for ours, theirs in [(p.mean, q.mean), (p.cov, q.cov), (f, apart.draws_from(q, 3, np.random.default_rng(0)))]:
        np.testing.assert_array_equal(ours, theirs)
    # at other points of the same shape, and without the full covariance, it evaluates as a GP that was not told
    calls.clear()
    other = Xs[::-1] + 0.1
    np.testing.assert_array_equal(joint.predict(other, full_cov=True).cov, apart.predict(other, full_cov=True).cov)
    np.testing.assert_array_equal(joint.predict(Xs).var, apart.predict(Xs).var)
    assert calls == [30, 17, 30, 17, 30, 17, 30, 17]  # K(X, ·), then K(·, ·) or its diagonal: joint, then apart, each time


@pytest.mark.parametrize("kernel", [K.RBF(0.3), K.Polynomial(3, c=1.0), K.Linear() + K.RBF(0.3)], ids=["rbf", "poly3", "linear+rbf"])
def test_a_few_told_points_predict_the_same_to_the_bit(kernel):
    """Two points X*: the blocks of the stacked evaluation are contiguous, as K(X, X*) apart is, so BLAS takes the same
    path for kᵀα and L⁻¹k (a strided block made the mean 1.4e-14 apart for the cubic)."""
    Xs = np.array([[0.5], [0.7]])
    joint, apart = bk.gp.ExactGP(kernel, X, Y, 0.2, predict_at=Xs), bk.gp.ExactGP(kernel, X, Y, 0.2)
    p, q = joint.predict(Xs, full_cov=True), apart.predict(Xs, full_cov=True)
    np.testing.assert_array_equal(p.mean, q.mean)
    np.testing.assert_array_equal(p.cov, q.cov)
    np.testing.assert_array_equal(joint.sample(Xs, 4, 3), apart.sample(Xs, 4, 3))


def test_the_points_a_gp_was_told_are_its_own_copy():
    """A caller's array changed in place after conditioning is a new set of points, not the blocks' (they were copied)."""
    Xs = XNEW[:7].copy()
    joint = bk.gp.ExactGP(KERNEL, X, Y, 0.2, predict_at=Xs)
    Xs += 0.3
    np.testing.assert_array_equal(joint.predict(Xs, full_cov=True).cov, bk.gp.ExactGP(KERNEL, X, Y, 0.2).predict(Xs, full_cov=True).cov)


@pytest.mark.parametrize("m, d, together", [(216, 1, True), (217, 1, False), (10, 3, False)])
def test_a_gp_told_where_it_will_predict_evaluates_apart_beyond_the_limit_or_on_several_columns(monkeypatch, m, d, together):
    """(n + m)² = JOINT_MAX_PAIRS is evaluated together, one point more apart; inputs of several columns always apart
    (their distances may be scaled by the largest |x| evaluated with them). Apart, as before: four evaluations."""
    n = int(np.sqrt(bk.gp.JOINT_MAX_PAIRS)) - 216  # 40 training points: (40 + 216)² = 65 536
    rng = np.random.default_rng(2)
    Xd, Xs = rng.uniform(-2, 2, (n, d)), rng.uniform(-2, 2, (m, d))
    kernel = K.RBF(0.7) + K.Constant(0.3)
    calls = _counting_kernel_evaluations(monkeypatch)
    joint = bk.gp.ExactGP(kernel, Xd, np.sin(Xd[:, 0]), 0.2, predict_at=Xs)
    joint.draws_from(joint.predict(Xs, full_cov=True), 1, np.random.default_rng(0))
    assert calls == ([n + m] if together else [n, n, m, m])


def test_an_overflow_at_the_prediction_points_is_reported_by_the_prediction():
    """The stacked evaluation overflows at X* only: conditioning falls back to K(X, X) alone, which is finite, and the
    prediction at X* reports the overflow as predictions do (Xnew too large), not the training data."""
    joint = bk.gp.ExactGP(KERNEL, X, Y, 0.2, predict_at=np.array([[1e160]]))
    assert joint.log_marginal_likelihood == bk.gp.ExactGP(KERNEL, X, Y, 0.2).log_marginal_likelihood
    with pytest.raises(ValueError, match="Xnew is too large"):
        joint.predict(np.array([[1e160]]), full_cov=True)


def test_prediction_points_of_another_dimension_are_named():
    with pytest.raises(ValueError, match="predict_at"):
        bk.gp.ExactGP(KERNEL, X, Y, 0.2, predict_at=np.zeros((3, 2)))


def test_the_draws_loop_evaluates_the_kernel_once_a_draw(monkeypatch):
    """`draw_quantities` tells each draw's GP where it will predict (every `thin`-th draw): one evaluation there, one
    (for K(X, X)) at the others; its numbers are those of evaluating apart, to the bit."""
    from bayeskern.fit._plug_in import PlugIn
    from bayeskern.fit.predictive import draw_quantities
    from bayeskern.likelihood import find_likelihood

    model = _rbf_model(X, Y)
    plug_in = PlugIn(model, find_likelihood(model)[1])
    values = {"amp": [[1.1, 0.9, 1.3]], "ell": [[0.6, 0.8, 0.7]], "s": [[0.1, 0.12, 0.09]]}
    posterior = xr.Dataset({k: (("chain", "draw"), np.array(v)) for k, v in values.items()}, coords={"chain": [0], "draw": [0, 1, 2]})
    calls = _counting_kernel_evaluations(monkeypatch)
    joint = draw_quantities(plug_in, posterior, "y", "y_dim_0", Xnew=XNEW, thin=2, seed=0)
    assert calls == [63, 40, 63]  # draws 0 and 2 predict: X and X* (40 + 23) together; draw 1 only K(X, X)
    calls.clear()
    monkeypatch.setattr(bk.gp, "JOINT_MAX_PAIRS", 0)
    apart = draw_quantities(plug_in, posterior, "y", "y_dim_0", Xnew=XNEW, thin=2, seed=0)
    assert calls == [40, 40, 23, 23, 40, 40, 40, 23, 23]  # K(X, X), K(X, X*), K(X*, X*), k(x*, x*) at draws 0 and 2
    for ours, theirs in zip(joint[:2], apart[:2], strict=True):
        xr.testing.assert_identical(ours, theirs)


def test_the_draws_loop_gives_each_draws_predictive_and_loo_as_numpy_does():
    """Each draw's f_mean, f_var and LOO log densities are PRML 6.66–6.67 and R&W 5.10–5.12 at that draw's θ, written in
    numpy from the formulas (tests/reference.py) — the joint evaluation's blocks against independent arithmetic."""
    from bayeskern.fit._plug_in import PlugIn
    from bayeskern.fit.predictive import draw_quantities
    from bayeskern.likelihood import find_likelihood

    model = _rbf_model(X, Y)
    values = {"amp": [[1.1, 0.9], [1.3, 0.7]], "ell": [[0.6, 0.8], [0.7, 0.5]], "s": [[0.1, 0.12], [0.09, 0.2]]}
    posterior = xr.Dataset({k: (("chain", "draw"), np.array(v)) for k, v in values.items()}, coords={"chain": [0, 1], "draw": [0, 1]})
    log_lik, predictive, _ = draw_quantities(PlugIn(model, find_likelihood(model)[1]), posterior, "y", "y_dim_0", Xnew=XNEW, seed=0)
    for c in range(2):
        for d in range(2):
            amp, ell, s = (values[k][c][d] for k in ("amp", "ell", "s"))
            mean, cov, _ = ref.gp_posterior(amp * ref.rbf(X, X, ell), amp * ref.rbf(X, XNEW, ell), amp * ref.rbf(XNEW, XNEW, ell), Y, s)
            # solves of a 40 × 40 C with cond(C) 220–2700 here, |values| ≤ ~2: round-off ~cond·ε ≈ 1e-12, so 1e-9 admits only it
            np.testing.assert_allclose(predictive["f_mean"].values[c, d], mean, rtol=0, atol=1e-9)
            np.testing.assert_allclose(predictive["f_var"].values[c, d], np.clip(np.diag(cov), 0, None), rtol=0, atol=1e-9)
            loo = ref.gp_loo(amp * ref.rbf(X, X, ell) + s**2 * np.eye(len(X)), Y)[2]
            np.testing.assert_allclose(log_lik["y"].values[c, d], loo, rtol=1e-9)


@pytest.mark.parametrize("solver", ["gp", "blr"])
def test_samples_have_the_predictive_mean_and_covariance(solver):
    conditioned = bk.gp.condition(KERNEL, X, Y, 0.2) if solver == "gp" else bk.blr.condition(PHI, X, Y, 0.2, S)
    Xs = XNEW[::4]
    draws = conditioned.sample(Xs, 20_000, seed=1)
    p = conditioned.predict(Xs, full_cov=True)
    sd = np.sqrt(np.diag(p.cov))
    # Monte Carlo: the sample mean is within 5 standard errors sd/√20000 of the mean, covariances within
    # 5 standard errors of a sample covariance, ≤ √(2/20000)·sdᵢsdⱼ
    assert np.all(np.abs(draws.mean(axis=0) - p.mean) <= 5 * sd / np.sqrt(20_000) + 1e-12)
    np.testing.assert_allclose(np.cov(draws.T), p.cov, rtol=0, atol=5 * np.sqrt(2 / 20_000) * sd.max() ** 2)
    np.testing.assert_array_equal(draws, conditioned.sample(Xs, 20_000, seed=1))  # the seed fixes the draws


def test_predicting_at_20000_points_stays_small():
    Xt = np.linspace(0, 1, 300)[:, None]
    conditioned = bk.gp.condition(K.RBF(0.1), Xt, np.sin(6 * Xt[:, 0]), 0.1)
    Xnew = np.linspace(0, 1, 20_000)[:, None]
    conditioned.predict(Xnew[:10])  # compile the kernel graphs outside the measurement
    tracemalloc.start()
    prediction = conditioned.predict(Xnew)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert prediction.cov is None and prediction.mean.shape == (20_000,)
    assert peak < 400 * 2**20  # the bound; the 20,000² covariance alone would be 3.2 GB
    np.testing.assert_allclose(prediction.mean[::1000], conditioned.predict(Xnew[::1000], full_cov=True).mean, rtol=0, atol=1e-12)


def test_blr_at_200000_points_costs_no_n_by_n():
    rng = np.random.default_rng(0)
    Xb = rng.uniform(-2, 2, (200_000, 1))
    yb = np.sin(2 * Xb[:, 0]) + 0.1 * rng.standard_normal(200_000)
    phi = bk.features.GaussianBasis(np.linspace(-2, 2, 11), 0.5, bias=True)  # M = 12
    phi(Xb)  # compile outside the measurement (at this size the feature graph runs on Numba, not numpy)
    tracemalloc.start()
    started = time.perf_counter()
    conditioned = bk.blr.condition(phi, Xb, yb, 0.1, 1.0)
    prediction = conditioned.predict(np.linspace(-2, 2, 500)[:, None])
    loo = conditioned.loo_log_predictive
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 3.0 and peak < 2**30  # the bounds; one 200,000² matrix would be 320 GB
    assert np.all(np.isfinite(prediction.mean)) and loo.shape == (200_000,)
    np.testing.assert_allclose(prediction.mean, np.sin(2 * np.linspace(-2, 2, 500)), atol=0.05)  # 11 bumps fit sin well


def test_mcmc_predictive_of_a_blr_model_builds_no_n_by_n():
    """The per-draw LOO and predictive of `fit.mcmc` on N = 20,000: an N × N matrix would need 3.2 GB."""
    from bayeskern.fit._plug_in import PlugIn
    from bayeskern.fit.predictive import draw_quantities
    from bayeskern.likelihood import find_likelihood

    rng = np.random.default_rng(1)
    Xb = rng.uniform(-2, 2, (20_000, 1))
    yb = np.sin(2 * Xb[:, 0]) + 0.1 * rng.standard_normal(20_000)
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        bk.blr.likelihood("y", Xb, yb, bk.features.Polynomial(5), 1.0, s, collapsed=True)
    plug_in = PlugIn(model, find_likelihood(model)[1])
    posterior = xr.Dataset({"s": (("chain", "draw"), np.array([[0.1, 0.11, 0.09]]))}, coords={"chain": [0], "draw": [0, 1, 2]})
    plug_in.condition({"s": 0.1})  # compile outside the measurement
    tracemalloc.start()
    log_lik, predictive, jitter = draw_quantities(plug_in, posterior, "y", "y_dim_0", Xnew=np.linspace(-2, 2, 50)[:, None], seed=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**30 and jitter == 0.0
    assert log_lik["y"].shape == (1, 3, 20_000) and np.all(np.isfinite(log_lik["y"].values))
    exact = bk.blr.condition(bk.features.Polynomial(5), Xb, yb, 0.11, 1.0).loo_log_predictive
    np.testing.assert_allclose(log_lik["y"].values[0, 1], exact, rtol=1e-12)  # draw 1 is s = 0.11


def _rbf_model(Xd, yd):
    with pm.Model() as model:
        amp, ell, s = pm.HalfNormal("amp", 2.0), pm.HalfNormal("ell", 2.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", Xd, yd, amp * K.RBF(ell), s)
    return model


def test_eb_reports_jitter_and_evidence_of_one_factorisation():
    result = bk.fit.empirical_bayes(_rbf_model(X, Y), restarts=2, seed=0)
    assert result.jitter == result.conditioned.jitter
    assert result.log_marginal_likelihood == result.conditioned.log_marginal_likelihood
    p = result.params
    again = bk.gp.condition(p["amp"] * K.RBF(p["ell"]), X, Y, p["s"])  # conditioned independently at the optimum
    assert again.log_marginal_likelihood == pytest.approx(result.log_marginal_likelihood, rel=1e-12)
    assert result.objective == pytest.approx(result.log_marginal_likelihood, rel=1e-9)  # the Op's value, same rule
    np.testing.assert_allclose(result.posterior(XNEW).mean, again.predict(XNEW).mean, rtol=0, atol=1e-10)


def test_the_likelihood_record_survives_model_cloning():
    from pymc.model.fgraph import clone_model

    model = _rbf_model(X, Y)
    original = bk.fit.empirical_bayes(model, restarts=1, seed=0)
    cloned = bk.fit.empirical_bayes(clone_model(model), restarts=1, seed=0)
    # the clone lists the free variables in another order: the same optimum, reached by another path. Both runs stop
    # at the gradient's round-off floor (max |g| ≈ 1e-7, predicted gain ≈ 1e-16), which fixes the log marginal
    # likelihood to round-off but the parameters only to |H⁻¹g| ≈ 1e-11 relative (measured: 1e-11 on ℓ)
    assert cloned.log_marginal_likelihood == pytest.approx(original.log_marginal_likelihood, rel=1e-12)
    assert cloned.params == pytest.approx(original.params, rel=1e-9)


@pytest.mark.parametrize("twice", [False, True], ids=["n<M: D", "n>=M: B"])
def test_blr_jitter_is_noise_added_to_c_like_a_kernels(twice):
    """12 Gaussian bumps and σ = 1e-9 through 10 points with one input repeated (n = 10 < M: the solver factorises
    D = I + ΨΨᵀ/σ²), or each of 10 inputs twice (n = 20 ≥ M: B = I + ΨᵀΨ/σ²): C = ΦΣΦᵀ + σ²I has rank 9 or 10 plus σ²,
    singular to round-off, and so is the matrix factorised (an EB noise run to its edge ends here). The solver adds
    jitter δ to C's diagonal, says so, and is then exactly the model with noise variance σ² + δ — as `gp.condition`
    does for a kernel."""
    Xi = np.repeat(np.linspace(0, 1, 10), 2 if twice else 1)[:, None]
    if not twice:
        Xi[5] = Xi[4]  # one input repeated: rank 9
    ti = np.sin(2 * np.pi * Xi[:, 0])
    phi = bk.features.GaussianBasis(np.linspace(0, 1, 11), 0.1, bias=True)
    with pytest.warns(RuntimeWarning, match="added jitter"):
        jittered = bk.blr.condition(phi, Xi, ti, 1e-9, 1.0)
    n = len(Xi)
    assert jittered.jitter > 0 and (jittered._Psi is not None) == (n < 12)  # the route: D for n < M, else B
    Phi, s2 = phi(Xi), 1e-18 + jittered.jitter  # the noise variance the factor holds
    C, B = Phi @ Phi.T + s2 * np.eye(n), np.eye(12) + Phi.T @ Phi / s2
    # numpy, from the formula: log N(t | 0, C + δI) by slogdet and solve. Either route is accurate to about cond·ε of
    # the matrix it factorises (D = C/s², or B: cond ≈ 6e10–1e11 here, the jitter just enough for the rcond rule)
    bar = 10 * max(np.linalg.cond(B), np.linalg.cond(C)) * np.finfo(float).eps
    assert bar < 1e-3  # still a test: the two routes agree to at least three digits
    sign, logdet = np.linalg.slogdet(C)
    reference = -0.5 * ti @ np.linalg.solve(C, ti) - 0.5 * logdet - n / 2 * np.log(2 * np.pi)
    assert sign > 0 and jittered.log_marginal_likelihood == pytest.approx(reference, rel=bar)
    assert np.all(np.isfinite(jittered.predict(XNEW / 5 + 0.5).var)) and np.all(np.isfinite(jittered.loo_log_predictive))


def test_fewer_points_than_features_need_no_jitter_where_c_is_well_conditioned():
    """12 Gaussian bumps through 10 distinct points, σ = 1e-9: B = I + ΨᵀΨ/σ² (12 × 12, two eigenvalues 1, the others
    up to ~1e19) is singular to round-off, but C = ΦΦᵀ + σ²I (cond ≈ 2e3) is not. The n × n route factorises D = C/σ²:
    no jitter, no warning, the exact model (numpy from the formula: round-off ~cond·ε ≈ 4e-13; bar 1e-10)."""
    Xi = np.linspace(0, 1, 10)[:, None]
    ti = np.sin(2 * np.pi * Xi[:, 0])
    phi = bk.features.GaussianBasis(np.linspace(0, 1, 11), 0.1, bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = bk.blr.condition(phi, Xi, ti, 1e-9, 1.0)
    Phi = phi(Xi)
    C = Phi @ Phi.T + 1e-18 * np.eye(10)
    assert exact.jitter == 0.0 and np.linalg.cond(C) < 1e4
    sign, logdet = np.linalg.slogdet(C)
    reference = -0.5 * ti @ np.linalg.solve(C, ti) - 0.5 * logdet - 5 * np.log(2 * np.pi)
    assert sign > 0 and exact.log_marginal_likelihood == pytest.approx(reference, rel=1e-10)
    # S_N = I − ΦᵀC⁻¹Φ from C's factor: no M × M factorisation, no jitter (entries ≤ 1, round-off ~cond·ε ≈ 4e-13; bar 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(exact.weights_cov, np.eye(12) - Phi.T @ np.linalg.solve(C, Phi), rtol=0, atol=1e-9)
        assert exact.sample(XNEW / 5 + 0.5, n=3, seed=0).shape == (3, len(XNEW))


def test_what_is_conditioned_on_is_a_copy_the_caller_cannot_change():
    """A conditioned GP or BLR, a model's likelihood record and a prediction keep read-only copies of X, y and Xnew
    (as scikit-learn's copy_X_train): the caller writing into their arrays afterwards changes no later prediction,
    LOO value or fit. They kept the caller's arrays: the predictions then mixed the old factorisation with the new data."""
    X, t = bk.datasets.sinusoid(25, 0.2, 0)
    X, t = np.array(X, dtype=float), np.array(t, dtype=float)
    Xnew = np.linspace(-0.2, 1.2, 7)[:, None]
    kernel, features = bk.kernels.RBF(0.3), bk.features.Polynomial(3)
    gp, blr = bk.gp.condition(kernel, X, t, 0.2), bk.blr.condition(features, X, t, 0.2, 1.0)
    with pm.Model() as model:
        ell = pm.HalfNormal("ell", 1.0)
        bk.gp.marginal_likelihood("y", X=X, y=t, kernel=bk.kernels.RBF(ell), sigma=0.2)
    before = [(m.predict(Xnew, full_cov=True), m.loo_log_predictive) for m in (gp, blr)]
    kept = gp.predict(Xnew)
    X += 5.0
    t[:] = 0.0
    Xnew *= 3.0
    for m, (p, loo) in zip((gp, blr), before, strict=True):
        again = m.predict(p.Xnew, full_cov=True)
        np.testing.assert_array_equal(again.mean, p.mean)
        np.testing.assert_array_equal(again.cov, p.cov)
        np.testing.assert_array_equal(m.loo_log_predictive, loo)
        assert not m.X.flags.writeable
    np.testing.assert_array_equal(kept.Xnew, np.linspace(-0.2, 1.2, 7)[:, None])
    X0, t0 = bk.datasets.sinusoid(25, 0.2, 0)
    eb = bk.fit.empirical_bayes(model, restarts=1, seed=0)  # on the data the model was built with, as its graph holds them
    direct = bk.gp.condition(bk.kernels.RBF(eb.params["ell"]), X0, t0, 0.2)
    assert eb.log_marginal_likelihood == pytest.approx(direct.log_marginal_likelihood, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(eb.conditioned.X, np.asarray(X0, dtype=float).reshape(-1, 1))


@pytest.mark.parametrize("kind, condition", [("gp", lambda X, t: bk.gp.condition(K.RBF(0.3), X, t, 0.01)),
                                             ("blr", lambda X, t: bk.blr.condition(bk.features.Polynomial(3), X, t, 0.01, 1.0))])
def test_huge_targets_give_finite_loo_densities_or_a_named_error(kind, condition):
    """Targets ×s, s = 1e152: log p(s·tᵢ | s·t₋ᵢ) = −½ log 2π + ½ log dᵢ − s²·αᵢ²/(2dᵢ) (dᵢ = [C⁻¹]ᵢᵢ, α = C⁻¹t: the LOO
    variance does not depend on t, the mean scales with it), about −1e306, representable; αᵢ² alone overflowed, giving −inf
    silently through gp.posterior and a NonFiniteError elsewhere. Checked against that identity on the unscaled fit (to
    1e-12: a few roundings). ×1e154: log p(t) itself overflows: a ValueError naming y, where condition() returned NaN."""
    X, t = bk.datasets.sinusoid(25, 0.2, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (jitter)
        _, var, base = condition(X, t).loo
        huge = condition(X, t * 1e152).loo_log_predictive
        constant = -0.5 * np.log(2 * np.pi) - 0.5 * np.log(var)
        np.testing.assert_allclose(huge / 1e304, base - constant, rtol=1e-12)
        if kind == "gp":  # gp.posterior's own LOO property, which had no finiteness check
            posterior = bk.gp.posterior(K.RBF(0.3), X, t * 1e152, 0.01, X[:3]).loo_log_predictive
            np.testing.assert_array_equal(posterior, huge)
        with pytest.raises(ValueError, match=r"\by\b"):
            condition(X, t * 1e154)
