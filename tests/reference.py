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


def blr_posterior(Phi, t, sigma, S, Phi_new):
    """PRML 3.53–3.54, 3.58–3.59 with explicit inverses, and the evidence log N(t | 0, ΦSΦᵀ + σ²I)."""
    SN = np.linalg.inv(np.linalg.inv(S) + Phi.T @ Phi / sigma**2)
    mN = SN @ Phi.T @ t / sigma**2
    lml = multivariate_normal(np.zeros(len(t)), Phi @ S @ Phi.T + sigma**2 * np.eye(len(t))).logpdf(t)
    return mN, SN, Phi_new @ mN, Phi_new @ SN @ Phi_new.T, lml
