"""Smoothing kernels K(u) (Gaussian, Epanechnikov, boxcar, triangular): radial profiles of s = ‖u‖², u = (x − x′)/h."""

from dataclasses import dataclass
from math import gamma, pi

import numpy as np

__all__ = ["SMOOTHING_KERNELS", "SmoothingKernel", "smoothing_kernel"]


def _gaussian(s: np.ndarray) -> np.ndarray:
    s *= -0.5
    return np.exp(s, out=s)  # K(u) ∝ exp(−‖u‖²/2)


def _epanechnikov(s: np.ndarray) -> np.ndarray:
    np.subtract(1.0, s, out=s)
    return np.maximum(s, 0.0, out=s)  # K(u) ∝ (1 − ‖u‖²)₊


def _boxcar(s: np.ndarray) -> np.ndarray:
    s[...] = s <= 1.0
    return s  # K(u) ∝ 1{‖u‖ ≤ 1}


def _triangular(s: np.ndarray) -> np.ndarray:
    np.sqrt(s, out=s)
    np.subtract(1.0, s, out=s)
    return np.maximum(s, 0.0, out=s)  # K(u) ∝ (1 − ‖u‖)₊


def _unit_ball_volume(d: int) -> float:
    return pi ** (d / 2) / gamma(d / 2 + 1)  # V_d = π^{d/2} / Γ(d/2 + 1)


@dataclass(frozen=True)
class SmoothingKernel:
    """A radial smoothing kernel K(u) = c_d · k(‖u‖²) on ℝᵈ with ∫K = 1 and ∫uK(u)du = 0.

    `profile(s)` gives k(s) for an array s = ‖u‖² (overwriting s: blocks are large). `compact`: K
    vanishes for ‖u‖ > 1, so the bandwidth h is the radius of the window; for the Gaussian h is the
    standard deviation. `constant(d)`: c_d. The Nadaraya–Watson weights do not need c_d (it cancels);
    a density does. `variance(d)`: ∫u₁²K(u)du, so that h·√variance(d) is the standard deviation of
    the window (h itself for the Gaussian).
    """

    name: str
    compact: bool
    _profile: object
    _constant: object
    _variance: object

    def profile(self, s: np.ndarray) -> np.ndarray:
        return self._profile(s)

    def constant(self, d: int) -> float:
        return float(self._constant(d))

    def variance(self, d: int) -> float:
        """∫u₁²K(u)du, the variance of one coordinate under K: h·√variance is K's width as a standard deviation."""
        return float(self._variance(d))

    def __call__(self, u) -> np.ndarray:
        """K(u) for points u (m, d) (a 1-D array means d = 1), normalised: ∫K(u)du = 1."""
        u = np.asarray(u, dtype=np.float64)
        u = u[:, None] if u.ndim == 1 else u
        return self.constant(u.shape[1]) * self.profile(np.einsum("ij,ij->i", u, u))


_KERNELS = {
    # c_d = (2π)^{−d/2}
    "gaussian": SmoothingKernel("gaussian", False, _gaussian, lambda d: (2 * pi) ** (-d / 2), lambda d: 1.0),
    # ∫(1 − ‖u‖²)₊ du = 2V_d/(d + 2);  E‖u‖² = d/(d + 4)
    "epanechnikov": SmoothingKernel("epanechnikov", True, _epanechnikov, lambda d: (d + 2) / (2 * _unit_ball_volume(d)), lambda d: 1 / (d + 4)),
    # ∫1{‖u‖ ≤ 1} du = V_d;  E‖u‖² = d/(d + 2)
    "boxcar": SmoothingKernel("boxcar", True, _boxcar, lambda d: 1 / _unit_ball_volume(d), lambda d: 1 / (d + 2)),
    # ∫(1 − ‖u‖)₊ du = V_d/(d + 1);  E‖u‖² = d(d + 1)/((d + 2)(d + 3))
    "triangular": SmoothingKernel("triangular", True, _triangular, lambda d: (d + 1) / _unit_ball_volume(d), lambda d: (d + 1) / ((d + 2) * (d + 3))),
}
_ALIASES = {"tophat": "boxcar", "top-hat": "boxcar", "normal": "gaussian", "triangle": "triangular"}

#: the names `smoothing_kernel` accepts (plus the aliases tophat, normal, triangle)
SMOOTHING_KERNELS = tuple(_KERNELS)


def smoothing_kernel(kernel) -> SmoothingKernel:
    """The smoothing kernel called `kernel` (or `kernel` itself if it is a SmoothingKernel)."""
    if isinstance(kernel, SmoothingKernel):
        return kernel
    name = _ALIASES.get(str(kernel).lower(), str(kernel).lower())
    if name not in _KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(SMOOTHING_KERNELS)} (or tophat), got {kernel!r}")
    return _KERNELS[name]
