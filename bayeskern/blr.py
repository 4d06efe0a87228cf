"""Bayesian linear regression in weight space: the PyMC likelihood, the analytic posterior and the evidence.

Model: w ~ N(0, Σ), t = Φw + ε, ε ~ N(0, σ²I), with Φ = φ(X) from a feature map. Everything is
computed through Σ = L Lᵀ and B = I + ΨᵀΨ/σ² with Ψ = ΦL (M × M), or, with fewer data than features,
D = I + ΨΨᵀ/σ² (n × n: the kernel trick, D/σ² is the Gram matrix of k(x, x′) = φ(x)ᵀΣφ(x′) plus I).
B and D have the same eigenvalues besides 1s, all ≥ 1, so neither factorisation needs jitter in exact
arithmetic, and Σ is never inverted. The PyMC likelihood (n ≥ M) is the weight-space evidence Op
(`bayeskern._weight_space_evidence`), on the R factor of [Φ | t] (`DesignRows.r_factor`).
"""

import functools
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.linalg

from bayeskern._linalg import (
    EPS, LOG_2PI, announce_jitter, cho_solve, escalate_jitter, exact_cholesky, jitter_scale, loo_gaussian, solve_lower,
)
from bayeskern._compile import untraced
from bayeskern._evidence_iteration import best_fixed_point
from bayeskern._gaussian_logp import gaussian_logp
from bayeskern._weight_space_evidence import weight_space_evidence
from bayeskern._results import Posterior
from bayeskern._validation import (
    PACKAGE_DIR, check_name, check_prior_cov, check_sigma, check_weight_precision, is_symbolic, numerical_failure, owned_data,
    offset_ratio,
)
from bayeskern.conditioned import Conditioned
from bayeskern.features import design_matrix, n_features
from bayeskern.likelihood import Likelihood, attach

__all__ = ["BLRLikelihood", "BLRPosterior", "WeightSpaceBLR", "condition", "likelihood", "posterior"]


def _prior_factor(S, M: int, lib):
    """L with Σ = L Lᵀ as `_times_factor` takes it — the diagonal √Σ (M,) for Σ a scalar (s·I) or a vector, else the
    lower Cholesky factor; `lib` is np or pt."""
    if S.ndim <= 1:
        return lib.sqrt(lib.broadcast_to(S, (M,)))
    return pt.linalg.cholesky(S) if lib is pt else scipy.linalg.cholesky(S, lower=True)


def _times_factor(A, L):
    """A L, with L a matrix or, as a vector, its diagonal (then A's columns are scaled: O(size of A), not a product)."""
    return A * L if L.ndim == 1 else A @ L


def _log_evidence_symbolic(t, Phi, S, sigma, n_by_n: bool = False):
    """log N(t | 0, ΦΣΦᵀ + σ²I): from the R factor of [Φ | t] by `weight_space_evidence` (O(M³) an evaluation, the QR
    constant-folded with the data; Σ a scalar, a vector or a matrix); or, `n_by_n` (fewer points than features), through
    C = ΦΣΦᵀ + σ²I itself by the marginal Gaussian's Op (`gaussian_logp`, exact gradient), O(n²M). A matrix Σ is read from
    its lower triangle either way."""
    n, M = Phi.shape[0], Phi.shape[1]
    if n_by_n:  # a vector for diagonal Σ: ΦΣ scales Φ's columns; a matrix from its lower triangle, as the Op reads it
        Sigma = pt.broadcast_to(S, (M,)) if S.ndim < 2 else pt.tril(S) + pt.tril(S, -1).T
        return gaussian_logp(pt.dot(_times_factor(Phi, Sigma), Phi.T), t, sigma**2)  # K = ΦΣΦᵀ (no √Σ: finite ∂ at 0)
    prior = S if S.ndim == 2 else pt.broadcast_to(S, (M,))
    return weight_space_evidence(_r_factor(Phi, t), n, prior, sigma**2)


def _r_factor(Phi, t):
    """(S, c, ρ²) of `DesignRows.r_factor`, symbolically, for n ≥ M (the weight-space regime): the R factor of [Φ | t],
    which PyTensor's constant folding computes once when Φ and t are data. PyTensor's R is n × (M + 1), zero below the
    diagonal: ρ² = R[M, M]² if n > M, and 0 (t in Φ's span, R[M:, M] empty) if n = M."""
    M = Phi.shape[1]
    R = pt.linalg.qr(pt.concatenate([Phi, t[:, None]], axis=1), mode="r")
    return R[:M, :M], R[:M, M], pt.sum(pt.square(R[M:, M]))


def likelihood(name: str, X, y, features, prior_cov, sigma, collapsed: bool = False, **kwargs):
    """Add Bayesian linear regression t = Φw + ε to the current PyMC model.

    `features`: φ, a feature map or callable X → Φ (n, M). `prior_cov`: Σ, the prior covariance of
    w — a scalar α⁻¹, a vector (diagonal), an (M, M) SPD matrix, or a PyMC random variable of those
    shapes. `sigma`: σ > 0, the noise standard deviation. With `collapsed=False` the weights are
    explicit: `{name}_weights` ~ N(0, Σ) and t ~ N(Φw, σ²I). With `collapsed=True` they are
    integrated out: t ~ N(0, ΦΣΦᵀ + σ²I), evaluated in weight space — in O(M³) from the R factor of [Φ | t] — or with
    fewer points than features (n < M) through the n × n covariance itself in O(n² M). A matrix Σ is read from its lower
    triangle, as its Cholesky factor reads it.
    Extra keyword arguments go to the observed distribution. Returns the observed variable.
    """
    name, (X, t) = check_name(name), owned_data(X, y)  # (kept by the likelihood's record: not the caller's arrays)
    Phi = design_matrix(features, X, "features")
    _warn_if_far_from_zero(features, X, Phi)
    M = Phi.shape[1]
    S = check_prior_cov(prior_cov, M)
    sigma = check_sigma(sigma, allow_zero=False)
    S_t = pt.as_tensor_variable(S)
    if not collapsed:
        if S_t.ndim == 2:
            w = pm.MvNormal(f"{name}_weights", mu=pt.zeros(M), cov=S_t)
        else:
            w = pm.Normal(f"{name}_weights", mu=0.0, sigma=pt.sqrt(S_t), shape=M)
        return pm.Normal(name, mu=pt.dot(Phi, w), sigma=sigma, observed=t, **kwargs)

    def generate(Phi, S, sigma, size):
        L = _prior_factor(S, Phi.shape[1], pt)
        z = pm.Normal.dist(0.0, 1.0, shape=(Phi.shape[1],))
        return pt.dot(Phi, _times_factor(z, L.T)) + pm.Normal.dist(0.0, sigma, shape=(Phi.shape[0],))  # Φw + ε, w = Lz

    n_by_n = Phi.shape[0] < M

    def logp(value, Phi, S, sigma):
        return _log_evidence_symbolic(value, Phi, S, sigma, n_by_n)

    core = {0: "()", 1: "(m)", 2: "(m,m)"}[S_t.ndim]
    with untraced():  # the likelihood's graph: no creation stack recorded
        obs = pm.CustomDist(
            name, pt.as_tensor_variable(Phi), S_t, sigma, dist=generate, logp=logp,
            signature=f"(n,m),{core},()->(n)", observed=t, **kwargs,
        )
    return attach(obs, BLRLikelihood(X, t, sigma, features, S, DesignRows(features, X, t, Phi)))


def _feature_kernel(features, prior_cov):
    """k(x, x′) = φ(x)ᵀΣφ(x′), the kernel whose Gram matrix is the prior covariance of f = Φw."""
    from bayeskern.kernels import FeatureKernel  # kernels import features; blr stays below kernels

    return FeatureKernel(features, prior_cov)


@dataclass(frozen=True)
class BLRLikelihood(Likelihood):
    """The record of t ~ N(0, ΦΣΦᵀ + σ²I) in a PyMC model: data, σ, the feature map and Σ (σ, Σ may be symbolic).

    `rows`: Φ(X) and its statistics ΦᵀΦ, Φᵀt, computed once when the model is built (the features hold
    no hyperparameters), so conditioning at each MCMC draw does not evaluate the feature map again.
    """

    X: np.ndarray
    y: np.ndarray
    sigma: object
    features: object
    prior_cov: object
    rows: "DesignRows" = field(repr=False)

    def hyperparameters(self) -> list:
        return [self.sigma, self.prior_cov]

    def with_values(self, value) -> "BLRLikelihood":
        return BLRLikelihood(self.X, self.y, float(value(self.sigma)), self.features, value(self.prior_cov), self.rows)

    def gram_kernel(self):
        return _feature_kernel(self.features, self.prior_cov)

    def weight_space(self) -> tuple:
        return self.features, self.prior_cov

    def check_inputs(self, X: np.ndarray) -> None:
        check_prior_cov(self.prior_cov, n_features(self.features, X.shape[1]))

    def condition(self, predict_at=None) -> "WeightSpaceBLR":  # (predictions cost O(M²m) from the posterior of w: nothing to prepare)
        return _condition_on(self.features, self.X, self.y, float(self.sigma), self.prior_cov, self.rows)

    def size(self) -> int:
        return max(len(self.y), self.rows.M)  # n × n or M × M, and Φ (n × M) in between

    def start_from_data(self) -> dict:
        """σ = β^(-1/2) and Σ = α⁻¹ (those of them that are symbolic; σ given as a number holds β) at the evidence's best
        fixed point from data-scaled starts (`_evidence_iteration.best_fixed_point`, PRML 3.92 and 3.95); {} for a Σ
        that is a number, a vector or a matrix, or a σ whose β = σ⁻² float64 cannot hold."""
        if not is_symbolic(self.prior_cov) or pt.as_tensor_variable(self.prior_cov).ndim != 0:
            return {}
        with np.errstate(over="ignore"):
            beta = None if is_symbolic(self.sigma) else float(np.float64(self.sigma) ** -2.0)
        found = best_fixed_point(self.rows, self.y, beta) if beta is None or np.isfinite(beta) else None
        if found is None:
            return {}
        alpha, beta = found
        return ({self.sigma: beta**-0.5} if is_symbolic(self.sigma) else {}) | {self.prior_cov: 1.0 / alpha}

    def on_rows(self, rows: np.ndarray) -> "BLRLikelihood":
        held = None if self.rows.Phi is None else self.rows.Phi[rows]
        return replace(self, X=self.X[rows], y=self.y[rows], rows=DesignRows(self.features, self.X[rows], self.y[rows], held))


#: inputs farther from 0 than this many standard deviations sit "far from zero" (`offset_ratio`)
_FAR_FROM_ZERO = 10.0
#: a column-scaled Φ with a condition number above 1/√ε has a ΦᵀΦ that is singular to round-off
_ILL_CONDITIONED = 1.0 / np.sqrt(EPS)


def _offset_advice(X: np.ndarray) -> str:
    ratio = offset_ratio(X)
    if ratio > _FAR_FROM_ZERO:
        return (
            f"X sits far from zero for its spread (|column mean| / std up to {ratio:.3g}): centre it "
            "(X − X.mean(axis=0)) or standardise it before the feature map"
        )
    return "standardise X, or choose features of comparable scale"


def _warn_if_far_from_zero(features, X: np.ndarray, Phi: np.ndarray) -> None:
    """RuntimeWarning when X sits far from 0 and φ(X) is singular to round-off because of it.

    In a PyMC model σ and Σ are not known yet, so the B of `_factor_precision` cannot be checked; the
    column-scaled Φ can: cond(Φ D⁻¹) > 1/√ε means ΦᵀΦ has lost every digit, and the log density
    computed from it is noise (e.g. polynomial features at x ≈ 1e6).
    """
    if offset_ratio(X) <= _FAR_FROM_ZERO:
        return
    norms = np.linalg.norm(Phi, axis=0)
    scaled = Phi[:, norms > 0] / norms[norms > 0]
    if scaled.shape[1] > 1 and np.linalg.cond(scaled) > _ILL_CONDITIONED:
        warnings.warn(
            f"the features {features!r} of X are singular to round-off (condition number of the "
            f"column-scaled design matrix {np.linalg.cond(scaled):.3g}), so the likelihood is inaccurate: "
            + _offset_advice(X),
            RuntimeWarning,
            skip_file_prefixes=(PACKAGE_DIR,),
        )


#: jitter on C's diagonal is extra noise variance; it is accepted only up to this fraction of mean(t²)
_NEGLIGIBLE_NOISE = 1e-6


def _factor_precision(
    gram: np.ndarray, sigma: float, features, X: np.ndarray, t: np.ndarray, matrix: str = "B = I + ΨᵀΨ/σ²"
) -> tuple[np.ndarray, float]:
    """L_B with B = I + G/(σ² + δ) = L_B L_Bᵀ, and the jitter δ added to C = ΨΨᵀ + σ²I's diagonal (0.0 if none).

    `gram` G is ΨᵀΨ (M × M, B of the weights) or ΨΨᵀ (n × n, D of the data; `matrix` names it in the error): tr G is the
    same, and so is the rule.
    The package's rule (`_linalg`): B's eigenvalues are ≥ 1 in exact arithmetic, so a factorisation
    that fails or is singular to round-off means that rounding lost it. Far from zero (X's offset), that
    is the features spanning too many orders of magnitude: a ValueError naming `features` and X. Else it
    is σ so small that C is singular to round-off (an interpolating fit, an EB noise run to its edge):
    jitter δ on C's diagonal, in the steps of `JITTER_STEPS` relative to mean diag C, as for a kernel, but
    only while δ ≤ _NEGLIGIBLE_NOISE·mean(t²) — beyond that the features themselves are ill-conditioned
    (e.g. high powers of x ∈ [0, 1000]) and jitter would change the model: the ValueError.
    """
    LB = exact_cholesky(np.eye(len(gram)) + gram / sigma**2)
    if LB is not None:
        return LB, 0.0
    if offset_ratio(X) <= _FAR_FROM_ZERO:
        negligible = _NEGLIGIBLE_NOISE * float(np.mean(t**2))  # jitter is noise: only while the data cannot tell
        with_noise = lambda j: exact_cholesky(np.eye(len(gram)) + gram / (sigma**2 + j)) if j <= negligible else None  # noqa: E731
        LB, jitter = escalate_jitter(with_noise, jitter_scale(np.trace(gram) / len(t) + sigma**2))  # mean diag C = tr(ΨᵀΨ)/n + σ²
        if LB is not None:
            announce_jitter("Phi Sigma Phi^T + sigma^2 I", jitter, sigma**2)
            return LB, jitter
    raise ValueError(
        f"the features {features!r} of X are too ill-conditioned for float64: {matrix} "
        f"(Ψ = φ(X)L, eigenvalues ≥ 1 in exact arithmetic) is not numerically positive definite; {_offset_advice(X)}"
    )


@dataclass(frozen=True)
class BLRPosterior(Posterior):
    """The analytic BLR posterior: weights N(m_N, S_N), the predictive at Xnew and the evidence.

    `weights_mean`: m_N = σ⁻² S_N Φᵀt. `weights_cov`: S_N = (Σ⁻¹ + σ⁻²ΦᵀΦ)⁻¹ (PRML 3.53–3.54).
    `mean`: Φ*m_N. `cov`: Φ*S_NΦ*ᵀ, plus σ²I when `include_noise` (PRML 3.58–3.59).
    `log_marginal_likelihood`: the evidence log p(t) (PRML 3.86 with a general Σ).
    """

    weights_mean: np.ndarray
    weights_cov: np.ndarray


#: Φ is produced in row blocks of at most this many entries (32 MB) when it is not held whole, so memory
#: stays O(M² + block) however many data points there are
BLOCK_ENTRIES = 2**22


def _r_of_stacked(R: np.ndarray, block: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The R factor of [R; Φ_b | t_b]: R of [Φ | t] over the rows so far, extended by a block (TSQR)."""
    return np.linalg.qr(np.vstack([R, np.column_stack([block, t])]), mode="r")


def _r_statistics(R: np.ndarray, M: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(S, c, ρ²) from the R factor of [Φ | t] (min(n, M + 1) rows): k = min(n, M) rows of S and c; ρ = R[M, M], or 0."""
    k = min(R.shape[0], M)
    rr = float(R[M, M] ** 2) if R.shape[0] > M else 0.0
    return np.ascontiguousarray(R[:k, :M]), np.ascontiguousarray(R[:k, M]), rr


class DesignRows:
    """Φ = φ(X) of the training inputs, by row blocks, with Φᵀt and ‖Φ‖²_F accumulated once, ΦᵀΦ (and the R factor of
    [Φ | t]) when first read.

    `Phi`: Φ held whole (then it is the only block); None computes it from the feature map (M columns):
    held whole if it fits in one block of BLOCK_ENTRIES or has fewer rows than columns (then it is smaller than the
    M × M matrices the solver would otherwise form), else streamed, ⌊BLOCK_ENTRIES / M⌋ rows at a time, each block
    computed when needed and never kept.
    """

    def __init__(self, features, X: np.ndarray, t: np.ndarray, Phi: np.ndarray | None = None):
        self.M = Phi.shape[1] if Phi is not None else n_features(features, X.shape[1])
        if Phi is None and (len(X) * self.M <= BLOCK_ENTRIES or len(X) < self.M):
            Phi = design_matrix(features, X)
        self.features, self.X, self.Phi, self._t = features, X, Phi, t
        self.proj, self.sum_of_squares = np.zeros(self.M), 0.0
        streamed = np.zeros((self.M, self.M)) if Phi is None else None  # a second pass would compute Φ again
        for rows, block in self.blocks():
            self.proj += block.T @ t[rows]  # Φᵀt = Σ_b Φ_bᵀt_b
            self.sum_of_squares += float(np.sum(block**2))  # ‖Φ‖²_F = tr ΦᵀΦ
            if streamed is not None:
                streamed += block.T @ block  # ΦᵀΦ = Σ_b Φ_bᵀΦ_b
        if streamed is not None:
            self.gram = streamed

    @functools.cached_property
    def gram(self) -> np.ndarray:
        """ΦᵀΦ (M × M): accumulated in the constructor's pass when Φ is streamed; from the Φ held whole when first read
        (not at all by a solver with fewer data than features)."""
        return self.Phi.T @ self.Phi

    @functools.cached_property
    def r_factor(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(S, c, ρ²) with Φ = QS, c = Qᵀt and ρ² = ‖t − QQᵀt‖² for a Q of k = min(n, M) orthonormal columns, what
        `weight_space_evidence` reads. Φ held whole: the rows of the R factor of [Φ | t] (Householder QR, backward
        stable: tᵀC⁻¹t becomes a sum of squares). Φ streamed (n·M above BLOCK_ENTRIES, the large-n HSGP): from ΦᵀΦ and
        Φᵀt of the constructor's pass, S = Lᵀ with ΦᵀΦ = LLᵀ, c = L⁻¹Φᵀt, ρ² = tᵀt − ‖c‖² — no QR of n rows (which
        cost ~6 s a pass at n = 10⁶, M = 121), at the accuracy of the statistics (ρ² loses ε·tᵀt); where ΦᵀΦ is not
        numerically positive definite, a second pass accumulates the R factor by blocks (TSQR)."""
        if self.Phi is None:
            try:
                L = scipy.linalg.cholesky(self.gram, lower=True)
                c = scipy.linalg.solve_triangular(L, self.proj, lower=True)
                return np.ascontiguousarray(L.T), c, max(float(self._t @ self._t - c @ c), 0.0)
            except np.linalg.LinAlgError:
                pass  # by blocks, below
        R = np.zeros((0, self.M + 1))
        for rows, block in self.blocks():  # (Φ held whole: its one block)
            R = _r_of_stacked(R, block, self._t[rows])
        return _r_statistics(R, self.M)

    def blocks(self):
        """(rows, Φ[rows]) pairs covering every training point in order."""
        if self.Phi is not None:
            yield slice(0, len(self.Phi)), self.Phi
            return
        step = max(1, BLOCK_ENTRIES // self.M)
        for i in range(0, len(self.X), step):
            yield slice(i, i + step), design_matrix(self.features, self.X[i : i + step])


class WeightSpaceBLR(Conditioned):
    """The BLR solver: B = I + ΨᵀΨ/σ² (M × M, Ψ = ΦL, Σ = LLᵀ) factorised once — or, with fewer data than features
    (n < M, Φ held whole), D = I + ΨΨᵀ/σ² (n × n, the kernel trick) instead: the smaller of the two.

    `weights_mean`: m_N = σ⁻² S_N Φᵀt. `weights_cov`: S_N = (Σ⁻¹ + σ⁻²ΦᵀΦ)⁻¹ (PRML 3.53–3.54), formed when first
    read. B's and D's eigenvalues are ≥ 1, so `jitter` is 0.0 unless σ is so small that C = ΦΣΦᵀ + σ²I is singular
    to round-off (then it was added to C's diagonal, as for a kernel). Weights (n ≥ M): one M × M Cholesky
    factorisation from the statistics ΦᵀΦ, Φᵀt of `rows` (`DesignRows`) — a scalar or diagonal Σ scales them, a
    matrix Σ multiplies —, one pass over Φ's rows for the residual, O(mM²) per prediction. Data (n < M): O(n²M) for
    ΨΨᵀ, one n × n factorisation, O(nmM) per prediction, no M × M matrix but S_N when read (O(M³) more either way).
    """

    def __init__(self, features, X: np.ndarray, t: np.ndarray, sigma: float, S: np.ndarray, rows: DesignRows):
        self.features, self.X, self.targets, self.sigma, self.prior_cov, self._rows = features, X, t, sigma, S, rows
        check_weight_precision(rows.sum_of_squares, S, sigma)
        n, M = len(t), rows.M
        self._prior_chol = L = _prior_factor(S, M, np)  # Σ = L Lᵀ
        # Ψ = ΦL, for D (Φ is held whenever n < M); `_LB` is L_B, or L_D on the n × n route
        self._Psi = _times_factor(rows.Phi, L) if rows.Phi is not None and n < M else None
        if self._Psi is None:
            gram = _times_factor(_times_factor(rows.gram, L).T, L)  # ΨᵀΨ = Lᵀ(ΦᵀΦ)L
            self._LB, self.jitter = LB, jitter = _factor_precision(gram, sigma, features, X, t)  # B = I + ΨᵀΨ/s² = L_B L_Bᵀ
            self._noise_var = s2 = sigma**2 + jitter  # s² = σ² (+ jitter, C's diagonal as factorised)
            v = cho_solve(LB, _times_factor(rows.proj, L)) / s2  # v = B⁻¹Ψᵀt/s² = L⁻¹m_N
        else:
            D_gram = self._Psi @ self._Psi.T  # ΨΨᵀ: D = I + ΨΨᵀ/s² = L_D L_Dᵀ
            self._LB, self.jitter = LB, jitter = _factor_precision(D_gram, sigma, features, X, t, "D = I + ΨΨᵀ/σ²")
            self._noise_var = s2 = sigma**2 + jitter
            self._alpha = cho_solve(LB, t) / s2  # C⁻¹t = D⁻¹t/s²  (C = s²D)
            v = self._Psi.T @ self._alpha  # v = ΨᵀC⁻¹t = B⁻¹Ψᵀt/s² = L⁻¹m_N  (push-through)
        self.weights_mean = _times_factor(v, L.T)  # m_N = L v = s⁻² S_N Φᵀ t   (PRML 3.53)
        # log p(t) = −½ tᵀC⁻¹t − n log s − ½ log|B| − n/2 log 2π;  |D| = |B| (Sylvester)
        quad = self._quadratic_form(v, s2)
        self.log_marginal_likelihood = float(-0.5 * quad - 0.5 * n * np.log(s2) - np.sum(np.log(np.diag(LB))) - 0.5 * n * LOG_2PI)

    def _quadratic_form(self, v: np.ndarray, s2: float) -> float:
        """tᵀC⁻¹t. Weights: ‖t − Φm_N‖²/s² + m_NᵀΣ⁻¹m_N (m_NᵀΣ⁻¹m_N = ‖v‖²), one pass over Φ's rows. Data (n < M):
        ‖L_D⁻¹t‖²/s² (C = s²L_D L_Dᵀ), a sum of squares; the residual form would round to (ε‖t‖)²/s², which grows as
        σ → 0 while t stays in Φ's span (1e-5 nats off at σ = 1e-13, where an EB noise runs to its edge)."""
        if self._Psi is not None:
            z = solve_lower(self._LB, self.targets)
            return float(z @ z) / s2
        residual = sum(np.sum((self.targets[r] - block @ self.weights_mean) ** 2) for r, block in self._rows.blocks())
        return residual / s2 + float(v @ v)

    @functools.cached_property
    def _G(self) -> np.ndarray:
        """G = L_B⁻¹Lᵀ, so that S_N = L B⁻¹ Lᵀ = GᵀG (O(M³): formed for the weights' covariance and draws only)."""
        L = self._prior_chol
        return solve_lower(self._LB, np.diag(L) if L.ndim == 1 else L.T)

    @functools.cached_property
    def weights_cov(self) -> np.ndarray:
        if self._Psi is None:
            return self._G.T @ self._G  # S_N = GᵀG
        W = solve_lower(self._LB, self._Psi) / np.sqrt(self._noise_var)  # W = L_D⁻¹Ψ/s: B⁻¹ = I − WᵀW (Woodbury)
        inner = np.eye(self._rows.M) - W.T @ W
        L = self._prior_chol.T
        S_N = _times_factor(_times_factor(inner, L).T, L).T  # S_N = L B⁻¹ Lᵀ
        return 0.5 * (S_N + S_N.T)  # symmetric to the bit, as GᵀG is

    def _whitened(self, Phi: np.ndarray) -> np.ndarray:
        """L_B⁻¹Ψᵀ for the rows Φ (Ψ = ΦL): its columns' squared norms are ψᵀB⁻¹ψ, O(M² · rows)."""
        return solve_lower(self._LB, _times_factor(Phi, self._prior_chol).T)

    @property
    def gram_kernel(self):
        return _feature_kernel(self.features, self.prior_cov)

    def _latent(self, Xnew, full_cov):
        return self._from_features(design_matrix(self.features, Xnew), full_cov)

    def _from_features(self, Phi_new, full_cov):
        """Mean, variance and (with `full_cov`) covariance of f = Φ*w at the points whose features are `Phi_new`."""
        mean = Phi_new @ self.weights_mean  # y(x) = m_Nᵀ φ(x)   (PRML 3.58)
        if self._Psi is not None:  # Φ*S_NΦ*ᵀ = Ψ*Ψ*ᵀ − UᵀU, U = L_D⁻¹ΨΨ*ᵀ/s  (Woodbury, B⁻¹ = I − ΨᵀD⁻¹Ψ/s²), O(nmM)
            Psi_new = _times_factor(Phi_new, self._prior_chol)
            U = solve_lower(self._LB, self._Psi @ Psi_new.T) / np.sqrt(self._noise_var)
            var = np.maximum(np.sum(Psi_new**2, axis=1) - np.sum(U**2, axis=0), 0.0)  # a difference: clipped at 0
            return mean, var, (Psi_new @ Psi_new.T - U.T @ U if full_cov else None)
        H = self._whitened(Phi_new)  # H = GΦ*ᵀ = L_B⁻¹LᵀΦ*ᵀ: Φ*S_NΦ*ᵀ = HᵀH
        var = np.sum(H**2, axis=0)  # σ²_N(x) − σ² = φ(x)ᵀ S_N φ(x)   (PRML 3.59)
        return mean, var, (H.T @ H if full_cov else None)

    def _loo(self):
        """Leave-one-out through Woodbury, O(nM²): C⁻¹ = σ⁻²(I − ΨB⁻¹Ψᵀ/σ²), only its diagonal formed; with fewer data
        than features from C = s²D's own factor."""
        if self._Psi is not None:
            return loo_gaussian(np.sqrt(self._noise_var) * self._LB, self.targets, self._alpha)  # L_C = s·L_D
        s2, parts = self._noise_var, []
        for rows, block in self._rows.blocks():
            W = self._whitened(block)  # ψᵢᵀB⁻¹ψᵢ = ‖L_B⁻¹ψᵢ‖², ψᵢ = Lᵀφᵢ
            d = (1.0 - np.sum(W**2, axis=0) / s2) / s2  # [C⁻¹]ᵢᵢ
            r = (self.targets[rows] - block @ self.weights_mean) / s2  # C⁻¹t = σ⁻²(t − Φm_N)
            parts.append((d, r))
        d, r = (np.concatenate(p) for p in zip(*parts))
        # μᵢ = tᵢ − [C⁻¹t]ᵢ/[C⁻¹]ᵢᵢ, σᵢ² = 1/[C⁻¹]ᵢᵢ (R&W 5.12), log N(tᵢ | μᵢ, σᵢ²) (R&W 5.10)
        return self.targets - r / d, 1.0 / d, -0.5 * LOG_2PI + 0.5 * np.log(d) - 0.5 * r * (r / d)  # (no r² to overflow)

    def prior_variance(self, Xnew) -> float:
        return float(np.max(np.sum(_times_factor(design_matrix(self.features, Xnew), self._prior_chol) ** 2, axis=1), initial=0.0))

    def draws_from(self, prediction, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws (n, m) of f(Xnew) = Φ*w, w ~ N(m_N, S_N), in weight space (M numbers a draw, no m × m eigendecomposition).

        With fewer data than features, by conditioning prior draws on the data (Wilson et al. 2020, "pathwise"), no
        M × M factor: w = m_N + L(z − ΨᵀC⁻¹(Ψz + s·e)), z ~ N(0, I_M), e ~ N(0, I_n), whose covariance is L B⁻¹ Lᵀ.
        """
        M = len(self.weights_mean)
        if self._Psi is None:
            w = self.weights_mean + rng.standard_normal((n, M)) @ self._G  # w = m_N + Gᵀz, S_N = GᵀG
        else:
            z, e = rng.standard_normal((n, M)), rng.standard_normal((n, len(self.targets)))
            s = np.sqrt(self._noise_var)
            a = cho_solve(self._LB, self._Psi @ z.T + s * e.T) / self._noise_var  # C⁻¹(Ψz + s·e), C = s²D
            w = self.weights_mean + _times_factor(z - (self._Psi.T @ a).T, self._prior_chol.T)
        return w @ design_matrix(self.features, prediction.Xnew).T

    def posterior(self, Xnew=None, include_noise: bool = False) -> "BLRPosterior":
        """The full posterior at `Xnew` as `BLRPosterior` (what `bayeskern.blr.posterior` returns)."""
        p = self.predict(Xnew, include_noise=include_noise, full_cov=True)
        return BLRPosterior(p.mean, p.cov, p.var, self.log_marginal_likelihood, p.include_noise, p.Xnew, self.weights_mean, self.weights_cov)


_NUMERICAL_FAILURE = (
    "the features of X are numerically rank-deficient or too large for float64 (B = I + ΨᵀΨ/sigma², Ψ = Φ·chol(prior_cov), "
    "cannot be factorised), or X, Xnew, y or sigma make the posterior overflow: scale or center X and y, use fewer "
    "features, a smaller prior_cov or a larger sigma"
)


@numerical_failure(_NUMERICAL_FAILURE)
def condition(features, X, y, sigma, prior_cov) -> WeightSpaceBLR:
    """w ~ N(0, Σ), t = Φw + ε, ε ~ N(0, σ²I) conditioned on t, in weight space: O(nM²) once, no n × n matrix.

    `features`: φ. `sigma`: σ > 0. `prior_cov`: Σ (scalar α⁻¹, vector, or SPD matrix). Returns a
    `WeightSpaceBLR` with `.weights_mean`, `.weights_cov`, `.log_marginal_likelihood`, `.jitter`,
    `.loo_log_predictive`, `.predict(Xnew, include_noise=False, full_cov=False)`, `.sample(Xnew, n, seed)`.
    """
    X, t = owned_data(X, y)  # (kept by the conditioned model: not the caller's arrays)
    sigma = float(check_sigma(sigma, allow_zero=False, numeric=True))
    return _condition_on(features, X, t, sigma, prior_cov, DesignRows(features, X, t, design_matrix(features, X, "features")))


def _condition_on(features, X, t, sigma: float, prior_cov, rows: "DesignRows") -> WeightSpaceBLR:
    """The weight-space solver on checked data and the rows of Φ(X); Σ is checked against Φ's columns here."""
    S = check_prior_cov(prior_cov, rows.M)
    if is_symbolic(S):
        raise ValueError("prior_cov must be numeric here; random variables belong in likelihood()")
    return WeightSpaceBLR(features, X, t, sigma, S, rows)


@numerical_failure(_NUMERICAL_FAILURE)
def posterior(features, X, y, sigma, prior_cov, Xnew=None, include_noise: bool = False) -> BLRPosterior:
    """The exact posterior of w ~ N(0, Σ), t = Φw + ε, ε ~ N(0, σ²I), and its predictive at Xnew.

    `features`: φ. `sigma`: σ > 0. `prior_cov`: Σ (scalar α⁻¹, vector, or SPD matrix). `Xnew`:
    where to predict (X if not given). `include_noise`: whether `cov`/`var` are for f = Φ*w (False)
    or for new observations (True). The same as `condition(...).posterior(Xnew, include_noise)`.
    """
    return condition(features, X, y, sigma, prior_cov).posterior(Xnew, include_noise)
