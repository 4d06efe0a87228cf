"""Kernel ridge regression with a Mercer kernel: α = (K + λI)⁻¹Y, λ by closed-form leave-one-out or k-fold CV."""

from dataclasses import dataclass

import numpy as np

from bayeskern._json import record_dict
from bayeskern._linalg import check_psd_matrix, cho_solve, cholesky, psd_eigh
from bayeskern._spd_inverse import inverse_diagonal
from bayeskern._validation import as_array, check_flag, check_integer, check_number, check_seed, rng_from
from bayeskern.kernels import Kernel
from bayeskern.smoothing._blocks import check_data, power_of_two, reject_complex, row_blocks, warn_at_grid_edge

__all__ = ["LAM_MAX", "KernelRidgeResult", "default_lam_grid", "kernel_ridge"]

#: the largest λ accepted: the solves divide by Λₖ + λ, and beyond this (𝕂 + λI)⁻¹ reaches the subnormal range
LAM_MAX = 1e300


@dataclass(frozen=True)
class KernelRidgeResult:
    """The penalised fit m̂(x) = Σᵢ αᵢ K(Xᵢ, x) minimising ‖Y − 𝕂α‖² + λαᵀ𝕂α   (seed 001).

    `alpha`: α (n,). `mean`: m̂(Xnew) (m,) (m̂(X) when no Xnew was given). `fitted`: m̂(X) = 𝕂α.
    `lam`: λ. `loo_mse`: (1/n)Σᵢ eᵢ², eᵢ = (yᵢ − ŷᵢ)/(1 − Hᵢᵢ) with H = 𝕂(𝕂 + λI)⁻¹, the exact
    leave-one-out residuals (`loo_residuals`) without refitting. `rkhs_norm`: ‖m̂‖_H = √(αᵀ𝕂α), the
    norm itself; `rkhs_norm_squared`: ‖m̂‖²_H = αᵀ𝕂α, the penalty as the seeds write it. `cv`: "loo",
    the number of folds k, or None (λ given). `lam_grid`, `cv_scores`: the candidates and their mean
    squared validation error (None when λ was given). `jitter`: added to 𝕂 + λI's diagonal (0 if none).
    """

    alpha: np.ndarray
    mean: np.ndarray
    fitted: np.ndarray
    lam: float
    loo_mse: float | None
    loo_residuals: np.ndarray | None
    rkhs_norm: float
    rkhs_norm_squared: float
    cv: str | int | None
    lam_grid: np.ndarray | None
    cv_scores: np.ndarray | None
    jitter: float

    def to_dict(self) -> dict:
        return record_dict(self)


def default_lam_grid(K: np.ndarray, num: int = 25) -> np.ndarray:
    """Candidate λ: mean(diag 𝕂)·[10⁻⁶, 10²], `num` log-spaced values (λ is on the scale of 𝕂)."""
    K = as_array(K, "K")
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0 or not np.all(np.isfinite(K)):
        raise ValueError(f"K must be a finite, non-empty square Gram matrix, got shape {K.shape}")
    scale = float(np.mean(np.diag(K)))
    return (scale if scale > 0 else 1.0) * np.geomspace(1e-6, 1e2, check_integer(num, "num", 1))


def _loo_scores_eigen(lam_grid: np.ndarray, eig: np.ndarray, Q: np.ndarray, y: np.ndarray):
    """α and the leave-one-out residuals for every λ from one 𝕂 = QΛQᵀ: O(n²) per λ.

    (𝕂 + λI)⁻¹ = Q (Λ + λI)⁻¹ Qᵀ, so α = Q (Qᵀy ⊘ (Λ + λ)) and [(𝕂 + λI)⁻¹]ᵢᵢ = Σₖ Qᵢₖ² / (Λₖ + λ).
    Since y − 𝕂α = λα and 1 − Hᵢᵢ = λ[(𝕂 + λI)⁻¹]ᵢᵢ, eᵢ = αᵢ / [(𝕂 + λI)⁻¹]ᵢᵢ. Returns α (n, L), e (n, L).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / (eig[:, None] + lam_grid[None, :])  # (Λₖ + λ)⁻¹  (K, L)
        alpha = Q @ ((Q.T @ y)[:, None] * inv)  # α = Q (Λ + λI)⁻¹ Qᵀy
        diag = (Q * Q) @ inv  # [(𝕂 + λI)⁻¹]ᵢᵢ
        return alpha, alpha / diag  # eᵢ = (yᵢ − ŷᵢ)/(1 − Hᵢᵢ) = αᵢ / [(𝕂 + λI)⁻¹]ᵢᵢ


def _loo_residuals_cholesky(L: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """eᵢ = αᵢ / [(𝕂 + λI)⁻¹]ᵢᵢ from the Cholesky factor L of 𝕂 + λI (R&W 5.12; the same as eᵢ = (yᵢ − ŷᵢ)/(1 − Hᵢᵢ)).

    [(LLᵀ)⁻¹]ᵢᵢ = Σₖ [L⁻¹]ₖᵢ², the column sums of squares of the triangular inverse (`_spd_inverse.inverse_diagonal`,
    n³/3 flops — half of forming (𝕂 + λI)⁻¹).
    """
    return alpha / inverse_diagonal(L)  # (a ValueError for a singular factor)


def _kfold_scores(K: np.ndarray, y: np.ndarray, lam_grid: np.ndarray, k: int, seed) -> np.ndarray:
    """Mean squared validation error over k folds (a random partition from `seed`) for every λ."""
    n = len(y)
    folds = np.array_split(rng_from(seed).permutation(n), k)
    sse = np.zeros(len(lam_grid))
    for test in folds:
        train = np.setdiff1d(np.arange(n), test)
        eig, Q = psd_eigh(K[np.ix_(train, train)], "the kernel matrix on a training fold")
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = Q @ ((Q.T @ y[train])[:, None] / (eig[:, None] + lam_grid[None, :]))
        pred = K[np.ix_(test, train)] @ alpha  # m̂₋fold(x) = Σᵢ αᵢ K(Xᵢ, x)
        with np.errstate(over="ignore", invalid="ignore"):
            sse += np.sum((y[test, None] - pred) ** 2, axis=0)
    return sse / n


def _predict(kernel: Kernel, X: np.ndarray, Xnew: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """m̂(x) = Σᵢ αᵢ K(Xᵢ, x) at the rows of Xnew, in row blocks of K(Xnew, X)."""
    out = np.empty(len(Xnew))
    for rows in row_blocks(len(Xnew), len(X)):
        out[rows] = kernel.evaluate(Xnew[rows], X) @ alpha
    return out


def kernel_ridge(kernel: Kernel, X, y, lam=None, Xnew=None, *, cv="loo", seed=0, loo: bool = True) -> KernelRidgeResult:
    """Kernel ridge regression: α = (𝕂 + λI)⁻¹Y, m̂(x) = Σᵢ αᵢ K(Xᵢ, x)   (seed 001; PRML 6.8–6.9).

    `kernel`: a Mercer kernel K from `bayeskern.kernels` (e.g. `RBF(lengthscale=h)`), evaluated by its
    `evaluate`. `X`: inputs Xᵢ (n, d); `y`: targets Yᵢ (n,); `Xnew`: where to evaluate m̂ (m, d).
    `lam`: λ fixed, 0 ≤ λ ≤ `LAM_MAX` (1e300); None or an array of candidates chooses λ (None: `default_lam_grid`).
    `cv`: how λ is chosen — "loo" (default): the closed-form leave-one-out residuals
    eᵢ = (yᵢ − ŷᵢ)/(1 − Hᵢᵢ), H = 𝕂(𝕂 + λI)⁻¹, over the whole grid from one eigendecomposition 𝕂 = QΛQᵀ
    (O(n³) once, then O(n²) per λ); an integer k ≥ 2: k-fold cross-validation on a partition drawn
    with `seed` (None, an int ≥ 0 or a numpy Generator). The smallest mean squared error wins (a SmoothingWarning if it is at the grid's edge).
    No intercept: m̂ is shrunk towards 0 (centre y first if that is not wanted), as in scikit-learn's
    `KernelRidge` (whose `alpha` is our λ). With λ fixed, α comes from a Cholesky factor of 𝕂 + λI
    (jitter only if it fails, reported); `loo=False` then skips the leave-one-out residuals (an
    extra O(n³) inverse from the factor), leaving `loo_mse` None.
    """
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a bayeskern.kernels kernel (a Mercer kernel), got {type(kernel).__name__}")
    X, y = check_data(X, y)
    Xnew = None if Xnew is None else check_data(X, Xnew=Xnew)[1]
    if not (cv == "loo" or (not isinstance(cv, bool) and isinstance(cv, int | np.integer))):
        raise ValueError(f"cv must be 'loo' or an integer number of folds k ≥ 2, got {cv!r}")
    seed, loo = check_seed(seed), check_flag(loo, "loo")
    K = kernel.evaluate(X)  # 𝕂ⱼₖ = K(Xⱼ, Xₖ)
    if not np.all(np.isfinite(K)):
        raise ValueError("kernel gives non-finite values K(X, X) on this X: check its hyperparameters against the scale of X")
    k = int(power_of_two(np.max(np.abs(y))))
    y_scaled = np.ldexp(y, -k)  # y/2ᵏ, |y/2ᵏ| < 1: everything is linear in y, so it is solved for y/2ᵏ and scaled back
    grid, lam_value = _check_lam(lam, K)
    # 𝕂 + λI can be PD for an indefinite 𝕂, which defines no RKHS (a fixed λ fitted Sigmoid and reported ‖m̂‖²_H = 0 for a
    # negative αᵀ𝕂α): refused as the LOO grid's eigendecomposition refuses it
    if grid is None or cv != "loo":
        check_psd_matrix(K, "the kernel matrix K(X, X)")
    scores = None
    if grid is not None:
        best, scores, fit = _choose_lam(K, y_scaled, grid, cv, seed)
        warn_at_grid_edge(grid, best, "the cross-validated λ =", scores=scores)
        lam_value = float(grid[best])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if grid is not None and cv == "loo":
            alpha, loo_resid, jitter = fit[0][:, best], fit[1][:, best], 0.0  # already exact at λ, from 𝕂 = QΛQᵀ
        else:
            # α = (𝕂 + λI)⁻¹Y by Cholesky; the LOO residuals eᵢ = αᵢ / [(𝕂 + λI)⁻¹]ᵢᵢ from the same factor
            L, jitter = cholesky(K + lam_value * np.eye(len(y)), name="K + lam I")
            alpha = cho_solve(L, y_scaled)
            loo_resid = _loo_residuals_cholesky(L, alpha) if loo and len(y) > 1 else None
        fitted = K @ alpha  # ŷ = 𝕂α
        norm2 = max(float(alpha @ fitted), 0.0)  # ‖m̂‖²_H = αᵀ𝕂α
        mean = fitted if Xnew is None else _predict(kernel, X, Xnew, alpha)
        loo_mse = None if loo_resid is None else float(np.mean(loo_resid**2))
        if not (np.all(np.isfinite(mean)) and np.isfinite(norm2) and (loo_mse is None or np.isfinite(loo_mse))):
            raise ValueError(f"the fit overflows float64 at lam = {lam_value:.3g}: give a larger lam")
        # back to the units of y: α, ŷ, m̂, e times 2ᵏ; squared errors and ‖m̂‖²_H times 4ᵏ
        alpha, fitted, mean = np.ldexp(alpha, k), np.ldexp(fitted, k), np.ldexp(mean, k)
        loo_resid = None if loo_resid is None else np.ldexp(loo_resid, k)
        norm2, loo_mse = (None if v is None else float(np.ldexp(v, 2 * k)) for v in (norm2, loo_mse))
        unscaled = None if scores is None else np.ldexp(scores, 2 * k)
    if not (np.all(np.isfinite(mean)) and np.isfinite(norm2) and (loo_mse is None or np.isfinite(loo_mse))
            and (scores is None or np.all(np.isfinite(unscaled) | ~np.isfinite(scores)))):
        raise ValueError(f"y is too large (max |y| = {np.max(np.abs(y)):.3g}): the fit's squares overflow float64; rescale y")
    cv_used = None if grid is None else (cv if cv == "loo" else int(cv))
    return KernelRidgeResult(
        alpha, mean, fitted, lam_value, loo_mse, loo_resid, float(np.sqrt(norm2)), norm2, cv_used, grid, unscaled, float(jitter),
    )


def _choose_lam(K: np.ndarray, y: np.ndarray, grid: np.ndarray, cv, seed):
    """(best index, validation scores, (α, e) per λ for "loo" else None) over the λ grid, the smallest score winning."""
    n = len(y)
    fit = None
    with np.errstate(over="ignore", invalid="ignore"):
        if cv == "loo":
            if n < 2:
                raise ValueError("leave-one-out needs at least 2 data points")
            eig, Q = psd_eigh(K, "the kernel matrix K(X, X)")
            fit = _loo_scores_eigen(grid, eig, Q, y)
            scores = np.mean(fit[1] ** 2, axis=0)
        else:
            k = check_integer(cv, "cv", 2)
            if k > n:
                raise ValueError(f"cv = {k} folds but there are only {n} data points")
            scores = _kfold_scores(K, y, grid, k, seed)
    scores = np.where(np.isfinite(scores), scores, np.inf)
    if not np.any(np.isfinite(scores)):
        raise ValueError("no candidate lam gives a finite validation error: give other candidates")
    return int(np.argmin(scores)), scores, fit


def _check_lam(lam, K: np.ndarray):
    """(grid, None) for candidates (None: `default_lam_grid`), or (None, λ) for one value; each in [0, LAM_MAX]."""
    if lam is None:
        return default_lam_grid(K), None
    reject_complex(lam, "lam")
    a = check_number(lam, "lam", nonnegative=True)
    if a.ndim > 1 or a.size == 0:
        raise ValueError(f"lam must be a number ≥ 0 or a 1-D grid of candidates, got shape {a.shape}")
    if np.any(a > LAM_MAX):
        raise ValueError(f"lam must be at most {LAM_MAX:.0e} (the solves divide by K's eigenvalues + lam), got {lam!r}")
    return (a, None) if a.ndim == 1 else (None, float(a))
