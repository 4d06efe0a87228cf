"""Independent numpy references, written from the formulas (not from bayeskern's code)."""

from itertools import product

import numpy as np
from scipy.special import expit
from scipy.stats import multivariate_normal


def sqdist(A, B):
    """‖a − b‖² by direct differences, (n, m)."""
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def rbf(A, B, ls):
    """exp(−½ Σⱼ (aⱼ − bⱼ)²/ℓⱼ²)."""
    ls = np.broadcast_to(np.asarray(ls, float), (A.shape[1],))
    return np.exp(-0.5 * sqdist(A / ls, B / ls))


def matern(A, B, nu, ls):
    """Matérn ν ∈ {½, 3/2, 5/2} in r/ℓ, r = ‖a − b‖."""
    u = np.sqrt(sqdist(A, B)) / ls
    if nu == 0.5:
        return np.exp(-u)
    if nu == 1.5:
        return (1 + np.sqrt(3) * u) * np.exp(-np.sqrt(3) * u)
    return (1 + np.sqrt(5) * u + 5 * u**2 / 3) * np.exp(-np.sqrt(5) * u)


def rational_quadratic(A, B, alpha, ls):
    return (1 + sqdist(A, B) / (2 * alpha * ls**2)) ** (-alpha)


def periodic(A, B, period, ls):
    """exp(−½ Σⱼ sin²(π(aⱼ − bⱼ)/T)/ℓ²)."""
    s = np.sin(np.pi * (A[:, None, :] - B[None, :, :]) / period)
    return np.exp(-0.5 * (s**2).sum(-1) / ls**2)


def mahalanobis_rbf(A, B, cov):
    """exp(−½ (a − b)ᵀ Σ⁻¹ (a − b))."""
    P = np.linalg.inv(cov)
    D = A[:, None, :] - B[None, :, :]
    return np.exp(-0.5 * np.einsum("nmi,ij,nmj->nm", D, P, D))


def linear(A, B):
    return A @ B.T


def polynomial(A, B, degree, c):
    return (A @ B.T + c) ** degree


def constant(A, B, c):
    return np.full((len(A), len(B)), float(c))


def white(A, B, sigma, same):
    return sigma**2 * np.eye(len(A)) if same else np.zeros((len(A), len(B)))


def prml(A, B, t0, t1, t2, t3):
    """θ0·exp(−θ1/2‖a − b‖²) + θ2 + θ3·aᵀb   (PRML 6.63)."""
    return t0 * np.exp(-0.5 * t1 * sqdist(A, B)) + t2 + t3 * A @ B.T


# -- feature maps ---------------------------------------------------------------------------------
def poly_features_1d(x, degree):
    return np.asarray(x, float).reshape(-1, 1) ** np.arange(degree + 1)


def poly_features(X, degree):
    """Every monomial of total degree ≤ M, as a set of columns (order-free comparison)."""
    d = X.shape[1]
    cols = [np.prod(X**np.array(e), axis=1) for e in product(range(degree + 1), repeat=d) if sum(e) <= degree]
    return np.column_stack(cols)


def gaussian_features(X, centers, s):
    C = np.asarray(centers, float).reshape(len(centers), -1)
    return np.exp(-sqdist(X, C) / (2 * s**2))


def sigmoid_features(x, centers, s):
    return expit((np.asarray(x).reshape(-1, 1) - np.asarray(centers).reshape(1, -1)) / s)


def fourier_features(x, order, period):
    x = np.asarray(x, float).ravel()
    cols = [np.ones_like(x)]
    for k in range(1, order + 1):
        cols += [np.cos(2 * np.pi * k * x / period), np.sin(2 * np.pi * k * x / period)]
    return np.column_stack(cols)


# -- posteriors -------------------------------------------------------------------------------
def gp_posterior(K, Ks, Kss, t, sigma):
    """PRML 6.66–6.67 with plain solves: mean kᵀC⁻¹t, cov K** − kᵀC⁻¹k, and log N(t | 0, C)."""
    C = K + sigma**2 * np.eye(len(K))
    mean = Ks.T @ np.linalg.solve(C, t)
    cov = Kss - Ks.T @ np.linalg.solve(C, Ks)
    lml = multivariate_normal(np.zeros(len(t)), C).logpdf(t)
    return mean, cov, lml


def gp_loo(C: np.ndarray, t: np.ndarray):
    """numpy, from R&W 5.12: μᵢ = tᵢ − [C⁻¹t]ᵢ/[C⁻¹]ᵢᵢ, σᵢ² = 1/[C⁻¹]ᵢᵢ, and log N(tᵢ | μᵢ, σᵢ²)."""
    Ci = np.linalg.inv(C)
    d, a = np.diag(Ci), Ci @ t
    mean, var = t - a / d, 1 / d
    return mean, var, -0.5 * np.log(2 * np.pi * var) - 0.5 * (t - mean) ** 2 / var


def blr_posterior(Phi, t, sigma, S, Phi_new):
    """PRML 3.53–3.54, 3.58–3.59 with explicit inverses, and the evidence log N(t | 0, ΦSΦᵀ + σ²I)."""
    SN = np.linalg.inv(np.linalg.inv(S) + Phi.T @ Phi / sigma**2)
    mN = SN @ Phi.T @ t / sigma**2
    lml = multivariate_normal(np.zeros(len(t)), Phi @ S @ Phi.T + sigma**2 * np.eye(len(t))).logpdf(t)
    return mN, SN, Phi_new @ mN, Phi_new @ SN @ Phi_new.T, lml


# -- the kernel zoo (issue 6) -------------------------------------------------------------------
def _angles(A, B):
    """θ between rows by Kahan's θ = 2·atan2(‖u − v‖, ‖u + v‖) on unit vectors (accurate near 0 and π);
    θ = π/2 where a row is zero (cos θ := 0)."""
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    U = np.divide(A, na[:, None], out=np.zeros_like(A), where=na[:, None] > 0)
    V = np.divide(B, nb[:, None], out=np.zeros_like(B), where=nb[:, None] > 0)
    diff = np.linalg.norm(U[:, None, :] - V[None, :, :], axis=-1)
    summ = np.linalg.norm(U[:, None, :] + V[None, :, :], axis=-1)
    theta = 2 * np.arctan2(diff, summ)
    zero = (na[:, None] == 0) | (nb[None, :] == 0)
    return np.where(zero, np.pi / 2, theta), na, nb


def arccosine(A, B, order):
    """Cho & Saul (2009) eq. 1, 4–6: (1/π)‖a‖ⁿ‖b‖ⁿ J_n(θ)."""
    t, na, nb = _angles(A, B)
    J = {
        0: np.pi - t,
        1: np.sin(t) + (np.pi - t) * np.cos(t),
        2: 3 * np.sin(t) * np.cos(t) + (np.pi - t) * (1 + 2 * np.cos(t) ** 2),
    }[order]
    return np.outer(na, nb) ** order * J / np.pi


def relu_network_kernels(A, B, depth, sw2, sb2):
    """(NNGP, NTK) of a ReLU net with `depth` hidden layers, written entry by entry (Arora et al. 2019, eq. 4–6)."""
    d = A.shape[1]
    nngp, ntk = np.empty((len(A), len(B))), np.empty((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            saa, sbb, sab = sb2 + sw2 * a @ a / d, sb2 + sw2 * b @ b / d, sb2 + sw2 * a @ b / d
            th = sab
            for _ in range(depth):
                c = 0.0 if saa * sbb == 0 else np.clip(sab / np.sqrt(saa * sbb), -1, 1)
                t = np.arccos(c)
                new_ab = sb2 + sw2 * np.sqrt(saa * sbb) * (np.sin(t) + (np.pi - t) * np.cos(t)) / (2 * np.pi)
                th = new_ab + sw2 * th * (np.pi - t) / (2 * np.pi)
                saa, sbb, sab = sb2 + sw2 * saa / 2, sb2 + sw2 * sbb / 2, new_ab
            nngp[i, j], ntk[i, j] = sab, th
    return nngp, ntk


def sigmoid(A, B, a, b):
    return np.tanh(a * A @ B.T + b)


def boxcar(A, B, h):
    return (np.sqrt(sqdist(A, B)) <= h).astype(float)


def probability_product(A, B, rho, var):
    """Jebara et al. (2004): per dimension ∫ N(z; a, σ²)^ρ N(z; b, σ²)^ρ dz, completed square, multiplied."""
    var = np.broadcast_to(np.asarray(var, float), (A.shape[1],))
    out = np.ones((len(A), len(B)))
    for j, v in enumerate(var):
        D = A[:, j][:, None] - B[:, j][None, :]
        out *= (2 * np.pi * v) ** (-rho) * np.sqrt(np.pi * v / rho) * np.exp(-rho * D**2 / (4 * v))
    return out


def mixture(A, B, means, scales, weights):
    """Σᵢ p(a|i) p(b|i) p(i) with p(·|i) = N(mᵢ, diag(sᵢ²)), densities from scipy."""
    means = np.asarray(means, float).reshape(len(weights), -1)
    scales = np.broadcast_to(np.asarray(scales, float).reshape(-1, 1) if np.ndim(scales) == 1 else scales, means.shape)
    pa = np.column_stack([multivariate_normal(m, np.diag(s**2)).pdf(A).reshape(-1) for m, s in zip(means, scales)])
    pb = np.column_stack([multivariate_normal(m, np.diag(s**2)).pdf(B).reshape(-1) for m, s in zip(means, scales)])
    return (pa * weights) @ pb.T


def set_intersection(A, B):
    """2^|a ∩ b| by counting common members of the indicator vectors."""
    return np.array([[2.0 ** np.sum(np.logical_and(a != 0, b != 0)) for b in B] for a in A])
