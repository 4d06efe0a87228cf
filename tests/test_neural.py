"""NNGP and NTK kernels against random and trained finite ReLU networks in numpy; the NTK training dynamics.

The networks follow the kernels' convention exactly (bayeskern.kernels.neural): NTK parameterisation,
every weight and bias N(0, 1), h¹ = σ_w/√d·W¹x + σ_b·b¹, hˡ⁺¹ = σ_w/√n·Wˡ⁺¹relu(hˡ) + σ_b·bˡ⁺¹, and a
linear readout with a bias, f = σ_w/√n·vᵀrelu(hᴸ) + σ_b·c.
"""

import numpy as np
import pytest
import scipy.linalg

import bayeskern as bk
from bayeskern import kernels as K

SW2, SB2 = 2.0, 0.1  # σ_w², σ_b²
SW, SB = np.sqrt(SW2), np.sqrt(SB2)
X4 = np.array([[1.0, 0.0, 0.5], [0.2, 1.0, -0.4], [-0.8, 0.3, 0.6], [0.5, -0.5, -1.0]])


def _relu(h):
    return np.maximum(h, 0.0)


def _init(rng, d, width, depth):
    return {
        "W": [rng.standard_normal((width, d))] + [rng.standard_normal((width, width)) for _ in range(depth - 1)],
        "b": [rng.standard_normal(width) for _ in range(depth)],
        "v": rng.standard_normal(width),
        "c": rng.standard_normal(),
    }


def _forward(p, X):
    """Hidden pre-activations [h¹ … hᴸ] (each (N, n)), layer inputs [x, relu(h¹), …], and f (N,)."""
    hs, inputs, A = [], [X], X
    for W, b in zip(p["W"], p["b"]):
        h = SW / np.sqrt(A.shape[1]) * A @ W.T + SB * b
        hs.append(h)
        A = _relu(h)
        inputs.append(A)
    f = SW / np.sqrt(A.shape[1]) * A @ p["v"] + SB * p["c"]
    return hs, inputs, f


def _deltas(p, hs, inputs):
    """∂f(xᵢ)/∂hˡ for every input and layer: a list of (N, n), by backpropagation."""
    n = hs[-1].shape[1]
    D = [None] * len(hs)
    D[-1] = SW / np.sqrt(n) * p["v"][None, :] * (hs[-1] > 0)
    for l in range(len(hs) - 1, 0, -1):
        D[l - 1] = SW / np.sqrt(inputs[l].shape[1]) * (D[l] @ p["W"][l]) * (hs[l - 1] > 0)
    return D


def _empirical_kernels(p, X):
    """The finite network's NNGP given its hidden weights, σ_b² + σ_w²/n·relu(hᴸ)relu(hᴸ)ᵀ (the exact
    covariance over the readout weights), and its empirical NTK Σ_θ ∂f(x)/∂θ ∂f(x′)/∂θ."""
    hs, inputs, _ = _forward(p, X)
    A = inputs[-1]
    nngp = SB2 + SW2 / A.shape[1] * A @ A.T
    ntk = nngp.copy()  # the readout's v and c
    for D, A_in in zip(_deltas(p, hs, inputs), inputs[:-1]):
        ntk += (D @ D.T) * (SW2 / A_in.shape[1] * A_in @ A_in.T + SB2)  # Wˡ and bˡ
    return nngp, ntk


def _gradient_step(p, X, y, eta):
    """θ ← θ − η∇θ L, L = (1/N) Σᵢ ½(f(xᵢ) − yᵢ)², one step of full-batch gradient descent."""
    hs, inputs, f = _forward(p, X)
    R = (f - y) / len(X)  # ∂L/∂fᵢ
    n = inputs[-1].shape[1]
    D = [R[:, None] * Dl for Dl in _deltas(p, hs, inputs)]
    p["v"] -= eta * SW / np.sqrt(n) * inputs[-1].T @ R
    p["c"] -= eta * SB * R.sum()
    for l, (Dl, A_in) in enumerate(zip(D, inputs[:-1])):
        p["W"][l] -= eta * SW / np.sqrt(A_in.shape[1]) * Dl.T @ A_in
        p["b"][l] -= eta * SB * Dl.sum(axis=0)


# -- the NNGP against random networks ---------------------------------------------------------------
def test_nngp_is_the_output_covariance_of_many_random_networks():
    """Depth 1: E[f(x)f(x′)] over random networks is the NNGP at any width (the hidden units are iid).
    40 000 networks of width 30: every entry of the sample second moment within 5 standard errors."""
    rng = np.random.default_rng(0)
    M, n, d = 40_000, 30, X4.shape[1]
    W, b = rng.standard_normal((M, n, d)), rng.standard_normal((M, n))
    v, c = rng.standard_normal((M, n)), rng.standard_normal(M)
    H = SW / np.sqrt(d) * np.einsum("mnd,id->min", W, X4) + SB * b[:, None, :]  # (M, 4, n)
    f = SW / np.sqrt(n) * np.einsum("min,mn->mi", _relu(H), v) + SB * c[:, None]  # (M, 4)
    products = f[:, :, None] * f[:, None, :]
    se = products.std(axis=0) / np.sqrt(M)
    assert np.all(np.abs(products.mean(axis=0) - K.NNGP(1, SW2, SB2).evaluate(X4)) < 5 * se)


def test_nngp_and_ntk_of_finite_networks_converge_like_one_over_sqrt_width():
    """Depth 2, widths 64 … 4096 (16, 16, 8, 3 networks): the relative Frobenius error of the network's
    NNGP (given its hidden weights) and of its empirical NTK against the analytic kernels. A log-log
    fit of error against width must have slope in [−0.8, −0.2] (CLT: −½), and at width 4096 the
    mean error must be below 0.06 (NNGP) and 0.08 (NTK)."""
    rng = np.random.default_rng(1)
    widths, repeats = [64, 256, 1024, 4096], [16, 16, 8, 3]  # (seen: NNGP 0.25 … 0.04, NTK 0.20 … 0.04)
    nngp, ntk = K.NNGP(2, SW2, SB2).evaluate(X4), K.NTK(2, SW2, SB2).evaluate(X4)
    err_nngp, err_ntk = [], []
    for n, r in zip(widths, repeats):
        e1, e2 = [], []
        for _ in range(r):
            k1, k2 = _empirical_kernels(_init(rng, X4.shape[1], n, 2), X4)
            e1.append(np.linalg.norm(k1 - nngp) / np.linalg.norm(nngp))
            e2.append(np.linalg.norm(k2 - ntk) / np.linalg.norm(ntk))
        err_nngp.append(np.mean(e1))
        err_ntk.append(np.mean(e2))
    for errors, tol in [(err_nngp, 0.06), (err_ntk, 0.08)]:
        slope = np.polyfit(np.log(widths), np.log(errors), 1)[0]
        assert -0.8 <= slope <= -0.2, (slope, errors)
        assert errors[-1] < tol, errors


# -- the NTK training dynamics ----------------------------------------------------------------------
def _dynamics_data():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (5, 2))
    return X, np.sin(2 * X[:, 0]) + X[:, 1], rng.uniform(-1, 1, (3, 2))


def test_dynamics_against_matrix_exponential():
    """f(x; θ_t) = f₀(x) − K(x, X)K⁻¹(I − e^{−ηKt/N})(f₀(X) − Y) with scipy's expm and solve; rtol 1e-10."""
    X, y, Xs = _dynamics_data()
    kernel = K.NTK(2, SW2, SB2)
    f0, f0s = np.array([0.3, -0.2, 0.1, 0.0, 0.5]), np.array([0.2, -0.1, 0.4])
    eta, times = 0.7, np.array([0.0, 1.0, 10.0, 1e4])
    res = bk.ntk.dynamics(kernel, X, y, Xs, eta, times, f0=f0, f0_new=f0s)
    Kx, Ks = kernel.evaluate(X), kernel.evaluate(Xs, X)
    for i, t in enumerate(times):
        E = scipy.linalg.expm(-eta * Kx * t / len(X))
        np.testing.assert_allclose(res.mean[i], f0s - Ks @ np.linalg.solve(Kx, (np.eye(5) - E) @ (f0 - y)), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(res.train[i], y + E @ (f0 - y), rtol=1e-10, atol=1e-12)
    lam = np.linalg.eigvalsh(Kx)
    np.testing.assert_allclose(res.rates, 1 - np.exp(-eta * np.outer(times, lam) / 5), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.mean[0], f0s, atol=1e-14)  # t = 0: the initial network
    np.testing.assert_allclose(res.limit, f0s - Ks @ np.linalg.solve(Kx, f0 - y), rtol=1e-10)
    np.testing.assert_allclose(res.mean[-1], res.limit, rtol=1e-8)  # t → ∞: kernel regression from f₀
    # the largest eigenvalue converges first
    assert np.all(np.diff(res.rates[1]) >= 0)


def test_dynamics_with_a_singular_kernel_needs_no_inverse():
    """A linear kernel on 4 points in 2-D has rank 2: the null directions never move (rate 0)."""
    X, Xs = np.random.default_rng(3).uniform(-1, 1, (4, 2)), np.array([[0.3, 0.1]])
    res = bk.ntk.dynamics(K.Linear(), X, np.ones(4), Xs, 0.5, [0.0, 5.0, 50.0])
    assert np.all(np.isfinite(res.mean)) and np.all(np.isfinite(res.limit))
    np.testing.assert_allclose(res.rates[:, :2], 0.0, atol=1e-12)


def test_the_limit_with_repeated_inputs_is_the_pseudo_inverse_one():
    """A review: with two training inputs repeated (different targets), K's null directions came out as +1e-16 and the
    t → ∞ limit multiplied round-off by 1e16 (off by up to 5). It is f₀(x) − K(x, X)K⁺(f₀(X) − Y), K⁺ numpy's pinv
    with a cut-off far above round-off (1e-10 relative: K's resolved eigenvalues here are ≥ 1e-3 of the largest), and
    the finite-time mean at t = 1e9 (every resolved mode settled) agrees."""
    kernel = K.NTK(2, 2.0, 0.1)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x0 = rng.uniform(-1, 1, 6)
        X = np.r_[x0, x0[:2]][:, None]
        y = np.r_[np.sin(3 * x0), np.sin(3 * x0[:2]) + 0.5]
        Xs = np.linspace(-1.5, 1.5, 5)[:, None]
        res = bk.ntk.dynamics(kernel, X, y, Xs, 1.0, [1e9])
        reference = kernel.evaluate(Xs, X) @ np.linalg.pinv(kernel.evaluate(X), rcond=1e-10, hermitian=True) @ y  # f₀ = 0
        np.testing.assert_allclose(res.limit, reference, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(res.mean[0], res.limit, rtol=1e-6, atol=1e-8)


def test_dynamics_names_bad_arguments():
    X, y, Xs = _dynamics_data()
    with pytest.raises(ValueError, match="eta must be positive"):
        bk.ntk.dynamics(K.NTK(1), X, y, Xs, 0.0, 1.0)
    with pytest.raises(ValueError, match="t must be non-negative"):
        bk.ntk.dynamics(K.NTK(1), X, y, Xs, 0.1, [-1.0])
    with pytest.raises(ValueError, match="f0 has 2 entries but X has 5 rows"):
        bk.ntk.dynamics(K.NTK(1), X, y, Xs, 0.1, 1.0, f0=[0.0, 1.0])
    with pytest.raises(ValueError, match="the kernel on X is not positive semi-definite"):
        bk.ntk.dynamics(K.Boxcar(0.7), np.array([0.0, 0.5, 1.0]), np.zeros(3), np.array([0.2]), 0.1, 1.0)


def test_trained_wide_network_approaches_the_ntk_closed_form():
    """One hidden layer (depth 1), full-batch gradient descent with step η for T steps (time T), on 5
    points; test outputs at 3 points and 3 times against the closed form with the analytic NTK and the
    network's own f₀. The error (max over points and times, relative to max|y|, mean over 3 networks)
    at widths 256, 1024, 8192 must fall at each step and end below 0.03 (seen: about 0.03, 0.02, 0.005)."""
    X, y, Xs = _dynamics_data()
    kernel = K.NTK(1, SW2, SB2)
    lam_max = np.linalg.eigvalsh(kernel.evaluate(X))[-1]
    eta = 0.02 * len(X) / lam_max  # ηλmax/N = 0.02: Euler steps follow the gradient flow closely
    T = 2000
    checkpoints = [T // 4, T // 2, T]
    errors = []
    for n in (256, 1024, 8192):
        err = []
        for seed in range(3):
            p = _init(np.random.default_rng(100 + seed), X.shape[1], n, 1)
            _, _, f0 = _forward(p, X)
            _, _, f0s = _forward(p, Xs)
            closed = bk.ntk.dynamics(kernel, X, y, Xs, eta, checkpoints, f0=f0, f0_new=f0s).mean
            trained = []
            for step in range(1, T + 1):
                _gradient_step(p, X, y, eta)
                if step in checkpoints:
                    trained.append(_forward(p, Xs)[2])
            err.append(np.max(np.abs(np.array(trained) - closed)) / np.max(np.abs(y)))
        errors.append(np.mean(err))
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.03, errors


@pytest.mark.parametrize("kernel_class, depth", [(bk.kernels.NNGP, 1), (bk.kernels.NTK, 2)])  # (both recursions, both layers' √)
def test_a_zero_input_without_bias_has_a_finite_exact_gradient(kernel_class, depth):
    """x = 0 with σ_b² = 0 (the default): Σ(x, x) = 0 for every σ_w², and ∂/∂σ_w² of a weighted sum of K (full, lower
    triangle, cross, diagonal) equals central differences (to 1e-7 relative: their truncation and round-off at h = 1e-6).
    √ at 0 made it ∞·0 = NaN, and with it a GP's whole gradient on data containing x = 0."""
    import pytensor.tensor as pt
    from bayeskern._compile import numpy_function

    X = np.array([[0.0, 0.0], [0.5, -1.0], [1.5, 0.3]])
    W = np.random.default_rng(0).standard_normal((4, 3, 3))
    sw2 = pt.dscalar("sw2")
    k = kernel_class(depth, sw2, 0.0)
    parts = [pt.sum(W[0] * k.full(X)), pt.sum(W[1] * k.lower_triangle(X)), pt.sum(W[2][:, 1:] * k.full(X, X[1:])), pt.sum(W[3][0] * k.diag(X))]
    f = numpy_function([sw2], [*parts, *(pt.grad(part, sw2) for part in parts)])  # (one function: the suite's compile time)
    values, gradients = np.split(np.array(f(1.6)), 2)
    central = (np.array(f(1.6 + 1e-6)[:4]) - np.array(f(1.6 - 1e-6)[:4])) / 2e-6
    assert np.all(np.isfinite(gradients))
    np.testing.assert_allclose(gradients, central, rtol=1e-7)
