"""The package's one numerical rule: Cholesky with the rcond test and escalating, reported jitter; PSD up to round-off."""

import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.linalg.lapack

from bayeskern._spd_inverse import inverse_diagonal
from bayeskern._validation import PACKAGE_DIR

__all__ = [
    "EPS", "JITTER_STEPS", "LARGEST", "LOG_2PI", "PSD_ROUNDOFF", "RCOND_PROOF_MARGIN", "announce_jitter", "cho_solve", "cholesky",
    "escalate_jitter", "exact_cholesky", "jitter_scale", "loo_gaussian", "minus_gram", "mirror_lower", "potrf_succeeded", "psd_eigh", "psd_factor",
    "psd_tolerance", "solve_lower",
]

LOG_2PI = float(np.log(2 * np.pi))

#: machine epsilon of float64, read here and nowhere else in the package. A factor whose reciprocal
#: condition number (LAPACK pocon) is at most n·EPS is singular to round-off
EPS = float(np.finfo(np.float64).eps)

#: where the inverse at hand proves 1/cond₁ > RCOND_PROOF_MARGIN·n·EPS, pocon's estimate (never below 1/cond₁ but for
#: round-off: it bounds ‖A⁻¹‖₁ from below) passes the n·EPS test too, and is not asked (`bayeskern._gaussian_logp`)
RCOND_PROOF_MARGIN = 16.0

#: relative jitter tried in turn (times the mean of the diagonal) when a factorisation fails
JITTER_STEPS = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)

#: c in "PSD up to round-off": the smallest eigenvalue may be as low as −c·n·ε·λmax
PSD_ROUNDOFF = 100

#: the smallest positive normal float64 (read from np.finfo here only, like EPS): a floor for a divisor that may be 0
TINY = float(np.finfo(float).tiny)
#: the largest float64, a numpy float64 (a Python float would be tried as float32 first where PyTensor types a constant)
LARGEST = np.finfo(np.float64).max


def psd_tolerance(eigenvalues, scale: float | None = None) -> float:
    """c·n·ε·s, c = PSD_ROUNDOFF, s = max|λ| (or `scale`): eigenvalues above −this count as zero (PSD up to round-off)."""
    lam = np.asarray(eigenvalues)
    s = float(np.max(np.abs(lam), initial=0.0)) if scale is None else float(scale)
    return float(PSD_ROUNDOFF * len(lam) * EPS * s)


def cholesky(A: np.ndarray, name: str = "matrix", before_jitter: Callable[[], None] | None = None,
             noise_var: float | None = None) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor L of A = L Lᵀ and the jitter added to the diagonal (0.0 if none).

    The one factorisation rule of the package (the marginal likelihood's Op applies the same one in
    Numba): a factorisation of a matrix singular to round-off (LAPACK's estimate 1/cond₁ ≤ n·ε) counts
    as failed, its log-determinant would be noise. After a failure `before_jitter` is called (it may
    raise, e.g. a ValueError for a kernel that is not PSD, which jitter would only hide); then jitter is
    tried in the steps of `JITTER_STEPS` relative to the mean diagonal, announced with a RuntimeWarning (which compares it
    with `noise_var`, σ², where A holds one).
    """
    L = exact_cholesky(A)
    if L is not None:
        return L, 0.0
    if before_jitter is not None:
        before_jitter()
    L, jitter = escalate_jitter(lambda j: exact_cholesky(A, j), jitter_scale(np.diag(A)))
    if L is None:
        raise ValueError(
            f"{name} is not positive definite, even with jitter up to {jitter:.3g} "
            f"on the diagonal: check that the kernel is positive semi-definite and the diagonal term of {name} positive"
        )
    announce_jitter(name, jitter, noise_var)
    return L, jitter


def jitter_scale(diagonal) -> float:
    """What the jitter steps are relative to: the mean of the diagonal (1.0 if that is not a positive number)."""
    scale = float(np.mean(diagonal))
    return scale if np.isfinite(scale) and scale > 0 else 1.0


def escalate_jitter(factor_at: Callable[[float], object], scale: float) -> tuple[object, float]:
    """(factor_at(δ), δ) for the first δ = step·scale of `JITTER_STEPS` whose factor is not None; (None, last δ) if none."""
    for step in JITTER_STEPS:
        factor = factor_at(step * scale)
        if factor is not None:
            return factor, step * scale
    return None, JITTER_STEPS[-1] * scale


#: jitter above this fraction of σ² changes what is computed, not only its round-off: the warning then says so
JITTER_CHANGES_NOISE = 0.01


class JitterWarning(RuntimeWarning):
    """A factorisation needed jitter on its matrix's diagonal (`announce_jitter`)."""


def announce_jitter(name: str, jitter: float, noise_var: float | None = None) -> None:
    """The RuntimeWarning every factorisation gives when it needed jitter; with the noise variance σ² of the matrix, how
    the jitter compares with it (a jitter of σ² or more is a model with noise σ² + jitter)."""
    message = f"{name} is not numerically positive definite; added jitter {jitter:.3g} to its diagonal"
    if noise_var is not None:
        ratio = jitter / noise_var if noise_var > 0 else np.inf
        message += f" ({ratio:.3g} × sigma²)" if np.isfinite(ratio) else " (sigma = 0)"
        if ratio > JITTER_CHANGES_NOISE:
            message += ": the results are those of noise variance sigma² + jitter"
    warnings.warn(message, JitterWarning, skip_file_prefixes=(PACKAGE_DIR,))


def exact_cholesky(A: np.ndarray, jitter: float = 0.0) -> np.ndarray | None:
    """The lower Cholesky factor of A + jitter·I, or None if it fails or A is singular to round-off (1/cond₁ ≤ n·ε)."""
    B = A + jitter * np.eye(A.shape[0]) if jitter else A
    try:
        L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    rcond, info = scipy.linalg.lapack.dpocon(L, np.linalg.norm(B, 1), uplo="L")
    return L if info == 0 and rcond > A.shape[0] * EPS else None


def potrf_succeeded(U: np.ndarray, info: int) -> bool:
    """Whether LAPACK potrf's factor U is one to use: info 0 and a finite, positive diagonal (potrf "succeeds" on NaN
    entries, its diagonal then NaN). The rule of the Ops' own factorisations, Numba's `_lapack_numba.cholesky_in_place`
    too."""
    diagonal = np.diagonal(U)
    return info == 0 and bool(np.all(np.isfinite(diagonal) & (diagonal > 0.0)))


def solve_lower(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """L⁻¹ B for lower-triangular L."""
    return scipy.linalg.solve_triangular(L, B, lower=True, check_finite=False)


def minus_gram(C: np.ndarray, V: np.ndarray) -> np.ndarray:
    """C − VᵀV for a symmetric C (read from its lower triangle), exactly symmetric: one BLAS syrk on the lower triangle
    (half gemm's products), mirrored. By SciPy's BLAS, as the factorisations and solves around it: numpy's `@` runs on
    numpy's own OpenBLAS pool, whose threads compete with SciPy's (`bayeskern._blas`).
    """
    # lower triangle of C − VᵀV, a new array (a copy of C for an empty V: BLAS refuses a leading dimension of 0)
    return mirror_lower(scipy.linalg.blas.dsyrk(-1.0, V, beta=1.0, c=C, trans=1, lower=1) if len(V) else np.array(C))


#: `mirror_lower` works on this many rows at a time (the transposed block stays in cache)
MIRROR_BLOCK = 256
_ABOVE = ~np.tri(MIRROR_BLOCK, dtype=bool)


def mirror_lower(A: np.ndarray) -> np.ndarray:
    """A with its upper triangle overwritten by its lower triangle's transpose, in place, by blocks of rows: symmetric to
    the bit, no n × n temporaries. m = 121: 12 µs (np.where over a mask 18 µs, tril(A) + tril(A, −1)ᵀ 50 µs); n = 3000:
    8.3 ms against 32 ms."""
    n = len(A)
    for s in range(0, n, MIRROR_BLOCK):
        e = min(s + MIRROR_BLOCK, n)
        block = A[s:e, s:e]
        np.copyto(block, block.T, where=_ABOVE[: e - s, : e - s])  # (numpy copies the overlapping source first)
        A[s:e, e:] = A[e:, s:e].T
    return A


def cho_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(L Lᵀ)⁻¹ B."""
    return scipy.linalg.cho_solve((L, True), B, check_finite=False)


def loo_gaussian(L: np.ndarray, t: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out predictive of t ~ N(0, C) from C's Cholesky factor L and α = C⁻¹t: means, variances, log densities.

    μᵢ = tᵢ − [C⁻¹t]ᵢ / [C⁻¹]ᵢᵢ, σᵢ² = 1 / [C⁻¹]ᵢᵢ   (R&W 5.12), and log N(tᵢ | μᵢ, σᵢ²) (R&W 5.10),
    exactly p(tᵢ | t₋ᵢ) without refitting; [C⁻¹]ᵢᵢ from L's triangular inverse (`_spd_inverse.inverse_diagonal`).
    """
    d = inverse_diagonal(L)  # [C⁻¹]ᵢᵢ (a ValueError for a singular factor)
    mean = t - alpha / d
    var = 1.0 / d
    # log N(tᵢ | μᵢ, σᵢ²), (tᵢ − μᵢ)²/σᵢ² = αᵢ²/dᵢ = αᵢ·(αᵢ/dᵢ): no αᵢ² that overflows where the density does not
    log_density = -0.5 * LOG_2PI + 0.5 * np.log(d) - 0.5 * alpha * (alpha / d)
    return mean, var, log_density


def psd_eigh(A: np.ndarray, name: str = "matrix", scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending, round-off negatives clipped to 0) and eigenvectors of a PSD matrix A.

    A ValueError if an eigenvalue is below −c·n·ε·s (c = PSD_ROUNDOFF, the round-off scale): A is not
    PSD. s is the magnitude of the numbers A was computed from: max|λ| by default, or `scale` when A is
    a difference of larger terms — a posterior covariance K** − kᵀC⁻¹k is exact only to ε·max k(x, x),
    so when the data pin f down all its eigenvalues are round-off around 0, of either sign.
    """
    lam, U = _checked_eigh(A, name, scale, vectors=True)
    return np.clip(lam, 0.0, None), U


def check_psd_matrix(A: np.ndarray, name: str = "matrix") -> None:
    """`psd_eigh`'s ValueError for a matrix that is not PSD to round-off, and its verdict. A Cholesky factor of
    A + c·n·ε·max|Aᵢᵢ|·I (max|Aᵢᵢ| ≤ max|λ|: no more lenient than psd_eigh's floor) settles a PSD A at a quarter of the
    cost of its eigenvalues (kernel ridge at n = 3000: 0.86 s, 2.35 s with them); without one the eigenvalues decide."""
    A = np.asarray(A, dtype=np.float64)
    if np.all(np.isfinite(A)):
        shifted = A + PSD_ROUNDOFF * len(A) * EPS * float(np.max(np.abs(np.diag(A)), initial=0.0)) * np.eye(len(A))
        try:
            scipy.linalg.cholesky(shifted, lower=True, check_finite=False)
            return
        except np.linalg.LinAlgError:
            pass
    _checked_eigh(A, name, None, vectors=False)


def _checked_eigh(A, name: str, scale, vectors: bool):
    """scipy's eigh of A (eigenvalues only unless `vectors`), refused below −c·n·ε·s (see `psd_eigh`)."""
    A = np.asarray(A, dtype=np.float64)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    try:
        lam, U = scipy.linalg.eigh(A, check_finite=False) if vectors else (scipy.linalg.eigh(A, eigvals_only=True, check_finite=False), None)
    except np.linalg.LinAlgError as err:
        raise ValueError(f"{name}: the eigendecomposition did not converge ({err})") from None
    magnitude = max(float(np.max(np.abs(lam), initial=0.0)), 0.0 if scale is None else abs(float(scale)))
    floor = psd_tolerance(lam, max(magnitude, 1e-300))  # round-off scale c·n·ε·s
    if lam[0] < -floor:
        raise ValueError(
            f"{name} is not positive semi-definite: smallest eigenvalue {lam[0]:.3g}, below the round-off scale {floor:.3g}"
        )
    return lam, U


def psd_factor(A: np.ndarray, name: str = "matrix", scale: float | None = None) -> np.ndarray:
    """F (n × r) with F Fᵀ = A up to round-off, for a PSD matrix A of rank r: a draw from N(0, A) is F z, z ~ N(0, I_r).

    LAPACK's pivoted Cholesky (pstrf), stopped once the largest remaining pivot is below tol = c·n·ε·s / n (the first
    pivot is tested against 0 only), is kept when
    ‖A − F Fᵀ‖_F ≤ c·n·ε·s: then no eigenvalue of A is below −c·n·ε·s (‖R‖₂ ≤ ‖R‖_F), psd_eigh's own test, with s = max
    Aᵢᵢ ≤ max λ (or `scale`). Otherwise F = U√Λ from `psd_eigh`, which clips round-off negatives or refuses a matrix that
    is not PSD. No jitter either way; the Cholesky route is ~15 times cheaper than the eigendecomposition at n = 121.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {A.shape}")
    if A.size == 0:
        return np.zeros((0, 0))
    if not np.all(np.isfinite(A)):  # (pstrf and syrk read one triangle only)
        return psd_eigh(A, name, scale)  # its ValueError
    diagonal = np.abs(np.diag(A))
    floor = psd_tolerance(diagonal, max(float(np.max(diagonal)), 0.0 if scale is None else abs(float(scale)), 1e-300))
    L, pivots, rank, info = scipy.linalg.lapack.dpstrf(A, lower=1, tol=floor / len(A))
    if info >= 0 and np.isfinite(floor):
        F = np.empty((len(A), rank))
        F[pivots - 1] = np.tril(L)[:, :rank]  # A[p][:, p] = L Lᵀ (pstrf's permutation p), so A = F Fᵀ with F[p] = L
        with np.errstate(all="ignore"):  # R/floor: no under- or overflow in the squares for a tiny or huge A
            scaled = minus_gram(A, F.T) / floor  # R/floor, R = A − F Fᵀ
            small = np.sum(scaled * scaled) <= 1.0  # ‖R‖_F ≤ floor (np.sum, not np.linalg.norm: its dot is numpy's BLAS)
        if small:
            return F
    lam, U = psd_eigh(A, name, scale)
    return U * np.sqrt(lam)  # A = UΛUᵀ = (U√Λ)(U√Λ)ᵀ
