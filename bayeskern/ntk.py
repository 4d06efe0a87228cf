"""Training dynamics of infinitely wide networks: gradient flow under a neural tangent kernel, in closed form (seed 000)."""

from dataclasses import dataclass, field

import numpy as np

from bayeskern._linalg import psd_eigh, psd_tolerance
from bayeskern._validation import as_inputs, as_targets, check_finite_result, check_kernel, check_number, numerical_failure, same_columns
from bayeskern.kernels import Kernel

__all__ = ["NTKDynamics", "dynamics"]


@dataclass(frozen=True)
class NTKDynamics:
    """Network outputs along gradient flow, f(·; θ_t) for each time in `t`.

    `mean`: f(Xnew; θ_t), (T, m). `train`: f(X; θ_t), (T, N). `rates`: 1 − e^{−ηλᵢt/N}, (T, N), how far
    the training residual has converged along the eigenvector uᵢ of K (the largest λᵢ converge
    first). `eigenvalues`: λᵢ of K(X, X), ascending; `eigenvectors`: U, columns uᵢ. `limit`: f(Xnew; θ_∞)
    = f₀(Xnew) − K(Xnew, X)K⁻¹(f₀(X) − Y), the GP-like kernel regression from f₀.
    """

    t: np.ndarray
    mean: np.ndarray
    train: np.ndarray
    rates: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray = field(repr=False)
    limit: np.ndarray


@numerical_failure("the kernel's values on X or Xnew, or y, f0, f0_new, eta·t, overflow float64: scale or center X and y")
def dynamics(kernel: Kernel, X, y, Xnew, eta, t, f0=None, f0_new=None) -> NTKDynamics:
    """Outputs of a network trained by gradient flow on L = (1/N) Σᵢ ½(f(xᵢ) − yᵢ)², in the NTK limit.

    With K = K(X, X) = UΛUᵀ the (constant) NTK, r₀ = f₀(X) − Y and learning rate η:
        f(X; θ_t) = Y + U e^{−ηΛt/N} Uᵀ r₀
        f(x; θ_t) = f(x; θ₀) − K(x, X) U [(1 − e^{−ηΛt/N}) Λ⁻¹] Uᵀ r₀
                  = f(x; θ₀) − K(x, X) K⁻¹ (I − e^{−ηKt/N}) r₀,
    through the eigendecomposition, so a singular K needs no inverse: (1 − e^{−ηλt/N})/λ → ηt/N as
    λ → 0. Gradient descent with a small step η follows this flow: t steps of it take the time t (exactly only as η → 0).

    `kernel`: the NTK (e.g. `bayeskern.kernels.NTK`); any PSD kernel works. `X` (N, d), `y` (N,): the
    training data. `Xnew` (m, d): where to predict. `eta`: η > 0. `t`: times ≥ 0 (a scalar or a
    vector). `f0`, `f0_new`: the network's outputs at initialisation on X and Xnew (0 if not given —
    the mean over random initialisations).
    """
    kernel, X, Xnew = check_kernel(kernel), as_inputs(X, "X"), as_inputs(Xnew, "Xnew")
    same_columns(X, Xnew, "X", "Xnew")
    Y = as_targets(y, len(X), "y")
    eta = float(check_number(eta, "eta", positive=True, scalar=True))
    times = np.atleast_1d(check_number(t, "t", nonnegative=True)).astype(float)
    if times.ndim != 1:
        raise ValueError("t must be a scalar or a vector of times")
    f0 = np.zeros(len(X)) if f0 is None else as_targets(f0, len(X), "f0")
    f0_new = np.zeros(len(Xnew)) if f0_new is None else as_targets(f0_new, len(Xnew), "f0_new")
    N = len(X)
    with np.errstate(over="ignore"):
        check_finite_result(eta * times / N, "eta·t/N (the learning rate eta times the times t)")
    lam, U = psd_eigh(kernel.evaluate(X), "the kernel on X")  # K = UΛUᵀ
    Ks = kernel.evaluate(Xnew, X)  # K(Xnew, X), (m, N)
    r0 = U.T @ (f0 - Y)  # Uᵀ(f₀(X) − Y)
    KsU = Ks @ U
    a = eta * times[:, None] / N  # ηt/N, (T, 1)
    rates = -np.expm1(-a * lam)  # 1 − e^{−ηλᵢt/N}
    positive = lam > 0
    gain = np.where(positive, rates / np.where(positive, lam, 1.0), a)  # (1 − e^{−ηλt/N})/λ, → ηt/N at λ = 0
    train = Y + ((1.0 - rates) * r0) @ U.T  # Y + U e^{−ηΛt/N} Uᵀ r₀
    mean = f0_new - (gain * r0) @ KsU.T  # f₀(x) − K(x, X) U gain Uᵀ r₀
    # K⁺, the pseudo-inverse on a singular K: directions whose λ is round-off (≤ c·n·ε·max λ, of either sign before psd_eigh
    # clipped it) are null, and K(x, X)u = 0 there for every x; 1/λ of a round-off λ would multiply round-off by 1e16
    resolved = lam > psd_tolerance(lam)
    inv_lam = np.where(resolved, 1.0 / np.where(resolved, lam, 1.0), 0.0)
    limit = f0_new - KsU @ (inv_lam * r0)
    for values in (mean, train, limit):
        check_finite_result(values, "the network outputs f(·; θ_t) (y, f0 or the kernel's values are too large for float64)")
    return NTKDynamics(times, mean, train, rates, lam, U, limit)
