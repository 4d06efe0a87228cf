"""bayeskern.approx: the HSGP basis against its formula, the collapsed likelihood against dense numpy, the solver
against the weight-space BLR and the exact GP, the automatic m and c, and the errors users meet."""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import bayeskern as bk
from bayeskern import blr
from bayeskern._compile import numpy_function
from bayeskern._weight_space_evidence import weight_space_evidence
from bayeskern.approx.hsgp import BASIS_LML_TOL, M_MAX, HilbertBasis
from bayeskern.likelihood import find_likelihood

RNG = np.random.default_rng(7)
X1 = np.sort(RNG.uniform(-2.0, 3.0, 150))
Y1 = np.sin(2.0 * X1) + 0.2 * X1 + 0.1 * RNG.standard_normal(150)
PRML = bk.kernels.PRML(1.3, 2.0, 0.4, 0.2)  # θ0·RBF(ℓ = 1/√2) + θ2 + θ3·xᵀx′


def basis_reference(X, center, L, m):
    """φⱼ(x) = Πₖ sin(πjₖ(xₖ − cₖ + Lₖ)/(2Lₖ))/√Lₖ, jₖ = 1..mₖ, in PyMC's meshgrid order (Solin & Särkkä 2020, eq. 56)."""
    grids = np.meshgrid(*[np.arange(1, k + 1) for k in m])
    J = np.vstack([g.ravel() for g in grids]).T  # (Πm, d)
    Phi = np.ones((len(X), len(J)))
    for k in range(X.shape[1]):
        Phi *= np.sin(np.pi * J[:, k] * (X[:, [k]] - center[k] + L[k]) / (2 * L[k])) / np.sqrt(L[k])
    return Phi, np.pi * J / (2 * L)  # Φ and ω = √λ


def dense_lml(Phi, v, y, sigma):
    """log N(y | 0, ΦVΦᵀ + σ²I) from the dense n × n covariance (numpy, slogdet and solve)."""
    C = Phi @ np.diag(v) @ Phi.T + sigma**2 * np.eye(len(y))
    return -0.5 * y @ np.linalg.solve(C, y) - 0.5 * np.linalg.slogdet(C)[1] - 0.5 * len(y) * np.log(2 * np.pi)


def rbf_psd(omega, ell):
    """S(ω) = (2π)^(d/2) Πℓₖ exp(−½ Σ ℓₖ²ωₖ²), the RBF's spectral density (R&W 4.21)."""
    ell = np.broadcast_to(ell, omega.shape[1:])
    return (2 * np.pi) ** (omega.shape[1] / 2) * np.prod(ell) * np.exp(-0.5 * np.sum((omega * ell) ** 2, axis=1))


@pytest.mark.parametrize("m", [(7,), (4, 3), (3, 2, 2)])
def test_the_basis_is_pymcs_dirichlet_eigenfunctions(m):
    d = len(m)
    X = RNG.uniform(-1.0, 2.0, (40, d))
    center, L = np.full(d, 0.5), np.linspace(2.0, 3.0, d)
    Phi, omega = basis_reference(X, center, L, m)
    basis = HilbertBasis(center, L, m, constant=True, linear=True)
    np.testing.assert_allclose(basis(X), np.hstack([Phi, np.ones((40, 1)), X]), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(basis.frequencies, omega, rtol=1e-14)


def test_the_approximate_kernel_converges_to_the_rbf_inside_the_box():
    """With c = 4 and m = 200, Σⱼ S(ωⱼ)φⱼ(x)φⱼ(x′) is the RBF to 1e-8 on the data (the truncation and boundary errors are tiny)."""
    X = np.linspace(-1.0, 1.0, 60)[:, None]
    k = bk.kernels.RBF(0.3)
    solver = bk.approx.HSGP(m=200, c=4.0).condition(k, X, np.zeros(60), 0.1)
    np.testing.assert_allclose(solver.gram_kernel.evaluate(X), k.evaluate(X), atol=1e-8)


def test_the_collapsed_likelihood_equals_the_dense_gaussian_and_its_gradient_is_exact():
    Phi = RNG.standard_normal((50, 6))
    y, v_val, s_val = RNG.standard_normal(50), RNG.uniform(0.1, 2.0, 6), 0.7
    v, s = pt.vector("v"), pt.scalar("s")
    lml = weight_space_evidence(blr.DesignRows(None, None, y, Phi).r_factor, 50, v, s**2)
    # the Op's value and gradient in numpy (its Numba implementation, which NUTS runs, is held to this one to the bit in
    # test_weight_space_evidence and exercised by the HSGP model tests below)
    f = numpy_function([v, s], [lml, *pt.grad(lml, [v, s])])
    value, gv, gs = f(v_val, s_val)
    assert value == pytest.approx(dense_lml(Phi, v_val, y, s_val), rel=1e-12)
    h = 1e-6  # central differences of the dense reference: truncation O(h²) ≈ 1e-12, round-off ≈ 1e-10 / h
    fd_v = [(dense_lml(Phi, v_val + h * e, y, s_val) - dense_lml(Phi, v_val - h * e, y, s_val)) / (2 * h) for e in np.eye(6)]
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6, atol=1e-7)
    assert gs == pytest.approx((dense_lml(Phi, v_val, y, s_val + h) - dense_lml(Phi, v_val, y, s_val - h)) / (2 * h), rel=1e-6)


def test_the_collapsed_hsgp_builds_under_float32_and_gives_the_float64_models_density():
    """A model built under `floatX=float32`: PyMC casts the observed y to float32 and back to float64, and the collapsed
    likelihood still recognises its y (it refused it: "… for its observed y only"). Its log density and gradient at a
    point equal the float64 model's to 1e-6 relative: the hyperparameters' values are rounded to float32 (ε ≈ 6e-8)."""
    import pytensor

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (200, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(200)
    results = []
    for floatX in ("float32", "float64"):
        with pytensor.config.change_flags(floatX=floatX), pm.Model() as model:
            ell, s = pm.HalfNormal("ell", 1.0), pm.HalfNormal("s", 1.0)
            bk.gp.marginal_likelihood("y", X, y, bk.kernels.RBF(ell), s, approx=bk.approx.HSGP(m=20, c=1.6))
            logp = model.logp()
            f = numpy_function(model.value_vars, [logp, *pt.grad(logp, model.value_vars)])
        point = [np.asarray(np.log(value), dtype=floatX) for value in (0.7, 0.3)]
        results.append(np.array([float(r) for r in f(*point)]))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_the_collapsed_hsgp_refuses_a_value_other_than_its_observed_y():
    """Its statistics are those of its own y: a density asked at another value — also a float32 cast of another vector —
    is a ValueError, not a silent number for the wrong data."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (50, 1))
    with pm.Model():
        obs = bk.gp.marginal_likelihood("y", X, np.sin(X[:, 0]), bk.kernels.RBF(0.7), 0.3, approx=bk.approx.HSGP(m=10, c=1.6))
    for other in (pt.vector("other"), pt.cast(pt.fvector("other32"), "float64")):
        with pytest.raises(ValueError, match="for its observed y only"):
            pm.logp(obs, other)


def test_a_spectral_density_that_underflows_keeps_the_likelihood_and_its_gradient_finite():
    """ℓ = 50 on a box of half-width 4: S(ωⱼ) = √(2π)ℓ·exp(−½ℓ²ωⱼ²) underflows to 0 for all but the first frequencies.

    The variances are floored where they are made (at VARIANCE_FLOOR × the largest, which weighs nothing): the model's
    log density equals the dense Gaussian of the variances floored only at the smallest normal float (numpy, 1e-10), and
    its gradient is finite.
    """
    with pm.Model() as model:
        ell, sigma = pm.LogNormal("ell", np.log(50.0), 0.1), pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X1, Y1, bk.kernels.RBF(ell), sigma, approx=bk.approx.HSGP(m=40, c=1.6))
    point = {"ell_log__": np.log(50.0), "sigma_log__": np.log(0.3)}
    center, L = np.array([(X1.max() + X1.min()) / 2]), 1.6 * np.array([(X1.max() - X1.min()) / 2])
    Phi, omega = basis_reference(X1[:, None], center, L, (40,))
    v = rbf_psd(omega, 50.0)
    assert np.sum(v == 0.0) > 30  # the case: most spectral densities underflow
    observed, whole = model.logp(vars=model.observed_RVs, jacobian=False), model.logp(jacobian=False)
    value_and_grad = model.compile_fn([observed, *pt.grad(whole, model.value_vars)], point_fn=True)  # one compile, not two
    value, *grad = value_and_grad(point)  # log p(y | θ), and ∂ log p(y, θ)/∂(log ℓ, log σ) as compile_dlogp gave
    assert np.all(np.isfinite(grad))
    assert value == pytest.approx(dense_lml(Phi, np.maximum(v, np.finfo(float).tiny), Y1, 0.3), rel=1e-10)


def test_variances_near_the_smallest_float_cost_an_evaluation_no_more_than_any_others():
    """m = 600 functions at n = 300: at ℓ = 2, 511 spectral densities underflow and more lie just above 1e-308; their
    products in BLAS were subnormal numbers, and one evaluation cost 25× one at ℓ = 0.1 (a user trial: 1.2 s against
    50 ms). Floored at VARIANCE_FLOOR × the largest, they cost the same (within 5×, a margin for a busy machine: timings
    of one process, medians of 5, alternated), and weigh nothing: log p is the dense Gaussian's with the variances floored only at 1e-308 (1e-10)."""
    import time

    from threadpoolctl import threadpool_limits

    X = np.linspace(0.0, 10.0, 300)
    y = np.sin(X) + 0.2 * np.random.default_rng(0).standard_normal(300)
    with pm.Model() as model:
        ell, s = pm.HalfNormal("ell", 3.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X, y, bk.kernels.RBF(ell), s, approx=bk.approx.HSGP(m=600, c=1.5))
        f = numpy_function(model.value_vars, [model.logp(jacobian=False), *pt.grad(model.logp(), model.value_vars)])
    seconds = {0.1: [], 2.0: []}
    with threadpool_limits(1):
        for _ in range(5):
            for ell_value in seconds:
                start = time.perf_counter()
                f(np.log(ell_value), np.log(0.2))
                seconds[ell_value].append(time.perf_counter() - start)
    assert np.median(seconds[2.0]) < 5 * np.median(seconds[0.1]), seconds
    Phi, omega = basis_reference(X[:, None], np.array([5.0]), np.array([7.5]), (600,))
    prior = pm.logp(pm.HalfNormal.dist(3.0), 2.0).eval() + pm.logp(pm.HalfNormal.dist(1.0), 0.2).eval()
    expected = dense_lml(Phi, np.maximum(rbf_psd(omega, 2.0), np.finfo(float).tiny), y, 0.2) + prior
    assert float(f(np.log(2.0), np.log(0.2))[0]) == pytest.approx(expected, rel=1e-10)


def test_the_solver_is_the_weight_space_blr_of_the_basis_with_spectral_variances():
    """HSGP of θ0·RBF + θ2 + θ3·xᵀx′: features [φⱼ] ⊕ [1] ⊕ [x], variances [θ0·S(ωⱼ)] ⊕ [θ2] ⊕ [θ3] (numpy from the formula)."""
    approx = bk.approx.HSGP(m=40, c=1.6)
    solver = bk.gp.condition(PRML, X1, Y1, 0.15, approx=approx)
    center, L = np.array([0.5]) * 0 + (X1.max() + X1.min()) / 2, 1.6 * np.array([(X1.max() - X1.min()) / 2])
    Phi, omega = basis_reference(X1[:, None], center, L, (40,))
    v = np.concatenate([1.3 * rbf_psd(omega, 1 / np.sqrt(2.0)), [0.4], [0.2]])
    features = np.hstack([Phi, np.ones((150, 1)), X1[:, None]])
    assert solver.log_marginal_likelihood == pytest.approx(dense_lml(features, v, Y1, 0.15), rel=1e-10)
    Xnew = np.linspace(-2.0, 3.0, 33)
    reference = blr.posterior(HilbertBasis(center, L, (40,), True, True), X1, Y1, 0.15, v, Xnew=Xnew)
    p = solver.predict(Xnew)
    np.testing.assert_allclose(p.mean, reference.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p.var, reference.var, rtol=1e-9, atol=1e-14)


def test_the_approximation_is_close_to_the_exact_gp_when_the_box_and_basis_resolve_the_kernel():
    """ℓ = 0.71 on a half-range of 2.5: c = 2 (≥ 3.2ℓ/S = 0.9), m = 80 (≥ 1.75c·S/ℓ ≈ 12): LML and mean within 1e-4."""
    approx = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=80, c=2.0))
    exact = bk.gp.condition(PRML, X1, Y1, 0.15)
    assert approx.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=1e-4 * 150)
    Xnew = np.linspace(-2.0, 3.0, 50)
    assert np.max(np.abs(approx.predict(Xnew).mean - exact.predict(Xnew).mean)) < 1e-4 * np.std(Y1)
    audit = bk.checks.approximation_error(PRML, bk.approx.HSGP(m=80, c=2.0), X1, Y1, 0.15, Xnew=Xnew)
    assert audit.passed and audit.mean_error < 1e-4 and audit.n_points == 150 and audit.n_predict == 50


def test_the_audit_measures_what_a_too_small_basis_gets_wrong():
    """m = 4 cannot resolve ℓ = 0.71 on this range: the audit fails it, and its mean error is the measured one."""
    Xnew = np.linspace(-2.0, 3.0, 50)
    audit = bk.checks.approximation_error(PRML, bk.approx.HSGP(m=4, c=1.5), X1, Y1, 0.15, Xnew=Xnew)
    with pytest.warns(RuntimeWarning, match=r"length scale 0.707 .* asks for m ≥ 9; condition with a larger m"):  # PyMC's rule says so too
        measured = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=4, c=1.5)).predict(Xnew).mean
    exact = bk.gp.condition(PRML, X1, Y1, 0.15).predict(Xnew).mean
    assert not audit.passed
    assert audit.mean_error == pytest.approx(np.max(np.abs(measured - exact)) / np.std(Y1), rel=1e-10)
    assert audit.to_dict()["approx"] == "HSGP(m=4, c=1.5, L=None)"


def test_the_audit_subsamples_with_the_box_of_all_the_data():
    audit = bk.checks.approximation_error(PRML, bk.approx.HSGP(m=60, c=1.6), X1, Y1, 0.15, subsample=40, seed=3)
    assert audit.n_points == 40 and audit.n_predict == 40
    again = bk.checks.approximation_error(PRML, bk.approx.HSGP(m=60, c=1.6), X1, Y1, 0.15, subsample=40, seed=3)
    assert again == audit


def hsgp_model(X, y, approx):
    with pm.Model() as model:
        theta0, ell = pm.HalfNormal("theta0", 2.0), pm.LogNormal("ell", np.log(0.7), 0.3)
        theta2, theta3, sigma = pm.HalfNormal("theta2", 1.0), pm.HalfNormal("theta3", 1.0), pm.HalfNormal("sigma", 1.0)
        kernel = theta0 * bk.kernels.RBF(ell) + bk.kernels.Constant(theta2) + theta3 * bk.kernels.Linear()
        bk.gp.marginal_likelihood("y", X, y, kernel, sigma, approx=approx)
    return model


def test_the_pymc_model_scores_what_the_conditioned_solver_computes():
    model = hsgp_model(X1, Y1, bk.approx.HSGP(m=50, c=1.6))
    point = {"theta0": 1.1, "ell": 0.6, "theta2": 0.3, "theta3": 0.25, "sigma": 0.12}
    logp = model.compile_logp(vars=model.observed_RVs, jacobian=False)(model.initial_point() | {
        f"{k}_log__": np.log(v) for k, v in point.items()})
    kernel = 1.1 * bk.kernels.RBF(0.6) + bk.kernels.Constant(0.3) + 0.25 * bk.kernels.Linear()
    solver = bk.gp.condition(kernel, X1, Y1, 0.12, approx=bk.approx.HSGP(m=50, c=1.6))
    assert logp == pytest.approx(solver.log_marginal_likelihood, rel=1e-10)


@pytest.mark.filterwarnings("ignore:parameter\\(s\\) at the edge")  # θ2, θ3 → 0 on this data, rightly reported
def test_empirical_bayes_on_the_hsgp_reaches_a_stationary_point_of_the_approximate_likelihood():
    model = hsgp_model(X1, Y1, bk.approx.HSGP(m=50, c=1.6))
    eb = bk.fit.empirical_bayes(model, restarts=1, seed=0)
    assert eb.converged
    assert isinstance(eb.conditioned, blr.WeightSpaceBLR)
    p = eb.params  # the conditioned solver at the optimum is the one the likelihood scored
    kernel = p["theta0"] * bk.kernels.RBF(p["ell"]) + bk.kernels.Constant(p["theta2"]) + p["theta3"] * bk.kernels.Linear()
    solver = bk.gp.condition(kernel, X1, Y1, p["sigma"], approx=bk.approx.HSGP(m=50, c=1.6))
    assert eb.log_marginal_likelihood == pytest.approx(solver.log_marginal_likelihood, rel=1e-12)
    assert eb.params["sigma"] == pytest.approx(0.1, rel=0.2)  # the simulated noise


def test_a_fitted_length_scale_the_basis_cannot_resolve_is_reported_with_pymcs_numbers():
    X = np.linspace(0.0, 10.0, 400)
    y = np.sin(6.0 * X) + 0.05 * RNG.standard_normal(400)  # wiggles on a scale ~0.15: 10 functions over [−7.5, 7.5] cannot follow
    with pm.Model():
        ell, amp, sigma = pm.HalfNormal("ell", 1.0), pm.HalfNormal("amp", 2.0), pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ell), sigma, approx=bk.approx.HSGP(m=10, c=1.5))
        with pytest.warns(bk.fit.FitWarning, match=r"length scale .* not resolved by the basis \(m = 10, L = 7.5") as caught:
            eb = bk.fit.empirical_bayes(restarts=1, seed=0)
    # PyMC's rule at the fitted ℓ on the data's half-range S = 5: the fit took the long length scale (ℓ ≈ 32, the
    # wiggles as noise), for which m = 10 suffices (the rule's m scaled from its c to this box's c = 1.5) and the box does
    # not, L = c·S ≥ c_rule·S: the warning names L and asks for a larger c
    from pymc.gp.hsgp_approx import approx_hsgp_hyperparams
    m_rule, c_rule = approx_hsgp_hyperparams([-5.0, 5.0], [eb.params["ell"], eb.params["ell"] * (1 + 1e-9)], "expquad")
    assert int(np.ceil(m_rule * 1.5 / c_rule)) <= 10 and 1.5 < c_rule
    assert any(f"asks for L ≥ {c_rule * 5.0:.3g}; refit with a larger c," in str(w.message) for w in caught)


def test_a_basis_that_resolves_the_fitted_length_scale_stays_quiet():
    record = hsgp_model(X1, Y1, bk.approx.HSGP(m=50, c=1.6)).observed_RVs[0].tag.bayeskern
    values = {"theta0": 1.0, "ell": 0.7, "theta2": 0.1, "theta3": 0.1, "sigma": 0.1}
    assert record.with_values(lambda v: values[v.name]).fit_warnings() == []  # ℓ = 0.7, S = 2.5: the rule asks m ≥ 10 at c = 1.6
    short = record.with_values(lambda v: {**values, "ell": 0.05}[v.name])  # the rule asks m ≥ 140
    message, converging = short.fit_warnings()  # (log p moves with a larger basis too: `convergence_messages`)
    assert "0.05 of RBF in column 0" in message and "m = 50" in message
    assert "asks for m ≥ 139;" in message and "a larger m," in message  # only what falls short is named (L = 3.97 suffices)
    assert "has not converged in the given basis (m = 50" in converging and "doubling m changes it" in converging
    long = record.with_values(lambda v: {**values, "ell": 3.0}[v.name])  # the box too small for ℓ = 3: L, so c
    message = long.fit_warnings()[0]
    assert "asks for L ≥ 9.6;" in message and "a larger c," in message and "m ≥" not in message


def test_a_given_basis_in_which_log_p_has_not_converged_is_named_at_the_fit():
    """A review: at n = 10 000, HSGP(m=60, c=1.5) passes PyMC's rule at the fitted ℓ = 2.03 yet log p(t | θ̂) is 1.07 nats
    above its converged value, and the fit's ℓ, η are 18 % and 55 % off the automatic basis's (no warning). The fit now
    says how far log p moves with a larger basis — the numbers checked here against conditioning in those bases."""
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 10, 10_000)[:, None]
    t = np.sin(1.3 * X[:, 0]) + 0.25 * rng.standard_normal(10_000)
    with pm.Model() as model:
        ell, eta, s = pm.Gamma("ell", 2, 2), pm.HalfNormal("eta", 2.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", X=X, y=t, kernel=eta**2 * bk.kernels.RBF(ell), sigma=s, approx=bk.approx.HSGP(m=60, c=1.5))
    with pytest.warns(bk.fit.FitWarning, match="has not converged in the given basis") as caught:
        eb = bk.fit.empirical_bayes(model, restarts=1, seed=0)
    message = next(str(w.message) for w in caught if "has not converged" in str(w.message))
    kernel = eb.params["eta"] ** 2 * bk.kernels.RBF(eb.params["ell"])
    given, wider = (bk.gp.condition(kernel, X, t, eb.params["s"], approx=bk.approx.HSGP(m=m, c=c)).log_marginal_likelihood
                    for m, c in ((60, 1.5), (90, 2.25)))
    assert f"a 1.5× wider box with 1.5× the functions changes it by {wider - given:+.3g} nats" in message
    assert wider - given < -0.5 and "doubling m" not in message  # the box, not the resolution, falls short


def test_streamed_rows_give_the_numbers_of_the_held_design_matrix(monkeypatch):
    """Φ in row blocks of 7·M entries (22 blocks) against Φ whole: the same statistics, LML, LOO and predictions."""
    held = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=30, c=1.6))
    monkeypatch.setattr(blr, "BLOCK_ENTRIES", 7 * 32)
    streamed = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=30, c=1.6))
    assert len(list(streamed._rows.blocks())) == 22
    assert streamed.log_marginal_likelihood == pytest.approx(held.log_marginal_likelihood, rel=1e-12)
    np.testing.assert_allclose(streamed.loo_log_predictive, held.loo_log_predictive, rtol=1e-10)
    np.testing.assert_allclose(streamed.predict(X1[:10]).var, held.predict(X1[:10]).var, rtol=1e-10)


def test_the_loo_of_the_solver_is_the_dense_leave_one_out():
    """log p(tᵢ | t₋ᵢ) against refitting the weight-space model without point i (numpy, 5 points)."""
    solver = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=30, c=1.6))
    K = solver.gram_kernel.evaluate(X1) + 0.15**2 * np.eye(150)
    for i in (0, 37, 149):
        keep = np.arange(150) != i
        k = K[i, keep]
        mu = k @ np.linalg.solve(K[np.ix_(keep, keep)], Y1[keep])
        var = K[i, i] - k @ np.linalg.solve(K[np.ix_(keep, keep)], k)
        expected = -0.5 * np.log(2 * np.pi * var) - 0.5 * (Y1[i] - mu) ** 2 / var
        assert solver.loo_log_predictive[i] == pytest.approx(expected, rel=1e-8)


def test_automatic_m_and_c_follow_pymcs_rule_for_a_given_length_scale():
    """c = max(a₁ℓ/S, 1.2), m = ⌊a₂c·S/ℓ⌋ (PyMC's `approx_hsgp_hyperparams`; RBF a = (3.2, 1.75), Matérn-5/2 (4.1, 2.65))."""
    S = (X1.max() - X1.min()) / 2
    basis = bk.approx.HSGP().basis(bk.kernels.RBF(0.5), X1[:, None])
    np.testing.assert_allclose(basis.parameters()["L"], 1.2 * S)  # 3.2·0.5/S < 1.2
    assert basis.m == (int(1.75 * 1.2 * S / 0.5),)
    wide = bk.approx.HSGP().basis(bk.kernels.Matern52(2.0), X1[:, None])
    np.testing.assert_allclose(wide.parameters()["L"], 4.1 * 2.0)  # c·S = a₁ℓ
    assert wide.m == (int(2.65 * 4.1),)


def test_automatic_m_reads_a_random_length_scale_from_its_prior_and_is_capped():
    with pm.Model():
        ell = pm.LogNormal("ell", np.log(0.5), 0.1)
        basis = bk.approx.HSGP().basis(bk.kernels.RBF(ell), X1[:, None])
    low = np.exp(np.log(0.5) - 2.326 * 0.1)  # the 1 % quantile of the prior
    assert basis.m[0] == pytest.approx(1.75 * basis.parameters()["L"][0] / low, abs=2)
    with pm.Model(), pytest.warns(RuntimeWarning, match="would need m ="):  # c given: the basis stays as it is built
        capped = bk.approx.HSGP(c=2.0).basis(bk.kernels.RBF(pm.HalfNormal("ell", 1.0)), X1[:, None])
    assert capped.m == (M_MAX[1],)


def test_mcmc_predictions_outside_the_box_warn_once():
    """`bk.fit.mcmc(..., Xnew=…)` on an HSGP with Xnew beyond the box c ± L: the basis's warning (its functions reflect
    there) is said once, at the caller's line, not once a draw — and not silenced with the draws' jitter, as it was (a
    user trial: predictions of 0.96 and −0.67 at the reflections, without a word)."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with pm.Model() as model:
        bk.gp.marginal_likelihood("y", X, t, pm.HalfNormal("eta", 2.0) * bk.kernels.RBF(pm.Gamma("ell", 4.0, 10.0)),
                                  pm.HalfNormal("s", 0.5), approx=bk.approx.HSGP(m=25, c=2.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bk.fit.mcmc(model, draws=10, tune=10, chains=1, seed=0, Xnew=np.array([[-0.8], [1.8]]), compute_convergence_checks=False)
    outside = [w for w in caught if "beyond its half-width" in str(w.message)]
    assert len(outside) == 1 and outside[0].category is RuntimeWarning and outside[0].filename == __file__


def test_a_basis_capped_below_the_priors_length_scales_is_said_where_it_is_sampled_not_where_it_is_built():
    """`HSGP()` on a length-scale prior whose 1 % quantile needs more than M_MAX functions: the model's basis is capped.
    Empirical Bayes re-chooses the basis at its optimum, so building the model says nothing (a user trial: the warning
    was noise for every EB fit, at a line inside the package); `bk.fit.mcmc`, which samples through it, says it is capped."""

    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pm.Model() as model:
            ell = pm.HalfNormal("ell", 2.0)
            bk.gp.marginal_likelihood("y", X, t, pm.HalfNormal("eta", 2.0) * bk.kernels.RBF(ell), pm.HalfNormal("s", 0.5),
                                      approx=bk.approx.HSGP())
    record = find_likelihood(model)[1]
    assert record.basis.m == (M_MAX[1],)
    [said] = record.sampling_warnings()
    assert said.startswith("HSGP: the smallest length scale") and f"using m = {M_MAX[1]}" in said
    with pytest.warns(bk.fit.FitWarning, match="HSGP: the smallest length scale .* would need m =") as caught:
        bk.fit.mcmc(model, draws=10, tune=10, chains=1, seed=0, compute_convergence_checks=False)
    assert any(w.filename == __file__ for w in caught if "would need m" in str(w.message))
    bk.fit.empirical_bayes(model, restarts=1, seed=0)  # the basis re-chosen at the optimum, below the cap: nothing to say
    assert find_likelihood(model)[1].basis.m < (M_MAX[1],) and find_likelihood(model)[1].sampling_warnings() == []


@pytest.mark.parametrize(
    "kernel",
    [bk.kernels.Periodic(1.0, 0.5), bk.kernels.RatQuad(1.0, 0.5), bk.kernels.Matern12(0.5), bk.kernels.Polynomial(2),
     bk.kernels.RBF(0.5) * bk.kernels.Linear(), bk.kernels.NNGP(), bk.kernels.RBF(0.5) + bk.kernels.Periodic(1.0, 0.5)],
    ids=repr,
)
def test_kernels_without_a_hilbert_basis_are_refused_by_name(kernel):
    with pytest.raises(ValueError, match="HSGP cannot approximate the kernel .*VFE"):
        bk.gp.condition(kernel, X1, Y1, 0.1, approx=bk.approx.HSGP(m=10, c=1.5))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"m": 0}, "m must be a positive integer"), ({"m": 2.5}, "m must be a positive integer"), ({"m": True}, "m must be a positive integer"),
     ({"m": [4, 0]}, "m must be a positive integer"), ({"c": 1.0}, "c must be > 1"), ({"c": -2.0}, "c must be"),
     ({"c": 1.5, "L": 3.0}, "give c or L"), ({"L": 0.0}, "L must be")],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bk.approx.HSGP(**kwargs)


def test_a_box_that_cuts_the_data_off_and_a_symbolic_kernel_are_refused():
    """A review: HSGP(m=20, L=1.0) on data of half-range 2.47 gave log p(t) = −927 against the exact GP's +24 with only
    warnings (c ≤ 1 was refused, the same box given as L was not); and a kernel with a random variable as its length
    scale failed inside numpy ("setting an array element with a sequence"), where the exact GP names it."""
    X = np.random.default_rng(9).uniform(0, 5, (200, 1))
    t = np.sin(X[:, 0])
    half_range = (X.max() - X.min()) / 2
    for L in (1.0, half_range):
        with pytest.raises(ValueError, match=rf"L must exceed the data's half-range .* column 0 has L = {L:.4g} and half-range S = {half_range:.4g}"):
            bk.gp.condition(bk.kernels.RBF(0.7), X, t, 0.2, approx=bk.approx.HSGP(m=20, L=L))
    bk.gp.condition(bk.kernels.RBF(0.7), X, t, 0.2, approx=bk.approx.HSGP(m=40, L=1.2 * half_range))  # a box around them: taken
    symbolic = bk.kernels.RBF(pm.HalfNormal.dist(1.0))
    for approx in (bk.approx.HSGP(m=20, c=1.5), bk.approx.HSGP()):
        with pytest.raises(ValueError, match="'lengthscale' of RBF is symbolic"):
            bk.gp.condition(symbolic, X, t, 0.2, approx=approx)


def test_four_input_dimensions_and_a_per_column_m_of_the_wrong_length_are_refused():
    X4 = RNG.standard_normal((30, 4))
    with pytest.raises(ValueError, match="1–3 input dimensions.*VFE"):
        bk.gp.condition(bk.kernels.RBF(1.0), X4, X4[:, 0], 0.1, approx=bk.approx.HSGP(m=5, c=1.5))
    with pytest.raises(ValueError, match="one positive integer per input column"):
        bk.gp.condition(bk.kernels.RBF(1.0), X4[:, :2], X4[:, 0], 0.1, approx=bk.approx.HSGP(m=[5, 5, 5], c=1.5))
    with pytest.raises(ValueError, match=r"approx must be None \(the exact GP\), bayeskern.approx.HSGP"):
        bk.gp.condition(bk.kernels.RBF(1.0), X1, Y1, 0.1, approx="HSGP")
    with pytest.raises(ValueError, match=r"approx must be bayeskern.approx.HSGP\(...\) or bayeskern.approx.VFE\(...\), got None"):
        bk.checks.approximation_error(bk.kernels.RBF(1.0), None, X1, Y1, 0.1)  # the audit needs an approximation (a review)


def test_predictions_outside_the_box_warn_and_inside_do_not():
    solver = bk.gp.condition(PRML, X1, Y1, 0.15, approx=bk.approx.HSGP(m=30, c=1.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solver.predict(np.linspace(-3.0, 4.0, 5))  # inside c·S = 3.75 around 0.5
    with pytest.warns(RuntimeWarning, match="does not extend there"):
        solver.predict(np.array([5.0]))


# an automatic basis is re-chosen where the fit ends: smooth Matérn-5/2 data, ℓ = 4 on [0, 10], signal-to-noise 25
X_SMOOTH = np.sort(np.random.default_rng(11).uniform(0.0, 10.0, 400))
Y_SMOOTH = bk.gp.prior_samples(bk.kernels.Matern52(4.0), X_SMOOTH, seed=5)[0] + 0.2 * np.random.default_rng(12).standard_normal(400)


def smooth_model(approx):
    with pm.Model() as model:
        eta, ell, sigma = pm.HalfNormal("eta", 2.0), pm.LogNormal("ell", np.log(4.0), 0.5), pm.HalfNormal("sigma", 1.0)
        bk.gp.marginal_likelihood("y", X_SMOOTH, Y_SMOOTH, eta**2 * bk.kernels.Matern52(ell), sigma, approx=approx)
    return model


def test_an_automatic_basis_is_rechosen_at_the_optimum_and_the_fit_matches_the_exact_gp():
    model = smooth_model(bk.approx.HSGP())
    first = model.observed_RVs[0].tag.bayeskern.basis  # PyMC's rule on the prior's 1 %–99 % length scales
    with warnings.catch_warnings():
        warnings.simplefilter("error", bk.fit.FitWarning)  # no resolution warning for a basis the fit chose itself
        eb = bk.fit.empirical_bayes(model, restarts=2, seed=0)
    record = model.observed_RVs[0].tag.bayeskern
    assert eb.converged and record.basis.m != first.m and record.basis is eb.conditioned.features
    p = eb.params
    kernel = p["eta"] ** 2 * bk.kernels.Matern52(p["ell"])
    # the evidence in the chosen basis within BASIS_LML_TOL-scale distance (0.1 nats) of the exact GP's
    exact = bk.gp.condition(kernel, X_SMOOTH, Y_SMOOTH, p["sigma"]).log_marginal_likelihood
    assert abs(eb.log_marginal_likelihood - exact) < 0.1
    # the model's graph holds the new basis: its log density at the optimum is that record's evidence
    point = model.initial_point()
    point.update({"eta_log__": np.log(p["eta"]), "ell_log__": np.log(p["ell"]), "sigma_log__": np.log(p["sigma"])})
    logp = model.compile_fn(model.observedlogp, point_fn=True)(point)
    assert logp == pytest.approx(eb.log_marginal_likelihood, rel=1e-10)
    assert pm.draw(model.observed_RVs[0], random_seed=1).shape == (400,)  # prior draws read the new basis too
    # and the hyperparameters are the exact GP's to 2 % (the exact EB on the same data)
    exact_eb = bk.fit.empirical_bayes(smooth_model(None), restarts=2, seed=0)
    for name in p:
        assert p[name] == pytest.approx(exact_eb.params[name], rel=0.02), name


def test_a_given_basis_is_kept_by_the_fit():
    model = smooth_model(bk.approx.HSGP(m=40, c=3.0))
    eb = bk.fit.empirical_bayes(model, restarts=1, seed=0)
    assert eb.conditioned.features.m == (40,) and model.observed_RVs[0].tag.bayeskern.basis.m == (40,)


def test_an_automatic_basis_at_numeric_hyperparameters_has_a_converged_evidence():
    """bk.gp.condition with HSGP(): doubling m or widening the box moves log p by ≤ BASIS_LML_TOL; PyMC's rule alone does not."""

    kernel = 2.0**2 * bk.kernels.Matern52(4.0)
    chosen = bk.gp.condition(kernel, X_SMOOTH, Y_SMOOTH, 0.2, approx=bk.approx.HSGP())
    m, L = chosen.features.m[0], chosen.features.parameters()["L"][0]
    S = (X_SMOOTH.max() - X_SMOOTH.min()) / 2
    for m2, c2 in ((2 * m, L / S), (int(np.ceil(1.5 * m)), 1.5 * L / S)):
        other = bk.gp.condition(kernel, X_SMOOTH, Y_SMOOTH, 0.2, approx=bk.approx.HSGP(m=m2, c=c2))
        assert abs(other.log_marginal_likelihood - chosen.log_marginal_likelihood) <= BASIS_LML_TOL
    rule = bk.approx.HSGP().basis(kernel, X_SMOOTH[:, None])
    by_rule = bk.gp.condition(kernel, X_SMOOTH, Y_SMOOTH, 0.2, approx=bk.approx.HSGP(m=rule.m, L=rule.parameters()["L"]))
    exact = bk.gp.condition(kernel, X_SMOOTH, Y_SMOOTH, 0.2).log_marginal_likelihood
    assert abs(chosen.log_marginal_likelihood - exact) < 0.1 < abs(by_rule.log_marginal_likelihood - exact)


def test_an_evidence_that_needs_more_than_m_max_warns(monkeypatch):
    import bayeskern.approx.hsgp as hsgp

    monkeypatch.setattr(hsgp, "M_MAX", {1: 12, 2: 40, 3: 14})
    with pytest.warns(RuntimeWarning, match=r"has not converged in the basis at m = \(\d+,\).*more than m = 12"):
        chosen = bk.gp.condition(2.0**2 * bk.kernels.Matern52(4.0), X_SMOOTH, Y_SMOOTH, 0.2, approx=bk.approx.HSGP())
    assert chosen.features.m[0] <= 12


def test_a_basis_capped_at_numeric_hyperparameters_is_one_warning_the_measured_one():
    """ℓ = 0.02 on a range of 10: PyMC's rule asks for m = 1020 > 600. Conditioning measures log p at 600 and 1200 and says
    that (12 nats); the rule's own "would need m = 1020" is not said beside it (a review: two warnings, other numbers)."""
    X = np.sort(np.random.default_rng(0).uniform(0.0, 10.0, 200))
    y = np.sin(40 * X) + 0.05 * np.random.default_rng(1).standard_normal(200)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        chosen = bk.gp.condition(bk.kernels.Matern32(0.02), X, y, 0.05, approx=bk.approx.HSGP())
    assert chosen.features.m == (M_MAX[1],)
    assert [str(w.message)[:56] for w in said] == ["HSGP: log p(t | θ) has not converged in the basis at m ="]


def test_an_automatic_basis_is_chosen_column_by_column_and_does_not_depend_on_the_columns_units():
    """Column 1 in metres or in millimetres (×1000), its ARD length scale alike: the same problem. PyMC's rule is applied
    to each column with its own half-range and length scale, so the basis is the same (m per column, L in each column's
    units) and so is log p, to round-off (1e-9 relative). Pooling the columns (one half-range, the smallest ℓ of all)
    asked for m = 5600 in millimetres, capped the basis at 40 and ended 5 nats off, with a warning that named the wrong
    column's length scale (a user trial)."""
    rng = np.random.default_rng(9)
    U = rng.uniform(0.0, 1.0, (400, 2))
    y = np.sin(6 * U[:, 0]) * np.cos(4 * U[:, 1]) + 0.2 * rng.standard_normal(400)
    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is wrong at either scale
        for scale in (np.array([1.0, 1.0]), np.array([1.0, 1000.0])):
            fits.append(bk.gp.condition(bk.kernels.RBF(0.2 * scale), U * scale, y, 0.2, approx=bk.approx.HSGP()))
    metres, millimetres = fits
    assert metres.features.m == millimetres.features.m
    np.testing.assert_allclose(millimetres.features.parameters()["L"], metres.features.parameters()["L"] * [1.0, 1000.0], rtol=1e-12)
    assert millimetres.log_marginal_likelihood == pytest.approx(metres.log_marginal_likelihood, rel=1e-9)


def test_an_automatic_basis_grows_each_column_up_to_the_cap():
    """Columns of half-range 0.5 and 3.5 under one ℓ = 0.5: PyMC's rule starts at m = (10, 28). Growing every column
    1.5× passes M_MAX = 40 in the second, which once stopped the growth there, 0.077 nats off with a warning (a review);
    each column now grows as far as the cap lets it, and log p is within BASIS_LML_TOL of the exact GP's, unwarned."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 1.0, (150, 2)) * [1.0, 7.0]
    y = np.sin(3 * X[:, 0]) + np.cos(X[:, 1]) + 0.1 * rng.standard_normal(150)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = bk.gp.condition(bk.kernels.RBF(0.5), X, y, 0.1, approx=bk.approx.HSGP())
    exact = bk.gp.condition(bk.kernels.RBF(0.5), X, y, 0.1).log_marginal_likelihood
    assert chosen.features.m[1] == M_MAX[2] and abs(chosen.log_marginal_likelihood - exact) < BASIS_LML_TOL


def test_a_capped_basis_at_an_empirical_bayes_optimum_is_one_fit_warning_about_the_basis_kept(monkeypatch):
    """With M_MAX lowered to 12, the fit's optimum needs more functions than the cap. The bases the refinement tries on
    the way (PyMC's rule at each optimum, grown) are not said; the basis the fit keeps is said once, as a FitWarning at
    the caller's line, with its own m — where it used to be two RuntimeWarnings, one about a basis the fit did not keep."""
    import bayeskern.approx.hsgp as hsgp

    monkeypatch.setattr(hsgp, "M_MAX", {1: 12, 2: 40, 3: 14})
    with pm.Model() as model:
        ell = pm.InverseGamma("ell", 5.0, 10.0)
        eta = pm.HalfNormal("eta", 2.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        bk.gp.marginal_likelihood("y", X_SMOOTH, Y_SMOOTH, eta**2 * bk.kernels.Matern52(ell), sigma, approx=bk.approx.HSGP())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bk.fit.empirical_bayes(model, restarts=1, seed=1)
    said = [w for w in caught if "has not converged in the basis" in str(w.message)]
    kept = find_likelihood(model)[1].basis.m
    assert [(w.category, w.filename) for w in said] == [(bk.fit.FitWarning, __file__)]
    assert f"basis at m = {kept}" in str(said[0].message) and kept == (12,)


def test_conditioning_on_a_basis_short_of_pymcs_rule_warns_where_the_error_is_large():
    """The README's data and ℓ = 0.3: with c = 1.5 PyMC's rule asks for L ≥ 0.96 (the box has 0.75) and the measured
    error is 0.12 against the tolerance 0.01 — a RuntimeWarning at the caller's line; with c = 2.0 the rule holds, the
    error is 0.003, and nothing is said. `approximation_error`, which measures the error itself, does not repeat it."""
    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with pytest.warns(bk.approx.hsgp.ShortBasisWarning, match=r"the length scale 0.3 of RBF .* asks for L ≥ 0.96; condition with a larger c") as caught:
        bk.gp.condition(bk.kernels.RBF(0.3), X, t, sigma=0.2, approx=bk.approx.HSGP(m=120, c=1.5))
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bk.gp.condition(bk.kernels.RBF(0.3), X, t, sigma=0.2, approx=bk.approx.HSGP(m=120, c=2.0))
        short = bk.checks.approximation_error(bk.kernels.RBF(0.3), bk.approx.HSGP(m=120, c=1.5), X, t, sigma=0.2)
    assert not short.passed and short.mean_error > 0.1


def test_a_column_without_spread_takes_a_given_L_checked_by_pymcs_rule_in_its_limit():
    """One point, or a constant column: the box cannot be a multiple of the data's range (0), so L must be given; the
    basis is then built (the resolution check raised PyMC's "x_range boundaries are out of order" on it) and checked by
    the rule's limit S → 0, L ≥ a₁ℓ (3.2ℓ for the RBF). A short L is named; one that holds is silent and matches the
    exact GP (log p within 1e-6 nats; measured 7.6e-9 and 7e-15)."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.uniform(0, 1, 200), np.full(200, 0.5)]
    t = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(200)
    k = bk.kernels.RBF([0.3, 1.0])
    with pytest.raises(ValueError, match="range is 0 in some column\\); give L"):
        bk.gp.condition(k, X, t, sigma=0.1, approx=bk.approx.HSGP(m=20, c=1.5))
    short = r"length scale 1 of RBF in column 1 .* data half-range 0\): PyMC's rule asks for L ≥ 3.2; condition with a larger L"
    with pytest.warns(bk.approx.hsgp.ShortBasisWarning, match=short):
        bk.gp.condition(k, X, t, sigma=0.1, approx=bk.approx.HSGP(m=(40, 20), L=[1.5, 1.0]))
    one_point = dict(X=X[:1, :1], y=t[:1], sigma=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide = bk.gp.condition(k, X, t, sigma=0.1, approx=bk.approx.HSGP(m=(40, 20), L=[1.5, 5.0]))
        alone = bk.gp.condition(bk.kernels.RBF(0.5), **one_point, approx=bk.approx.HSGP(m=20, L=2.0))
    assert abs(wide.log_marginal_likelihood - bk.gp.condition(k, X, t, sigma=0.1).log_marginal_likelihood) < 1e-6
    assert abs(alone.log_marginal_likelihood - bk.gp.condition(bk.kernels.RBF(0.5), **one_point).log_marginal_likelihood) < 1e-6
    # m left to the rule in the box L: its limit m = ⌈a₂L/ℓ⌉, a₂ = 1.75 for the RBF (PyMC's `approx_hsgp_hyperparams`)
    assert bk.approx.HSGP(L=2.0).basis(bk.kernels.RBF(0.5), X[:1, :1]).m == (int(np.ceil(1.75 * 2.0 / 0.5)),)


def test_m_left_to_the_rule_is_sized_for_the_box_given():
    """`HSGP(L=3)` on [0, 1] with ℓ = 0.1: PyMC's rule gives m_rule functions for its own box c_rule·S, and m ∝ the box
    at a fixed ℓ, so the box given asks for m_rule·L/(c_rule·S). m was m_rule (10), which the package's own resolution
    check then called short of the 50 it asks for (a ShortBasisWarning about the package's own choice, log p 8.3 nats off)."""
    from pymc.gp.hsgp_approx import approx_hsgp_hyperparams

    X = np.linspace(0.0, 1.0, 40)[:, None]
    m_rule, c_rule = approx_hsgp_hyperparams([-0.5, 0.5], [0.1, 0.1 * (1 + 1e-9)], "expquad")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = bk.gp.condition(bk.kernels.RBF(0.1), X, np.sin(6 * X[:, 0]), sigma=0.1, approx=bk.approx.HSGP(L=3.0))
    assert g.features.m == (int(np.ceil(m_rule * 3.0 / (c_rule * 0.5))),) == (50,)


def test_the_basis_an_automatic_hsgp_chose_is_named_in_plain_numbers():
    """The report names the basis a fit chose as `HSGP(m=…, L=…)`: floats, not `np.float64(8.99…)` (a user trial)."""

    X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
    with pm.Model() as model:
        bk.gp.marginal_likelihood("y", X, t, bk.kernels.RBF(0.3), 0.2, approx=bk.approx.HSGP())
    chosen = find_likelihood(model)[1].approximation_as_fitted(bk.approx.HSGP())
    assert chosen.m is not None and all(type(v) is float for v in chosen.L) and "np." not in repr(chosen)


def test_an_automatic_basis_converges_for_huge_targets_without_a_false_warning():
    """Targets ×1e150: |log p| ~ 1e290, whose round-off alone moves it by far more than 0.05 nats between bases; the
    basis stops growing once log p moves by less than 1e-12 of itself (BASIS_LML_ROUNDOFF), below m = M_MAX, without the
    warning that it had not converged (it warned at m = 432), and predicts as the exact GP (to 1e-10 relative)."""
    rng = np.random.default_rng(8)
    X = np.sort(rng.uniform(-2, 2, 100))
    t = (np.sin(2 * X) + 0.2 * rng.standard_normal(100)) * 1e150
    k = 1.5 * bk.kernels.RBF(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hsgp = bk.gp.condition(k, X, t, 0.2, approx=bk.approx.HSGP())
    exact = bk.gp.condition(k, X, t, 0.2)
    assert max(hsgp.features.m) < 432
    np.testing.assert_allclose(hsgp.predict(X).mean, exact.predict(X).mean, rtol=1e-10, atol=1e-10 * np.abs(t).max())


def test_a_log_p_that_is_not_finite_has_not_settled_in_the_basis():
    """`_moved`: 0.05 nats or 1e-12 of log p, whichever is larger; a NaN or infinite log p counts as moved (the basis
    keeps growing, as before the relative floor: max(0.05, 1e-12·∞) let −∞ pass as settled, a review found)."""
    from bayeskern.approx.hsgp import _moved

    assert not _moved(-1e3, -1e3 + 0.04) and _moved(-1e3, -1e3 + 0.06)
    assert not _moved(-1e290, -1e290 * (1 + 1e-14)) and _moved(-1e290, -1e290 * (1 + 1e-11))
    assert _moved(np.nan, -1.0) and _moved(-1.0, np.nan) and _moved(-np.inf, -np.inf) and _moved(-1.0, -np.inf)
