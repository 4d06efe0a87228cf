"""Stationary kernels k(x − x′): squared exponential (isotropic, ARD, Mahalanobis), Matérn, rational quadratic, periodic."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad

from bayeskern._fills import filled
from bayeskern._linalg import LARGEST, TINY
from bayeskern._parameterised import known_shape
from bayeskern._validation import check_number, is_symbolic
from bayeskern.kernels.base import Kernel

__all__ = ["RBF", "MahalanobisRBF", "Matern12", "Matern32", "Matern52", "Periodic", "RatQuad", "scaled_sqdist"]

#: up to this many input columns r² is summed from direct differences, one fused pass over the (n, m)
#: output; above it the centred Gram form (a BLAS product) is faster. RBF at n = 2000 on a loaded
#: 2-core machine, K(X, X) / value and ∂/∂ℓ of Σ Gᵢⱼ Kᵢⱼ: d = 1, differences 37–45 / 43–46 ms against
#: 41–86 / 113–152 ms for PyMC's ‖x‖² + ‖x′‖² − 2xᵀx′; d = 5, 96–112 / 131–177 against 148–182 /
#: 299–359 ms; on par at d = 8; at d = 16 the Gram form is 1.3× (K) to 2× (gradient) faster.
DIFFERENCE_COLUMNS = 8
#: the same for K(X, X′) of two input sets (no symmetric pass; the gradient reads the product's two thin factors):
#: above this many columns the Gram form is faster. VFE's K(Z, X), M = 300, n = 20 000, ARD RBF, one value and
#: gradient of the collapsed bound (its Op ~0.1 s included), differences / Gram form: d = 1 0.383 / 0.438 s,
#: d = 2 0.424 / 0.409, d = 3 0.461 / 0.415, d = 5 0.536 / 0.408
CROSS_DIFFERENCE_COLUMNS = 2

#: the Gram form rescales z = (x − x₁)/ℓ only where some |z| exceeds this, 2⁵⁰⁰ ≈ 3e150: below it ‖z‖² ≤ d·2¹⁰⁰⁰ cannot
#: overflow, and the near points' squares, ~|z|²/s², stay normal floats unless the inputs span ~300 orders of magnitude
GRAM_LIMIT = np.float64(2.0**500)


def _per_column(value, d: int):
    """One value per input column: a scalar repeated over the d columns, or the d given ones."""
    return pt.ones((d,), dtype="float64") * value


def scaled_sqdist(X, Xs, lengthscale):
    """r²ᵢⱼ = Σₖ ((xᵢₖ − x′ⱼₖ)/ℓₖ)², the squared distance in length scales, exact at any offset of X.

    `X`, `Xs`: symbolic (n, d) and (m, d) inputs (Xs None means X) with d known. `lengthscale`: ℓ, a
    scalar or one ℓₖ per column. Nothing cancels however far X sits from 0: r² is exact to rounding
    for d ≤ `DIFFERENCE_COLUMNS` (`CROSS_DIFFERENCE_COLUMNS` for two input sets), and within ε·max‖(x − x₁)/ℓ‖² above. r² is exactly 0 where x = x′,
    exactly symmetric for Xs = None, never NaN for finite inputs and ℓ, and +∞ only where the true
    r² overflows (every kernel here is 0 there). The gradient is that of the formula, exactly.
    """
    d = X.type.shape[1]
    ell = _per_column(lengthscale, d)
    if d <= (DIFFERENCE_COLUMNS if Xs is None else CROSS_DIFFERENCE_COLUMNS):
        return _sum_of_squares(_column_differences(X, X if Xs is None else Xs, d), ell)
    return _sqdist_from_gram(X, Xs, ell)


def paired_scaled_sqdist(X, rows, cols, lengthscale):
    """r²ᵢ = Σₖ ((x_rows[i],k − x_cols[i],k)/ℓₖ)² for each pair i: `scaled_sqdist`'s entries at (rows, cols), the same
    numbers to the bit for d ≤ `DIFFERENCE_COLUMNS` (read off the matrix above it)."""
    d = X.type.shape[1]
    ell = _per_column(lengthscale, d)
    if d <= DIFFERENCE_COLUMNS:
        return _sum_of_squares(_paired_differences(X, rows, cols, d), ell)
    return _sqdist_from_gram(X, None, ell)[rows, cols]


def _paired_differences(X, rows, cols, d: int) -> list:
    """x_rows,k − x_cols,k as one vector per column k (the pairs' entries of `_column_differences`)."""
    return [X[:, k][rows] - X[:, k][cols] for k in range(d)]


def _column_differences(X, Xs, d: int) -> list:
    """xₖ − x′ₖ as one (n, m) matrix per column k: exact when x and x′ are within a factor 2 (Sterbenz' lemma).

    Nothing cancels however far the inputs sit from 0, and no (n, m, d) array is formed.
    """
    return [X[:, k][:, None] - Xs[:, k][None, :] for k in range(d)]


def _sum_of_squares(terms: list, ell):
    """Σₖ (tₖ/ℓₖ)², dividing before squaring so that a tiny ℓ or a huge t overflows to +∞, not to NaN.

    The clip at ± the largest float changes no number; it stops Numba's fastmath (reassociation) from
    computing (t/ℓ)² as t²·ℓ⁻², which is 0·∞ = NaN at t = 0 once ℓ < 1e-154. The empirical-Bayes objective in numpy
    mode finds each term in this form (`_squared_ratios.with_squared_ratios`) and differentiates it through r².
    """
    return sum(pt.square(pt.clip(t / ell[k], -LARGEST, LARGEST)) for k, t in enumerate(terms))


def _sqdist_from_gram(X, Xs, ell):
    """‖z‖² + ‖z′‖² − 2zᵀz′ with z = (x − c)/ℓ, for many columns (the cross term is one BLAS product).

    Any common shift c leaves r² unchanged, so no gradient flows through c. c = each column's median element makes
    x − c exact near the data (Sterbenz), so the Gram form's round-off is ε·max‖z‖² for the data's spread, not for
    its offset from 0, and an outlier moves it only for the pairs it is in (c = x₁, an outlier in the first row, spoilt
    every pair: 0.37 off at 1e8 away). z is clipped at ± the largest float: a z that overflows to ±∞ made s infinite
    and every r² 0 (k = 1 everywhere); finite, it rescales the rest.
    """
    c = disconnected_grad(pt.sort(X, axis=0)[X.shape[0] // 2])

    def z(A):
        return pt.clip((A - c) / ell, -LARGEST, LARGEST)

    Z = z(X)
    Zs = Z if Xs is None else z(Xs)
    # y = z/s with s = max(max|z|/GRAM_LIMIT, 1) keeps ‖y‖² ≤ d·GRAM_LIMIT² from overflowing, and rescales only where it
    # would (by max|z| the near points' squares underflowed beside a point ~1e160 away); r² = s²·r²(y) does not
    # depend on s, so no gradient flows through s
    s = disconnected_grad(pt.maximum(pt.maximum(pt.max(pt.abs(Z)), pt.max(pt.abs(Zs))) / GRAM_LIMIT, 1.0))
    Y, Ys = Z / s, Zs / s
    sq, sq_s = pt.sum(pt.square(Y), axis=1), pt.sum(pt.square(Ys), axis=1)
    r2 = pt.clip(sq[:, None] + sq_s[None, :] - 2.0 * pt.dot(Y, Ys.T), 0.0, np.inf)  # ‖y‖² + ‖y′‖² − 2yᵀy′
    if Xs is None:
        # exactly symmetric (the cross term's rounding need not be), and k(x, x) needs r = 0 exactly
        r2 = 0.5 * (r2 + r2.T) * (1.0 - pt.eye(X.shape[0], dtype="float64"))
    return pt.switch(pt.gt(r2, 0.0), r2 * s * s, 0.0)  # r² = s²·r²(y); 0 stays 0 when s² overflows


def _exact_sqrt(r2):
    """r = √r², exactly 0 at r² = 0 with a finite gradient there (√ is evaluated on 1 instead of 0).

    r² is capped at 1e300 (r = 1e150 length scales, where every Matérn kernel is 0 to the last bit),
    so that r² = ∞ gives k = 0 rather than (1 + ∞)·e^(−∞) = NaN.
    """
    positive = pt.gt(r2, 0.0)
    return pt.sqrt(pt.switch(positive, pt.minimum(r2, np.float64(1e300)), 1.0)) * positive


def _check_lengthscale(lengthscale):
    lengthscale = check_number(lengthscale, "lengthscale", positive=True)
    if not is_symbolic(lengthscale) and np.any(lengthscale < TINY):
        # 1/ℓ would overflow: (x − x′)/ℓ is computed as (x − x′)·ℓ⁻¹ under fastmath, 0·∞ at x = x′
        raise ValueError(f"lengthscale must be at least {TINY:.3g}, the smallest normal float")
    if lengthscale.ndim > 1:
        raise ValueError("lengthscale must be a scalar or a vector of one length scale per input column")
    return lengthscale


class _PyMCStationary(Kernel):
    """k(r²) with r² = Σₖ ((xₖ − x′ₖ)/ℓₖ)² from `scaled_sqdist`, and k from `full_from_distance` of `pm.gp.cov`
    (unless a subclass writes its own `_of_sqdist`, as RatQuad does), for the matrix (`_full`) and for pairs of rows (`_pairs`).

    Only PyMC's function of the distance is used: its own distance, ‖x‖² + ‖x′‖² − 2xᵀx′, cancels
    catastrophically far from 0 (at |x| ≈ 1e6 the RBF is off by 1e-3).
    """

    _pymc_class = None
    _extra: tuple[str, ...] = ()

    def __init__(self, lengthscale, **extra):
        lengthscale = _check_lengthscale(lengthscale)
        super().__init__(lengthscale=lengthscale, **{k: check_number(v, k, positive=True, scalar=True) for k, v in extra.items()})

    def _check_input_dim(self, d: int) -> None:
        entries = known_shape(self.hyperparameters["lengthscale"])
        if len(entries) == 1 and entries[0] is not None and entries[0] != d:  # (a PyMC vector of a given shape too)
            raise ValueError(f"lengthscale has {entries[0]} ARD entries but the inputs have {d} column(s)")

    def _pymc(self, d: int, p):
        cov = type(self)._pymc_class(d, ls=p["lengthscale"], **{k: p[k] for k in self._extra})
        cov._sqrt = _exact_sqrt  # PyMC's r = √(r² + 1e-12) puts k(x, x) 1e-6 below 1 for Matérn ½
        return cov

    def _of_sqdist(self, r2, d: int, p):
        """k as a function of r² (already in length scales: PyMC's ls is not applied again), elementwise."""
        return self._pymc(d, p).full_from_distance(r2, squared=True)

    def _full(self, X, Xs, p):
        return self._of_sqdist(scaled_sqdist(X, Xs, p["lengthscale"]), X.type.shape[1], p)

    def _pairs(self, X, rows, cols, p):
        return self._of_sqdist(paired_scaled_sqdist(X, rows, cols, p["lengthscale"]), X.type.shape[1], p)

    def _diag(self, X, p):
        return filled(1.0, X.shape[0])  # k(x, x) = k(r = 0) = 1


class RBF(_PyMCStationary):
    """k(x, x′) = exp(−‖x − x′‖² / (2ℓ²)), PyMC's `ExpQuad`.

    `lengthscale`: ℓ > 0; a vector of d length scales ℓⱼ gives the ARD kernel
    exp(−½ Σⱼ (xⱼ − x′ⱼ)² / ℓⱼ²). `bandwidth`: the seeds' σ² = ℓ², an alternative to `lengthscale`.
    """

    _pymc_class = pm.gp.cov.ExpQuad

    def __init__(self, lengthscale=None, *, bandwidth=None):
        if (lengthscale is None) == (bandwidth is None):
            raise ValueError("give exactly one of lengthscale (ℓ) and bandwidth (σ² = ℓ²)")
        if bandwidth is not None:
            bandwidth = check_number(bandwidth, "bandwidth", positive=True)
            if bandwidth.ndim > 1:
                raise ValueError("bandwidth must be a scalar or a vector of one σ² per input column")
            lengthscale = pt.sqrt(bandwidth) if is_symbolic(bandwidth) else np.sqrt(bandwidth)
        super().__init__(lengthscale)


class MahalanobisRBF(Kernel):
    """k(x, x′) = exp(−½ (x − x′)ᵀ Σ⁻¹ (x − x′)), the squared exponential with a full covariance.

    `cov`: Σ (d, d), symmetric positive definite — a matrix or a PyMC random variable (e.g. built
    from an LKJ Cholesky factor).
    """

    def __init__(self, cov):
        cov = check_number(cov, "cov")
        if not is_symbolic(cov):
            if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
                raise ValueError(f"cov must be a square (d, d) matrix, got shape {cov.shape}")
            if not np.allclose(cov, cov.T, rtol=1e-10, atol=0.0):
                raise ValueError("cov must be symmetric")
            if np.any(np.linalg.eigvalsh(cov) <= 0):
                raise ValueError("cov must be positive definite")
        super().__init__(cov=cov)

    def _check_input_dim(self, d: int) -> None:
        shape = known_shape(self.hyperparameters["cov"])
        if len(shape) != 2:  # (a symbolic cov: its rank is known before its values)
            raise ValueError(f"cov must be a (d, d) matrix, got {len(shape)} dimension(s)")
        if any(side is not None and side != d for side in shape):  # (a PyMC matrix of a given shape too)
            raise ValueError(f"cov is {'x'.join('?' if side is None else str(side) for side in shape)} but the inputs have {d} column(s)")

    def _full(self, X, Xs, p):
        # (x − x′)ᵀ Σ⁻¹ (x − x′) = ‖z − z′‖² with z = L⁻¹(x − c), Σ = L Lᵀ; the common shift c = x₁ is
        # taken before whitening, so that z carries the data's spread and not its offset from 0
        d, c = X.type.shape[1], X[0]
        L = pt.linalg.cholesky(p["cov"])

        def whiten(A):
            return pt.specify_shape(pt.linalg.solve_triangular(L, (A - c).T, lower=True).T, (None, d))

        r2 = scaled_sqdist(whiten(X), None if Xs is None else whiten(Xs), 1.0)
        return pm.gp.cov.ExpQuad(d, ls=1.0).full_from_distance(r2, squared=True)  # exp(−½ r²)

    def _diag(self, X, p):
        return filled(1.0, X.shape[0])


class Matern12(_PyMCStationary):
    """k(x, x′) = exp(−r/ℓ), r = ‖x − x′‖ (the Ornstein–Uhlenbeck kernel), PyMC's `Matern12`."""

    _pymc_class = pm.gp.cov.Matern12


class Matern32(_PyMCStationary):
    """k(x, x′) = (1 + √3 r/ℓ) exp(−√3 r/ℓ), PyMC's `Matern32`."""

    _pymc_class = pm.gp.cov.Matern32


class Matern52(_PyMCStationary):
    """k(x, x′) = (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ), PyMC's `Matern52`."""

    _pymc_class = pm.gp.cov.Matern52


class RatQuad(_PyMCStationary):
    """k(x, x′) = (1 + r²/(2αℓ²))^(−α), a scale mixture of RBFs, PyMC's `RatQuad`; α → ∞ gives the RBF.

    Evaluated as exp(−α·log1p(r²/(2α))) (r in length scales), exact for every α. PyMC's
    (1 + r²/(2α))^(−α) rounds 1 + r²/(2α) first: at α = 1e9 k is off by ~1e-7 relative, at 1e15 by
    ~0.1, and from α ≈ 1e16 it is 1 everywhere — the log marginal likelihood of a fit whose α runs
    towards the RBF limit turns to noise (and to −∞), and the optimiser spends its evaluations on it.
    """

    _extra = ("alpha",)

    def __init__(self, alpha, lengthscale):
        super().__init__(lengthscale, alpha=alpha)

    def _of_sqdist(self, r2, d: int, p):
        alpha = p["alpha"]
        return pt.exp(-alpha * pt.log1p((0.5 * r2) / alpha))  # (1 + r²/(2α))^(−α) = exp(−α log(1 + r²/(2α))); 2α would overflow at α > 9e307


class Periodic(_PyMCStationary):
    """k(x, x′) = exp(−½ Σⱼ sin²(π(xⱼ − x′ⱼ)/T) / ℓ²), PyMC's `Periodic` (period T).

    PyMC's convention has ½ in the exponent where scikit-learn's `ExpSineSquared` has 2: the same
    kernel has ℓ = ℓ_sklearn / 2. Each input is reduced modulo T exactly (fmod) before the two are
    subtracted and π·(x − x′)/T is formed, so k stays right for inputs of any size: the phase is off by
    at most ε·T, a rounding of the reduced difference (k(1e200, 0) = 1 for T = 1; k(1e8 + 0.3, 0.3) was 4e-9
    off, and k(1e15, 0.1) 3e-2, when x − x′ was formed first, and ±1e308 overflowed).
    """

    _pymc_class = pm.gp.cov.Periodic
    _extra = ("period",)

    def __init__(self, period, lengthscale):
        super().__init__(lengthscale, period=period)

    @staticmethod
    def _reduced(X, p):
        """Each input modulo its column's period, in [0, T) (fmod is exact): x − x′ ≡ (x mod T) − (x′ mod T)."""
        return pt.mod(X, _per_column(p["period"], X.type.shape[1])[None, :])

    def _sqdist_of_differences(self, differences: list, p):
        """r² = Σₖ sin²(π(xₖ − x′ₖ)/T) / ℓₖ² from the differences of the reduced inputs (one tensor per column, in
        (−T, T)), elementwise."""
        d = len(differences)
        period = _per_column(p["period"], d)
        folded = []
        for k, diff in enumerate(differences):
            # sin² is even and T-periodic: fold |x − x′| < T into [0, T/2] (T − u is exact for u ≥ T/2 by Sterbenz)
            u = pt.abs(diff)
            folded.append(pt.sin(np.pi * pt.minimum(u, period[k] - u) / period[k]))
        return _sum_of_squares(folded, _per_column(p["lengthscale"], d))

    def _full(self, X, Xs, p):
        d = X.type.shape[1]
        reduced = self._reduced(X, p)
        r2 = self._sqdist_of_differences(_column_differences(reduced, reduced if Xs is None else self._reduced(Xs, p), d), p)
        if Xs is None:
            r2 = 0.5 * (r2 + r2.T)  # vectorised and scalar sin may differ in the last bit: symmetric exactly
        return self._of_sqdist(r2, d, p)

    def _pairs(self, X, rows, cols, p):
        d = X.type.shape[1]
        return self._of_sqdist(self._sqdist_of_differences(_paired_differences(self._reduced(X, p), rows, cols, d), p), d, p)
