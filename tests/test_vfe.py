"""bayeskern.approx.VFE: Titsias' bound against dense numpy, its gradient against finite differences, the conditioned
model against the VFE predictive written from the formula, EB against the exact GP, and the errors users meet."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.stats import multivariate_normal

import bayeskern as bk
from bayeskern._compile import NUMPY
from bayeskern.approx._titsias import INDUCING_JITTER, TitsiasBound, _bound_and_gradients, titsias_bound
from bayeskern.kernels import RBF, Periodic

RNG = np.random.default_rng(11)
X2 = RNG.uniform(-2.0, 2.0, (300, 2))
Y2 = np.sin(1.5 * X2[:, 0]) * np.cos(X2[:, 1]) + 0.2 * RNG.standard_normal(300)
ARD = 1.3 * RBF(lengthscale=[0.9, 1.4])
SIGMA = 0.2


def dense_parts(kernel, X, Z, sigma):
    """K, Q = K_fu (K_uu + δI)⁻¹ K_uf and C = Q + σ²I in dense numpy, δ = INDUCING_JITTER · mean diag K_uu."""
    Kuu = kernel.evaluate(Z)
    Kuu = Kuu + INDUCING_JITTER * np.mean(np.diag(Kuu)) * np.eye(len(Z))
    Kuf = kernel.evaluate(Z, X)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    return kernel.evaluate(X), Q, Q + sigma**2 * np.eye(len(X))


def dense_bound(kernel, X, y, Z, sigma):
    """F = log N(y | 0, Q + σ²I) − tr(K − Q)/(2σ²)   (Titsias 2009, eq. 9), from the dense n × n matrices."""
    K, Q, C = dense_parts(kernel, X, Z, sigma)
    return multivariate_normal(np.zeros(len(y)), C).logpdf(y) - np.trace(K - Q) / (2 * sigma**2)


def test_the_bound_is_titsias_formula_and_below_the_exact_evidence():
    Z = bk.approx.VFE(n_inducing=25).inducing_points(X2)
    conditioned = bk.gp.condition(ARD, X2, Y2, SIGMA, approx=bk.approx.VFE(inducing=Z))
    exact = bk.gp.condition(ARD, X2, Y2, SIGMA).log_marginal_likelihood
    # the same quantity by Woodbury and by a dense slogdet/solve: agreement to round-off of a sum of ~300 terms
    assert conditioned.log_marginal_likelihood == pytest.approx(dense_bound(ARD, X2, Y2, Z, SIGMA), rel=1e-10)
    assert conditioned.log_marginal_likelihood < exact  # a lower bound (with the margin tr(K − Q)/(2σ²) ≥ 0)
    K, Q, _ = dense_parts(ARD, X2, Z, SIGMA)
    assert conditioned.trace_term == pytest.approx(np.trace(K - Q) / (2 * SIGMA**2), rel=1e-8)
    assert conditioned.nystrom_residual == pytest.approx(np.trace(K - Q) / np.trace(K), rel=1e-8)


def test_with_the_data_as_inducing_points_the_bound_is_the_exact_evidence():
    X, y = X2[:80], Y2[:80]
    conditioned = bk.gp.condition(ARD, X, y, SIGMA, approx=bk.approx.VFE(n_inducing=80))  # n ≤ M: Z = X
    exact = bk.gp.condition(ARD, X, y, SIGMA)
    # Q = K up to the relative jitter 1e-6 on K_uu: log p changes by O(1e-6 · n · k(x, x)/σ²) ≈ 3e-3 here
    assert conditioned.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=3e-3)
    # K(X, X) has condition number ~1e12 here: the jitter δ = 1.3e-6 truncates its spectrum below δ, which moves
    # the mean by ~1e-4 (measured 1.3e-4) and the variance by ~4e-6; 4× those as tolerances
    p, e = conditioned.predict(X2[200:220]), exact.predict(X2[200:220])
    np.testing.assert_allclose(p.mean, e.mean, atol=5e-4)
    np.testing.assert_allclose(p.var, e.var, atol=2e-5)


def test_the_predictive_is_the_vfe_formula():
    Z = X2[::15]
    conditioned = bk.gp.condition(ARD, X2, Y2, SIGMA, approx=bk.approx.VFE(inducing=Z))
    Xnew = RNG.uniform(-3.0, 3.0, (40, 2))
    Kuu = ARD.evaluate(Z) + INDUCING_JITTER * np.mean(np.diag(ARD.evaluate(Z))) * np.eye(len(Z))
    Kuf, Kus = ARD.evaluate(Z, X2), ARD.evaluate(Z, Xnew)
    S = np.linalg.inv(Kuu + Kuf @ Kuf.T / SIGMA**2)  # Σ = (K_uu + σ⁻²K_uf K_fu)⁻¹
    mean = Kus.T @ S @ Kuf @ Y2 / SIGMA**2  # μ(x) = σ⁻² k_xu Σ K_uf y   (Titsias 2009, eq. 6)
    cov = ARD.evaluate(Xnew) - Kus.T @ np.linalg.solve(Kuu, Kus) + Kus.T @ S @ Kus  # K** − Q** + K*u Σ Ku*
    p = conditioned.predict(Xnew, full_cov=True)
    np.testing.assert_allclose(p.mean, mean, atol=1e-8)
    np.testing.assert_allclose(p.cov, cov, atol=1e-8)
    np.testing.assert_allclose(conditioned.predict(Xnew).var, np.diag(cov), atol=1e-8)


@pytest.mark.parametrize("mode", [NUMPY, "NUMBA"])
def test_the_bound_op_and_its_gradient_match_finite_differences_in_both_backends(mode):
    X, y, Z = X2[:60], Y2[:60], X2[::40]
    ell, log_sigma = pt.dvector("ell"), pt.dscalar("log_sigma")
    kernel = 1.3 * RBF(lengthscale=ell)
    F = titsias_bound(kernel.full(Z), kernel.full(Z, X), kernel.diag(X), pt.as_tensor(y), pt.exp(log_sigma))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Numba runs the Op's numpy code in object mode by choice: nothing to warn about
        f = pytensor.function([ell, log_sigma], [F, *pt.grad(F, [ell, log_sigma])], mode=mode)
    point = (np.array([0.9, 1.4]), np.log(SIGMA))
    value, d_ell, d_sigma = f(*point)
    assert value == pytest.approx(dense_bound(ARD, X, y, Z, SIGMA), rel=1e-10)
    h = 1e-6  # central differences: O(h²) truncation and O(ε/h) round-off, ~1e-8 relative
    bound = lambda e, s: f(e, s)[0]  # noqa: E731
    for k in range(2):
        e = np.eye(2)[k] * h
        assert d_ell[k] == pytest.approx((bound(point[0] + e, point[1]) - bound(point[0] - e, point[1])) / (2 * h), rel=1e-6)
    assert d_sigma == pytest.approx((bound(point[0], point[1] + h) - bound(point[0], point[1] - h)) / (2 * h), rel=1e-6)


def test_float32_variables_are_cast_to_float64_in_the_graph_on_both_backends():
    """The Op's K_uu, K_uf, Σ k(xᵢ, xᵢ), t and σ² as float32 variables (a model under `floatX=float32`): its inputs are cast to
    float64 in the graph (uncast, the Numba backend could not unbox them: a TypeError), and the bound and ∂/∂K_uu are the
    float64 values' to the bit."""
    Z, X = X2[::60], X2[:40]
    values = (ARD.evaluate(Z), ARD.evaluate(Z, X), 1.3 * 40, Y2[:40], SIGMA**2)
    f32 = [pt.fmatrix(), pt.fmatrix(), pt.fscalar(), pt.fvector(), pt.fscalar()]
    f64 = [pt.dmatrix(), pt.dmatrix(), pt.dscalar(), pt.dvector(), pt.dscalar()]
    F32, F64 = TitsiasBound()(*f32)[0], TitsiasBound()(*f64)[0]
    assert all(x.dtype == "float64" for x in F32.owner.inputs)
    as32 = [np.asarray(v, dtype=np.float32) for v in values]
    for mode in ("NUMBA", "FAST_COMPILE"):
        got = pytensor.function(f32, [F32, pt.grad(F32, f32[0])], mode=mode)(*as32)
        want = pytensor.function(f64, [F64, pt.grad(F64, f64[0])], mode=mode)(*[np.asarray(v, dtype=np.float64) for v in as32])
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_the_op_gradients_with_respect_to_its_matrices_are_exact():
    Z = X2[::60]  # 5 points, cond(K_uu) ≈ 170: the truncation error of the differences stays small
    Kuu, Kuf = ARD.evaluate(Z), ARD.evaluate(Z, X2[:50])
    kd, y, s2 = 1.3 * 50, Y2[:50], SIGMA**2
    F, d_Kuu, d_Kuf, d_noise, d_t = _bound_and_gradients(Kuu, Kuf, kd, y, s2)
    # F sums terms of size tᵀt/σ² ~ 1e3, so it carries round-off ~1e-10: central differences with h = 1e-5 are
    # good to ~1e-5 relative (round-off/h), truncation O(h²·F‴) below that (measured 5e-9 for K_uu)
    h = 1e-5
    fd = lambda *a: (_bound_and_gradients(*a[0])[0] - _bound_and_gradients(*a[1])[0]) / (2 * h)  # noqa: E731
    E = np.zeros_like(Kuf)
    E[2, 7] = h
    assert d_Kuf[2, 7] == pytest.approx(fd((Kuu, Kuf + E, kd, y, s2), (Kuu, Kuf - E, kd, y, s2)), rel=2e-5)
    E = np.zeros_like(Kuu)
    E[1, 4] = E[4, 1] = h  # K_uu is symmetric: perturb both entries, compare with the sum of both partials
    assert d_Kuu[1, 4] + d_Kuu[4, 1] == pytest.approx(fd((Kuu + E, Kuf, kd, y, s2), (Kuu - E, Kuf, kd, y, s2)), rel=2e-5)
    assert d_noise == pytest.approx(fd((Kuu, Kuf, kd, y, s2 + h), (Kuu, Kuf, kd, y, s2 - h)), rel=2e-5)
    e = np.zeros(50)
    e[3] = h
    assert d_t[3] == pytest.approx(fd((Kuu, Kuf, kd, y + e, s2), (Kuu, Kuf, kd, y - e, s2)), rel=2e-5)


def test_a_kernel_that_is_not_positive_definite_gives_no_density_and_a_clear_error():
    Kuu = -np.eye(3)
    assert _bound_and_gradients(Kuu, np.ones((3, 5)), 5.0, np.ones(5), 0.1)[0] == -np.inf
    with pytest.raises(ValueError, match="not positive definite at the inducing points"):
        bk.gp.condition(bk.kernels.Sigmoid(1.0, -1.0), X2, Y2, SIGMA, approx=bk.approx.VFE(n_inducing=20))  # k(x, x) = tanh(xᵀx − 1) < 0 near 0


def test_empirical_bayes_with_inducing_points_finds_the_exact_gps_hyperparameters_on_smooth_data():
    X, y = X2[:200], Y2[:200]
    fits = []
    for approx in (bk.approx.VFE(n_inducing=60), None):
        with pm.Model():
            ell = pm.InverseGamma("ell", 3.0, 3.0, shape=2)
            amp, sigma = pm.HalfNormal("amp", 2.0), pm.HalfNormal("sigma", 1.0)
            bk.gp.marginal_likelihood("y", X, y, amp * RBF(lengthscale=ell), sigma, approx=approx)
            fits.append(bk.fit.empirical_bayes(restarts=1, seed=3))
    vfe, exact = fits
    assert vfe.converged and isinstance(vfe.conditioned, bk.approx.vfe.InducingPosterior)
    # 60 inducing points resolve these length scales (Nyström residual ~1e-4): σ and ℓ agree to a few per cent
    assert vfe.params["sigma"] == pytest.approx(exact.params["sigma"], rel=0.02)
    np.testing.assert_allclose(vfe.params["ell"], exact.params["ell"], rtol=0.05)
    assert vfe.conditioned.log_marginal_likelihood <= exact.conditioned.log_marginal_likelihood


def test_the_pymc_model_scores_what_the_conditioned_model_computes():
    approx = bk.approx.VFE(n_inducing=30)
    with pm.Model() as model:
        obs = bk.gp.marginal_likelihood("y", X2, Y2, ARD, SIGMA, approx=approx)
    record = obs.tag.bayeskern
    # two routes to F (Woodbury in the Op, the weight-space solver), both on V = L⁻¹K_uf, cond(L) = cond(K_uu + δI)^½ ≈ 270
    # here: round-off ~270·ε on terms of size tr K/σ² ~ 5e3 in a total of ~12, ~2e-11 relative (measured 9e-13 against
    # a 40-digit mpmath evaluation; the Op's earlier route through (K_uu + δI)⁻¹ and K_uf K_fu was off by 2e-8)
    assert model.compile_logp(mode=NUMPY)({}) == pytest.approx(record.condition().log_marginal_likelihood, rel=1e-10)
    np.testing.assert_array_equal(record.inducing, approx.inducing_points(X2))  # seeded: the same points twice


def test_the_audit_reports_the_trace_term():
    audit = bk.checks.approximation_error(ARD, bk.approx.VFE(n_inducing=40), X2, Y2, SIGMA, subsample=150)
    assert audit.trace_term > 0 and 0 < audit.nystrom_residual < 1
    assert audit.to_dict()["trace_term"] == audit.trace_term
    hsgp = bk.checks.approximation_error(RBF(1.0), bk.approx.HSGP(m=20, c=1.5), X2[:, :1], Y2, SIGMA, subsample=100)
    assert hsgp.trace_term is None and hsgp.nystrom_residual is None


def test_periodic_kernels_are_fine_for_inducing_points():
    X = X2[:, :1]
    conditioned = bk.gp.condition(Periodic(1.0, 2.0), X, Y2, SIGMA, approx=bk.approx.VFE(n_inducing=30))
    assert conditioned.log_marginal_likelihood == pytest.approx(dense_bound(Periodic(1.0, 2.0), X, Y2, conditioned.features.X_basis, SIGMA), rel=1e-10)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"n_inducing": 0}, "n_inducing must be an integer ≥ 1"), ({"n_inducing": 2.5}, "n_inducing must be an integer"),
     ({"n_inducing": True}, "n_inducing must be an integer"), ({"inducing": [[0.0]], "n_inducing": 3}, "not both"),
     ({"inducing": [[0.0, np.nan]]}, "inducing"), ({"seed": -1}, "seed must be an integer ≥ 0")],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bk.approx.VFE(**kwargs)


def test_inducing_points_with_the_wrong_number_of_columns_are_refused():
    with pytest.raises(ValueError, match="inducing has 1 column"):
        bk.gp.condition(ARD, X2, Y2, SIGMA, approx=bk.approx.VFE(inducing=[[0.0], [1.0]]))


def test_the_jitter_on_k_uu_is_reported_with_its_cost_and_warned_of_when_it_matters():
    """δ = INDUCING_JITTER·mean diag K_uu is always added to K_uu. Its share of the trace term, tr(Q₀ − Q_δ)/(2σ²) with Q₀
    from K_uu itself (well conditioned here: 12 points 0.09 apart, ℓ = 0.2, cond ≈ 3e5), is computed densely in numpy and
    `jitter_trace_cost` must be a lower bound within a factor 2 of it (δ‖(K_uu + δI)⁻¹K_uf‖²_F against
    δ tr(K_fu K_uu⁻¹(K_uu + δI)⁻¹K_uf), equal to first order in δ). It grows as σ⁻²: no warning at σ = 0.1, a
    RuntimeWarning (a fit warning of the record) at σ = 1e-4."""
    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(0.0, 1.0, 400))[:, None]
    Z = np.linspace(0.0, 1.0, 12)[:, None]
    kernel = RBF(0.2)
    Kuu, Kuf = kernel.evaluate(Z), kernel.evaluate(Z, X)
    delta = INDUCING_JITTER * np.mean(np.diag(Kuu))
    assert np.linalg.cond(Kuu) < 1e7
    Q0 = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    Qd = Kuf.T @ np.linalg.solve(Kuu + delta * np.eye(len(Z)), Kuf)
    for sigma, warns in ((0.1, False), (1e-4, True)):
        t = np.sin(6 * X[:, 0]) + sigma * rng.standard_normal(len(X))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            conditioned = bk.gp.condition(kernel, X, t, sigma, approx=bk.approx.VFE(inducing=Z))
        share = np.trace(Q0 - Qd) / (2 * sigma**2)
        assert conditioned.inducing_jitter == delta
        assert 0.5 * share <= conditioned.jitter_trace_cost <= share * (1 + 1e-6), (conditioned.jitter_trace_cost, share)
        said = [str(w.message) for w in caught if "jitter δ" in str(w.message)]
        record = bk.approx.vfe.VFELikelihood(X, t, sigma, kernel, Z)
        assert bool(said) == warns == bool(record.fit_warnings()) == (conditioned.jitter_trace_cost >= 1.0), said


def test_the_jitter_is_measured_on_the_whole_bound_when_its_trace_share_is_not_negligible():
    """A review: inducing points Z = X (the bound is then the exact evidence without jitter), σ = 0.01 below the data's
    noise 0.2: δ on K_uu moved the bound by 19 nats (12 on these data) — its log N(t | 0, Q + σ²I) term too, the same way —
    while the trace term's share was 0.74 nats and nothing warned. `jitter_bound_cost` = F(δ/100) − F is checked against the bound written
    in numpy at both jitters; the exact evidence (numpy, no jitter) is higher still, so the measure is a lower bound."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 10, (100, 2))
    t = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.2 * rng.standard_normal(100)
    kernel, sigma = 1.5 * RBF(1.2), 0.01
    K = kernel.evaluate(X)

    def bound(delta):  # F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²), Q = K (K + δI)⁻¹ K with Z = X   (Titsias 2009)
        Q = K @ np.linalg.solve(K + delta * np.eye(100), K)
        return multivariate_normal(np.zeros(100), Q + sigma**2 * np.eye(100)).logpdf(t) - np.trace(K - Q) / (2 * sigma**2)

    with pytest.warns(RuntimeWarning, match=r"lowers the VFE bound by \d+\.?\d* nats") as caught:
        conditioned = bk.gp.condition(kernel, X, t, sigma, approx=bk.approx.VFE(inducing=X))
    delta = conditioned.inducing_jitter
    assert conditioned.jitter_trace_cost < 1.0  # the trace term alone would not have warned
    np.testing.assert_allclose(conditioned.log_marginal_likelihood, bound(delta), rtol=1e-8)  # cond(K + δI) ≈ 1e6·…: 1e-8
    np.testing.assert_allclose(conditioned.jitter_bound_cost, bound(delta / 100) - bound(delta), rtol=1e-5)
    exact = multivariate_normal(np.zeros(100), K + sigma**2 * np.eye(100)).logpdf(t)
    assert exact - conditioned.log_marginal_likelihood > conditioned.jitter_bound_cost > 10.0
    assert len([w for w in caught if "jitter δ" in str(w.message)]) == 1


def test_where_the_jitter_cannot_be_measured_its_trace_share_still_warns(monkeypatch):
    """A review: when K_uu + (δ/100)·I has no Cholesky factor the measure came out 0.0 and silenced the warning that the
    trace term's share (5.2 nats here) gives. It is None then, and that share warns."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 1))
    t = np.sin(3 * X[:, 0])
    build = bk.approx.vfe.InducingFeatures.__init__

    def no_factor_below_delta(self, kernel, Z, jitter=None):
        if jitter is not None:
            raise ValueError("no Cholesky factor (simulated)")
        build(self, kernel, Z, jitter)

    monkeypatch.setattr(bk.approx.vfe.InducingFeatures, "__init__", no_factor_below_delta)
    with pytest.warns(RuntimeWarning, match=r"adds at least 5\.\d+ nats to the VFE bound's trace term"):
        conditioned = bk.gp.condition(RBF(1.0), X, t, 1e-3, approx=bk.approx.VFE(inducing=X[:100]))
    assert conditioned.jitter_bound_cost is None and conditioned.jitter_trace_cost > 5.0


def test_the_jitter_is_measured_where_the_data_fit_term_carries_its_cost():
    """A user trial: a very smooth kernel (ℓ = 3 on [−1, 1]) on 60 inducing points, σ = 0.2. K_uu is far more singular
    than δ: δ lowered the bound by 1.19 nats, all in the log N(t | 0, Q + σ²I) term, while the trace term's share was
    0.0014 nats, so nothing was measured or said. The fit term's first-order share (1.19 here) now triggers the measure;
    it is checked against the bound written in numpy at δ and δ/100 (Titsias 2009), and the warning is given."""
    rng = np.random.default_rng(6)
    x = np.sort(rng.uniform(-1, 1, 1500))
    t = np.sin(3 * x) + 0.2 * rng.standard_normal(1500)
    kernel, sigma = RBF(3.0), 0.2
    with pytest.warns(RuntimeWarning, match=r"lowers the VFE bound by 1\.\d+ nats"):
        conditioned = bk.gp.condition(kernel, x[:, None], t, sigma, approx=bk.approx.VFE(n_inducing=60))
    Z = conditioned.features.X_basis
    Kuu, Kuf, diagK = kernel.evaluate(Z), kernel.evaluate(Z, x[:, None]), np.ones(1500)

    def bound(delta):  # F = log N(t | 0, Q + σ²I) − tr(K − Q)/(2σ²), Q = K_fu (K_uu + δI)⁻¹ K_uf, by Woodbury in numpy
        A = Kuu + delta * np.eye(60)
        Q_half = np.linalg.solve(np.linalg.cholesky(A), Kuf)  # Q = Q_halfᵀ Q_half
        B = np.eye(60) + Q_half @ Q_half.T / sigma**2
        c = np.linalg.solve(np.linalg.cholesky(B), Q_half @ t) / sigma**2
        quad = t @ t / sigma**2 - c @ c
        logdet = 2 * np.sum(np.log(np.diag(np.linalg.cholesky(B)))) + 1500 * np.log(sigma**2)
        return -0.5 * (quad + logdet + 1500 * np.log(2 * np.pi)) - (diagK.sum() - np.sum(Q_half**2)) / (2 * sigma**2)

    delta = conditioned.inducing_jitter
    assert conditioned.jitter_trace_cost < 0.01  # the trace term's share alone would not have measured it
    # the same formulas through Cholesky factors of K_uu + δI (cond up to ~1e8 at δ/100) on a bound of ~ −2128: the bounds
    # agree to ~1e-9 nats and their difference to ~1e-8 here, so 1e-8 relative on F and 1e-6 on the ~1-nat cost
    np.testing.assert_allclose(conditioned.log_marginal_likelihood, bound(delta), rtol=1e-8)
    np.testing.assert_allclose(conditioned.jitter_bound_cost, bound(delta / 100) - bound(delta), rtol=1e-6)
    assert conditioned.jitter_bound_cost > 1.0
