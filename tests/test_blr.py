"""Bayesian linear regression: analytic posterior and evidence against numpy, the PyMC likelihoods, bad input."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.stats import multivariate_normal, norm

import bayeskern as bk
import reference as ref
from bayeskern import features as F

# Both sides solve M × M systems with M ≤ 6 and well-conditioned matrices; the reference uses
# explicit inverses, good to ~1e-12 here. 1e-9 relative leaves a wide margin.
RTOL, ATOL = 1e-9, 1e-11

S4 = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.1], [0.1, 0.0, 0.1, 0.3]])


def _data():
    X, t = bk.datasets.sinusoid(15, 0.25, 1)
    return X, t, np.linspace(-0.1, 1.1, 7)[:, None]


def _assert_is_the_reference(post, mN, SN, mean, cov, lml):
    """A `BLRPosterior` against `ref.blr_posterior`'s numbers (RTOL, ATOL; the evidence to 1e-12)."""
    np.testing.assert_allclose(post.weights_mean, mN, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.weights_cov, SN, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.mean, mean, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.cov, cov, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.var, np.diag(cov), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(post.log_marginal_likelihood, lml, rtol=1e-12)


@pytest.mark.parametrize("prior_cov", [0.5, np.array([2.0, 1.0, 0.5, 0.25]), S4], ids=["scalar", "diagonal", "matrix"])
@pytest.mark.parametrize("include_noise", [False, True])
def test_posterior_matches_numpy_reference(prior_cov, include_noise):
    X, t, Xs = _data()
    phi, sigma = F.Polynomial(3), 0.25
    post = bk.blr.posterior(phi, X, t, sigma=sigma, prior_cov=prior_cov, Xnew=Xs, include_noise=include_noise)
    S = prior_cov * np.eye(4) if np.ndim(prior_cov) == 0 else (np.diag(prior_cov) if np.ndim(prior_cov) == 1 else prior_cov)
    mN, SN, mean, cov, lml = ref.blr_posterior(ref.poly_features_1d(X, 3), t, sigma, S, ref.poly_features_1d(Xs, 3))
    if include_noise:
        cov = cov + sigma**2 * np.eye(len(Xs))
    _assert_is_the_reference(post, mN, SN, mean, cov, lml)


def _many_features(M: int = 25):
    """M > n: M − 1 Gaussian bumps and a bias on the 15 points of `_data`, and a matrix Σ to go with them."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((M, M))
    return F.GaussianBasis(np.linspace(0, 1, M - 1), 0.1, bias=True), A @ A.T / M + 0.5 * np.eye(M)


@pytest.mark.parametrize("kind", ["scalar", "diagonal", "matrix"])
def test_fewer_points_than_features_give_the_weight_space_posterior(kind):
    """n = 15 < M = 25: the solver factorises the n × n D = I + ΨΨᵀ/σ² (the kernel trick), not B; every number is
    still the weight-space posterior of PRML 3.53–3.59 and the evidence (numpy, explicit inverses), and the
    leave-one-out is R&W 5.12 from C⁻¹. Σ⁻¹ + ΦᵀΦ/σ² and C have condition numbers ≤ 2e3 here: the explicit
    inverses are good to ~1e-12, RTOL (1e-9) leaves the margin."""
    X, t, Xs = _data()
    phi, S_matrix = _many_features()
    prior_cov = {"scalar": 0.7, "diagonal": np.linspace(0.5, 2.0, 25), "matrix": S_matrix}[kind]
    S = np.broadcast_to(prior_cov, (25,)) if np.ndim(prior_cov) < 2 else prior_cov
    S = np.diag(S) if S.ndim == 1 else S
    sigma = 0.25
    solver = bk.blr.condition(phi, X, t, sigma=sigma, prior_cov=prior_cov)
    assert solver._Psi is not None and solver._LB.shape == (15, 15)  # the n × n route
    Phi, Phi_new = phi(X), phi(Xs)
    mN, SN, mean, cov, lml = ref.blr_posterior(Phi, t, sigma, S, Phi_new)
    _assert_is_the_reference(solver.posterior(Xs), mN, SN, mean, cov, lml)
    C_inv = np.linalg.inv(Phi @ S @ Phi.T + sigma**2 * np.eye(15))
    d, r = np.diag(C_inv), C_inv @ t  # log N(tᵢ | tᵢ − rᵢ/dᵢ, 1/dᵢ)   (R&W 5.10–5.12)
    np.testing.assert_allclose(solver.loo_log_predictive, norm.logpdf(t, t - r / d, np.sqrt(1 / d)), rtol=RTOL)
    draws = solver.sample(Xs, n=4000, seed=0)  # w ~ N(m_N, S_N), prior draws conditioned on the data
    assert np.max(np.abs(draws.mean(axis=0) - mean) / np.sqrt(np.diag(cov) / 4000)) < 5  # the draws' mean within 5 sd
    np.testing.assert_allclose(draws.var(axis=0), np.diag(cov), rtol=5 * np.sqrt(2 / 4000))  # a variance's sd: var·√(2/N)


@pytest.mark.parametrize("sigma", [1e-8, 1e-10, 1e-12, 1e-13])
def test_fewer_points_than_features_keep_the_evidence_as_the_noise_runs_to_zero(sigma):
    """n = 8 < M = 11: t lies in Φ's span, so C = ΦΣΦᵀ + σ²I keeps eigenvalues ≥ λ_min(ΦΣΦᵀ) as σ → 0 and its log density
    converges, where an EB noise runs to its edge. Reference: numpy's Cholesky of C itself, written from the formula
    (cond C ≤ 1e8 here: accurate to ~1e-8 relative in tᵀC⁻¹t, ~1e-9 nats). The evidence was 9e-8 nats off at σ = 1e-12
    and 1e-5 at 1e-13 when tᵀC⁻¹t was summed as ‖t − Φm_N‖²/σ² + m_NᵀΣ⁻¹m_N."""
    X, t = bk.datasets.sinusoid(n=8, noise=0.2, seed=0)
    phi = F.GaussianBasis(np.linspace(0, 1, 11), 0.1)
    Phi = phi(X)
    C = 0.3 * Phi @ Phi.T + sigma**2 * np.eye(8)
    assert np.linalg.cond(C) < 1e8
    L = np.linalg.cholesky(C)
    z = np.linalg.solve(L, t)
    expected = -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 4 * np.log(2 * np.pi)
    solver = bk.blr.condition(phi, X, t, sigma=sigma, prior_cov=0.3)
    assert solver._Psi is not None and solver.jitter == 0.0  # the n × n route, no jitter
    np.testing.assert_allclose(solver.log_marginal_likelihood, expected, rtol=0, atol=1e-9)


def test_design_rows_hold_phi_with_fewer_rows_than_columns_and_stream_it_in_one_pass_otherwise(monkeypatch):
    """With blocks of 100 entries: 15 rows × 25 features are held whole (fewer rows than columns: Φ is smaller than
    any M × M matrix, and the solver takes the n × n route); 60 rows × 25 are streamed, 4 rows a block, and ΦᵀΦ is
    accumulated in the same pass as Φᵀt — the feature map evaluated once per block, not again when ΦᵀΦ is read. ΦᵀΦ
    equals numpy's product to round-off (sums of 60 terms in another order; bar 1e-12)."""
    from bayeskern import blr as blr_module

    monkeypatch.setattr(blr_module, "BLOCK_ENTRIES", 100)
    phi, _ = _many_features()
    X, t, _ = _data()
    few = blr_module.DesignRows(phi, X, t)
    assert few.Phi is not None and bk.blr.condition(phi, X, t, sigma=0.25, prior_cov=1.0)._Psi is not None
    X60 = np.linspace(0, 1, 60)[:, None]
    t60 = np.sin(6 * X60[:, 0])
    calls = []
    counted = lambda *a, **k: calls.append(1) or F.design_matrix(*a, **k)  # noqa: E731
    monkeypatch.setattr(blr_module, "design_matrix", counted)
    many = blr_module.DesignRows(phi, X60, t60)
    gram = many.gram
    assert many.Phi is None and len(calls) == 15  # 60 rows, 4 a block, one pass
    Phi = phi(X60)
    np.testing.assert_allclose(gram, Phi.T @ Phi, rtol=1e-12, atol=1e-12)
    # the statistics of the evidence Op, from ΦᵀΦ and Φᵀt of the same pass (no second pass): SᵀS = ΦᵀΦ, Sᵀc = Φᵀt,
    # ‖c‖² + ρ² = tᵀt, and ρ² the least-squares residual (round-off of 60-term sums in another order; bar 1e-10 relative;
    # ρ² through tᵀt − ‖c‖², bar 1e-6)
    S, c, rr = many.r_factor
    np.testing.assert_allclose(S.T @ S, Phi.T @ Phi, rtol=1e-10, atol=1e-10 * np.abs(Phi.T @ Phi).max())
    np.testing.assert_allclose(S.T @ c, Phi.T @ t60, rtol=1e-10, atol=1e-10 * np.abs(Phi.T @ t60).max())
    np.testing.assert_allclose(c @ c + rr, t60 @ t60, rtol=1e-12)
    residual = t60 - Phi @ np.linalg.lstsq(Phi, t60, rcond=None)[0]
    np.testing.assert_allclose(rr, residual @ residual, rtol=1e-6, atol=1e-12 * (t60 @ t60))


def test_a_streamed_design_whose_gram_is_singular_gets_its_r_factor_by_blocks(monkeypatch):
    """Features [1, x₁, x₂] of inputs with x₁ = x₂ on 60 points, streamed 4 rows a block: ΦᵀΦ is singular (potrf fails), so the R factor of
    [Φ | t] is accumulated over the blocks in a second pass (TSQR). Past Φ's rank R is not unique, but Φ = QS, c = Qᵀt
    and ρ² = ‖t − QQᵀt‖² hold for its Q: SᵀS = ΦᵀΦ, Sᵀc = Φᵀt, ‖c‖² + ρ² = tᵀt (bar 1e-12 of the largest entry), and
    the evidence from them equals scipy's density of the 60 × 60 covariance (bar 1e-12 relative)."""
    from bayeskern._weight_space_evidence import _evidence_and_gradients_scipy

    from bayeskern import blr as blr_module

    monkeypatch.setattr(blr_module, "BLOCK_ENTRIES", 12)
    X = np.repeat(np.linspace(0, 1, 60)[:, None], 2, axis=1)
    t = np.sin(6 * X[:, 0]) + 3.0
    phi = F.Polynomial(1)
    rows = blr_module.DesignRows(phi, X, t)
    assert rows.Phi is None
    with pytest.raises(np.linalg.LinAlgError):  # the case: ΦᵀΦ's Cholesky fails, the R factor comes from the blocks
        np.linalg.cholesky(rows.gram)
    S, c, rr = rows.r_factor
    Phi = F.design_matrix(phi, X)
    np.testing.assert_allclose(S.T @ S, Phi.T @ Phi, atol=1e-12 * np.abs(Phi.T @ Phi).max())
    np.testing.assert_allclose(S.T @ c, Phi.T @ t, atol=1e-12 * np.abs(Phi.T @ t).max())
    np.testing.assert_allclose(c @ c + rr, t @ t, rtol=1e-12)
    v = np.array([0.7, 1.1, 0.4])
    dense = multivariate_normal(np.zeros(60), (Phi * v) @ Phi.T + 0.09 * np.eye(60)).logpdf(t)
    np.testing.assert_allclose(_evidence_and_gradients_scipy(S, c, rr, 60.0, v, 0.09)[0], dense, rtol=1e-12)


def test_many_features_on_few_points_need_no_m_by_m_matrix():
    """30 points, M = 15 000 random Fourier features: B (M × M) would take 1.8 GB; the n × n route holds Φ (3.6 MB)
    and ΨΨᵀ. The posterior predictive and evidence equal the 30 × 30 numpy formulas (C = ΦΦᵀ + σ²I, cond ≈ 4e2:
    round-off ~1e-12, bars 1e-9), with a tracemalloc peak under 100 MB."""
    import tracemalloc

    X, t = bk.datasets.sinusoid(30, 0.2, 5)
    Xs = np.linspace(0, 1, 11)[:, None]
    phi = F.RandomFourier(15000, 0.3, input_dim=1, seed=0)
    Phi, Phi_new = phi(X), phi(Xs)
    tracemalloc.start()
    try:
        solver = bk.blr.condition(phi, X, t, sigma=0.2, prior_cov=1.0)
        p = solver.predict(Xs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak / 2**20
    C = Phi @ Phi.T + 0.04 * np.eye(30)
    k = Phi_new @ Phi.T
    np.testing.assert_allclose(p.mean, k @ np.linalg.solve(C, t), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(p.var, np.sum(Phi_new**2, axis=1) - np.sum(k * np.linalg.solve(C, k.T).T, axis=1), rtol=1e-9, atol=1e-11)
    assert solver.log_marginal_likelihood == pytest.approx(multivariate_normal(np.zeros(30), C).logpdf(t), rel=1e-9)


def test_blr_equals_gp_with_the_feature_kernel():
    """The kernel trick: BLR with (φ, Σ) and the GP with k = φᵀΣφ give one predictive distribution."""
    X, t, Xs = _data()
    phi = F.GaussianBasis(np.linspace(0, 1, 5), 0.2, bias=True)
    S = np.diag([1.0, 2.0, 0.5, 1.5, 0.7, 1.2]) + 0.05
    blr = bk.blr.posterior(phi, X, t, sigma=0.2, prior_cov=S, Xnew=Xs)
    gp = bk.gp.posterior(bk.kernels.FeatureKernel(phi, S), X, t, sigma=0.2, Xnew=Xs)
    np.testing.assert_allclose(blr.mean, gp.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(blr.cov, gp.cov, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(blr.log_marginal_likelihood, gp.log_marginal_likelihood, rtol=1e-10)


def test_collapsed_model_logp_equals_evidence():
    X, t, _ = _data()
    phi, sigma = F.Polynomial(3), 0.3
    with pm.Model() as fixed:
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=S4, sigma=sigma, collapsed=True)
    evidence = bk.blr.posterior(phi, X, t, sigma=sigma, prior_cov=S4).log_marginal_likelihood
    np.testing.assert_allclose(fixed.compile_logp()({}), evidence, rtol=1e-12)

    with pm.Model() as hier:  # an overall prior scale and the noise as random variables
        scale = pm.HalfNormal("scale", 2.0)
        s = pm.HalfNormal("s", 1.0)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=scale * S4, sigma=s, collapsed=True)
    point = {"scale_log__": np.log(1.7), "s_log__": np.log(0.2)}
    expected = bk.blr.posterior(phi, X, t, sigma=0.2, prior_cov=1.7 * S4).log_marginal_likelihood
    np.testing.assert_allclose(hier.compile_logp(vars=[hier["y"]])(point), expected, rtol=1e-12)

    with pm.Model() as scalar:  # Σ = α⁻¹I with α random
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=1 / alpha, sigma=0.3, collapsed=True)
    expected = bk.blr.posterior(phi, X, t, sigma=0.3, prior_cov=1 / 2.5).log_marginal_likelihood
    np.testing.assert_allclose(scalar.compile_logp(vars=[scalar["y"]])({"alpha_log__": np.log(2.5)}), expected, rtol=1e-12)


@pytest.mark.parametrize("n", [4, 5, 9])
def test_collapsed_model_with_a_diagonal_prior_equals_the_solvers_evidence_down_to_n_equal_m(n):
    """A vector Σ (diagonal) random variable, M = 4 monomials, n = 4 (t in Φ's span: ρ = 0), 5 and 9 points: the
    weight-space evidence Op on the R factor of [Φ | t] equals the solver's evidence (two routes, ~1e-14 relative; bar
    1e-12), and PyMC's compiled graph holds the Op and no QR (constant-folded with the data: nothing for Numba to
    compile but the Op)."""
    from bayeskern._weight_space_evidence import WeightSpaceEvidence

    X = np.linspace(-1, 1, n)[:, None]
    t = np.sin(3 * X[:, 0]) + 0.1 * np.cos(7 * X[:, 0])
    phi = F.Polynomial(3)
    with pm.Model() as model:
        v = pm.HalfNormal("v", 1.0, shape=4)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=v, sigma=0.3, collapsed=True)
    values = np.array([0.5, 2.0, 0.1, 1.3])
    expected = bk.blr.posterior(phi, X, t, sigma=0.3, prior_cov=values).log_marginal_likelihood
    fn = model.compile_logp(vars=[model["y"]])
    np.testing.assert_allclose(fn({"v_log__": np.log(values)}), expected, rtol=1e-12)
    ops = [type(node.op) for node in fn.f.maker.fgraph.toposort()]
    assert WeightSpaceEvidence in ops and not any("QR" in op.__name__ for op in ops)


def test_collapsed_model_with_a_random_covariance_matrix_is_the_evidence_op_with_its_gradient():
    """Σ = LLᵀ + 0.1·I with L the lower triangle of a 4 × 4 random variable, n = 15 ≥ M = 4: PyMC's compiled graph holds
    the weight-space evidence Op on Σ itself (no Cholesky or QR left to compile: the QR is constant-folded with the data);
    its value equals the solver's evidence (two routes: ~1e-14 relative, bar 1e-12), and its gradient in L's 16 entries
    central differences of the solver's evidence (h = 1e-6: truncation and round-off ~1e-8, bar 1e-6; the upper
    triangle's entries, which Σ does not read, are 0)."""
    from bayeskern._compile import numpy_function
    from bayeskern._weight_space_evidence import WeightSpaceEvidence

    X, t, _ = _data()
    phi = F.Polynomial(3)
    sigma_of = lambda L: np.tril(L) @ np.tril(L).T + 0.1 * np.eye(4)  # noqa: E731
    with pm.Model() as model:
        L = pm.Normal("L", 0.0, 1.0, shape=(4, 4))
        Lt = pt.tril(L)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=Lt @ Lt.T + 0.1 * pt.eye(4), sigma=0.3, collapsed=True)
    logp = model.logp(vars=[model["y"]])
    f = numpy_function(model.value_vars, [logp, pt.grad(logp, model.value_vars[0])])
    ops = [type(node.op).__name__ for node in f.maker.fgraph.toposort()]
    assert "WeightSpaceEvidence" in ops and not any("Cholesky" in op or "QR" in op for op in ops)
    assert any(isinstance(node.op, WeightSpaceEvidence) and node.op.matrix for node in f.maker.fgraph.apply_nodes)
    L0 = np.array([[1.0, 0.0, 0.0, 0.0], [0.3, 0.8, 0.0, 0.0], [-0.2, 0.1, 0.6, 0.0], [0.05, 0.2, -0.1, 0.5]])
    L0 = L0 + np.triu(np.full((4, 4), 7.0), 1)  # entries Σ does not read
    value, grad = f(L0)
    evidence = lambda L: bk.blr.condition(phi, X, t, sigma=0.3, prior_cov=sigma_of(L)).log_marginal_likelihood  # noqa: E731
    np.testing.assert_allclose(value, evidence(L0), rtol=1e-12)
    h, numeric = 1e-6, np.empty((4, 4))
    for i in range(4):
        for j in range(4):
            e = h * np.outer(np.eye(4)[i], np.eye(4)[j])
            numeric[i, j] = (evidence(L0 + e) - evidence(L0 - e)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(np.triu(grad, 1), 0.0)


@pytest.mark.parametrize("n", [6, 15])
def test_collapsed_model_reads_a_matrix_prior_from_its_lower_triangle_on_both_routes(n):
    """n = 6 < M = 9 (the n × n covariance) and n = 15 ≥ M (the weight-space evidence Op): Σ with 0.5 added above its
    diagonal gives the log density of Σ itself, the solver's evidence (two routes to one number: ~1e-14 relative, bar
    1e-12), as a Cholesky factor of Σ reads it; in numpy, nothing compiled."""
    from bayeskern._compile import numpy_function

    X, t = bk.datasets.sinusoid(n, 0.25, 2)
    phi = F.GaussianBasis(np.linspace(0, 1, 9), 0.2)
    A = np.random.default_rng(3).standard_normal((9, 9))
    S9 = A @ A.T / 9 + 0.1 * np.eye(9)
    Sv = pt.matrix("Sigma")
    with pm.Model() as model:
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=Sv, sigma=0.3, collapsed=True)
    f = numpy_function([Sv], model.logp(vars=[model["y"]]))
    expected = bk.blr.condition(phi, X, t, sigma=0.3, prior_cov=S9).log_marginal_likelihood
    np.testing.assert_allclose(f(S9), expected, rtol=1e-12)
    np.testing.assert_allclose(f(S9 + np.triu(np.full((9, 9), 0.5), 1)), expected, rtol=1e-12)


@pytest.mark.parametrize("kind", ["scalar", "matrix"])
def test_collapsed_model_with_more_features_than_points_is_the_n_by_n_evidence(kind):
    """n = 15 < M = 25: the collapsed likelihood is log N(t | 0, ΦΣΦᵀ + σ²I) through the marginal Gaussian's Op on the
    15 × 15 covariance, not the 25 × 25 B. Its value equals the solver's evidence (two routes to one number: ~1e-14
    relative, bar 1e-12), its gradient in (log scale, log σ) central differences (h = 1e-6: truncation and round-off
    ~1e-8 relative, bar 1e-6). Evaluated in numpy: no compilation."""
    from bayeskern._compile import numpy_function
    from bayeskern._gaussian_logp import GaussianLogp

    X, t, _ = _data()
    phi, S25 = _many_features()
    base = 1.0 if kind == "scalar" else S25
    with pm.Model() as model:
        scale, s = pm.HalfNormal("scale", 2.0), pm.HalfNormal("s", 1.0)
        bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=scale * base, sigma=s, collapsed=True)
    logp = model.logp(vars=[model["y"]])
    f = numpy_function(model.value_vars, [logp, *pt.grad(logp, model.value_vars)])
    ops = [n.op for n in f.maker.fgraph.apply_nodes]
    assert any(isinstance(op, GaussianLogp) for op in ops)
    z = np.array([np.log(1.7), np.log(0.2)])
    value, *grad = f(*z)
    expected = bk.blr.condition(phi, X, t, sigma=0.2, prior_cov=1.7 * base).log_marginal_likelihood
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    h = 1e-6
    for i in range(2):
        step = np.eye(2)[i] * h
        np.testing.assert_allclose(grad[i], (f(*(z + step))[0] - f(*(z - step))[0]) / (2 * h), rtol=1e-6)


def test_explicit_weights_model_logp_is_prior_plus_likelihood():
    X, t, _ = _data()
    phi, sigma = F.Polynomial(3), 0.3
    Phi = ref.poly_features_1d(X, 3)
    w = np.array([0.1, 5.0, -14.0, 9.0])
    for S, prior in [(S4, multivariate_normal(np.zeros(4), S4).logpdf(w)), (0.5, norm(0, np.sqrt(0.5)).logpdf(w).sum())]:
        with pm.Model() as model:
            bk.blr.likelihood("y", X=X, y=t, features=phi, prior_cov=S, sigma=sigma)
        expected = prior + norm(Phi @ w, sigma).logpdf(t).sum()
        np.testing.assert_allclose(model.compile_logp()({"y_weights": w}), expected, rtol=1e-12)


def test_collapsed_prior_predictive_has_the_marginal_covariance():
    """Draws of t from the collapsed model: sample covariance within 5 Monte Carlo standard errors of ΦΣΦᵀ + σ²I."""
    X = np.linspace(0, 1, 4)[:, None]
    phi, sigma, n = F.Polynomial(2), 0.3, 20000
    S = np.array([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 0.8]])
    with pm.Model():
        y = bk.blr.likelihood("y", X=X, y=np.zeros(4), features=phi, prior_cov=S, sigma=sigma, collapsed=True)
        draws = pm.draw(y, draws=n, random_seed=1)
    Phi = ref.poly_features_1d(X, 2)
    C = Phi @ S @ Phi.T + sigma**2 * np.eye(4)
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C**2) / n)
    assert np.all(np.abs(draws.T @ draws / n - C) <= 5 * se)


def test_bad_input_gets_named_errors():
    X, t, _ = _data()
    phi = F.Polynomial(2)
    post = bk.blr.posterior
    with pytest.raises(ValueError, match="prior_cov is not symmetric"):
        post(phi, X, t, 0.1, [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="prior_cov is not positive definite"):
        post(phi, X, t, 0.1, [[1, 2, 0], [2, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="prior_cov must be positive"):
        post(phi, X, t, 0.1, -1.0)
    with pytest.raises(ValueError, match="prior_cov must be positive"):
        post(phi, X, t, 0.1, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="prior_cov has 2 rows but the feature map gives M=3"):
        post(phi, X, t, 0.1, np.eye(2))
    with pytest.raises(ValueError, match="prior_cov must be a square matrix"):
        post(phi, X, t, 0.1, np.ones((3, 2)))
    with pytest.raises(ValueError, match="sigma must be positive"):
        post(phi, X, t, 0.0, 1.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        post(phi, np.r_[X[:-1], [[np.nan]]], t, 0.1, 1.0)
    with pytest.raises(ValueError, match="y contains NaN"):
        post(phi, X, np.r_[t[:-1], np.nan], 0.1, 1.0)
    with pytest.raises(ValueError, match="y has 14 entries but X has 15 rows"):
        post(phi, X, t[:-1], 0.1, 1.0)
    with pytest.raises(ValueError, match="X is empty"):
        post(phi, np.zeros((0, 1)), [], 0.1, 1.0)
    with pytest.raises(ValueError, match="Xnew has 2 column"):
        post(phi, X, t, 0.1, 1.0, Xnew=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="features must be a feature map or a callable"):
        post("poly", X, t, 0.1, 1.0)
    with pm.Model():
        with pytest.raises(ValueError, match="prior_cov has 2 rows"):
            bk.blr.likelihood("y", X, t, phi, np.eye(2), 0.1)
        with pytest.raises(ValueError, match="sigma must be positive"):
            bk.blr.likelihood("y", X, t, phi, 1.0, -0.1)
