"""The Hilbert-space GP (Solin & Särkkä 2020): a stationary kernel as fixed Laplacian eigenfunctions with spectral-density variances.

On the box c ± L the kernel is k(x, x′) ≈ Σⱼ S_θ(√λⱼ) φⱼ(x) φⱼ(x′), with φⱼ, λⱼ the Dirichlet
eigenfunctions and eigenvalues of the Laplacian (PyMC's `calc_eigenvectors`, `calc_eigenvalues`) and S_θ
the kernel's spectral density (PyMC's `power_spectral_density`). Only the prior variances depend on θ,
so the GP is a Bayesian linear regression on a basis computed once: t ~ N(0, ΦVΦᵀ + σ²I), V = diag(v_θ).
Constant and linear parts of a sum stay exact, as the extra features 1 and x.
"""

import dataclasses
import warnings
from dataclasses import dataclass, field
from functools import singledispatch

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.gp.hsgp_approx import approx_hsgp_hyperparams, calc_eigenvalues
from pytensor.scalar.basic import Cast
from pytensor.tensor.elemwise import Elemwise

from bayeskern._compile import draw
from bayeskern._fills import filled
from bayeskern._linalg import TINY
from bayeskern._parameterised import bind_given
from bayeskern._validation import PACKAGE_DIR, as_inputs, check_kernel, check_name, check_number, check_sigma, is_symbolic, owned_data
from bayeskern._weight_space_evidence import weight_space_evidence
from bayeskern.blr import DesignRows, WeightSpaceBLR
from bayeskern.features import FeatureMap
from bayeskern.kernels import RBF, Constant, FeatureKernel, Kernel, Linear, Matern32, Matern52, Scaled, Sum
from bayeskern.likelihood import KernelLikelihood, attach

__all__ = ["HSGP", "HSGPLikelihood", "HilbertBasis", "ShortBasisWarning"]

#: the kernels HSGP approximates by their spectral density, with PyMC's names for `approx_hsgp_hyperparams`
_RULES = {RBF: "expquad", Matern52: "matern52", Matern32: "matern32"}
#: c when neither c nor L is given and the length scales allow it: PyMC's floor of the rule
C_MIN = 1.2
#: basis functions per input dimension chosen automatically are capped here (the cost is O(M³) per
#: evaluation with M = m^d): 1-D, 2-D, 3-D
M_MAX = {1: 600, 2: 40, 3: 14}
#: the variances are floored at this fraction of the largest: a feature's share of log p(t | θ) is at most ~v·n/σ², so
#: such a one weighs nothing; variances near the smallest normal float (1e-308) make BLAS multiply subnormal numbers,
#: which this machine's BLAS does 10–30× slower (ℓ = 0.7 on m = 600 at n = 900: 1.2 s an evaluation, against 50 ms).
#: Where the largest variance is below ~1e-208 (targets ×1e-150) the smallest normal float floors them instead, as
#: before: subnormal products come back, and with σ² near 1e-300 that floor weighs a little (0.03 nats, a review)
VARIANCE_FLOOR = 1e-100
#: the length-scale range of a random-variable length scale: these quantiles of its prior
PRIOR_QUANTILES = (0.01, 0.99)
#: prior draws for those quantiles
PRIOR_DRAWS = 2000
#: m and c left to the package, at numeric hyperparameters (a fit's optimum), are enlarged from PyMC's rule until a
#: finer basis changes log p(t | θ) by at most this many nats (`_converged`): PyMC's rule bounds the error of k, and
#: at a high signal-to-noise ratio that error still moves the evidence (−30 nats at the rule for ℓ = range/1.2, n = 1000)
BASIS_LML_TOL = 0.05
#: ... or by its round-off where that is larger: a change below this fraction of |log p| (targets ×1e150 give |log p| ~
#: 1e290, whose last bits move by 1e275 nats between bases that agree to 2e-14)
BASIS_LML_ROUNDOFF = 1e-12
#: the two larger bases log p is compared in, as (m factor, L factor) and a name: resolution (m doubled in the same box),
#: then room at the edges (the box widened 1.5× with 1.5× the functions: the same highest frequency)
LARGER_BASES = (((2.0, 1.0), "doubling m"), ((1.5, 1.5), "a 1.5× wider box with 1.5× the functions"))


def _without_casts(value):
    """`value` with the dtype casts PyMC puts around an observed variable peeled off (under floatX=float32 it casts y to
    float32 and back to the distribution's float64): the variable it observes."""
    while value.owner is not None and isinstance(value.owner.op, Elemwise) and isinstance(value.owner.op.scalar_op, Cast):
        value = value.owner.inputs[0]
    return value


class HilbertBasis(FeatureMap):
    """φ(x) = [Πₖ sin(√λⱼₖ (xₖ − cₖ + Lₖ))/√Lₖ]ⱼ ⊕ [1] ⊕ [x]: the Dirichlet eigenfunctions on c ± L, then the exact parts.

    `center` c and `L` (one per input column), `m` functions per column (a tensor product of Πm),
    `constant`/`linear`: whether the features 1 and x follow. Inputs outside c ± L get a warning:
    the eigenfunctions vanish at ±L and reflect beyond, so they are no GP there.
    """

    def __init__(self, center, L, m: tuple, constant: bool = False, linear: bool = False):
        self.m, self.constant, self.linear = tuple(int(k) for k in m), bool(constant), bool(linear)
        super().__init__(center=np.asarray(center, dtype=np.float64), L=np.asarray(L, dtype=np.float64))

    def _config(self):
        return (self.m, self.constant, self.linear)

    def n_features(self, d: int) -> int:
        return int(np.prod(self.m)) + self.constant + self.linear * d

    def _check_input_dim(self, d: int) -> None:
        if d != len(self.m):
            raise ValueError(f"the HSGP basis was built for {len(self.m)} input column(s) but X has {d}")

    @property
    def frequencies(self) -> np.ndarray:
        """ω = √λ (Πm, d): the frequencies at which the spectral densities weigh the eigenfunctions."""
        return np.sqrt(calc_eigenvalues(self.parameters()["L"], self.m))

    def _symbolic(self, X, p):
        omega = np.sqrt(calc_eigenvalues(p["L"], self.m))  # ωⱼ = √λⱼ = πj / 2L
        return hilbert_features(X, p["center"], p["L"], omega, self.constant, self.linear)

    def resized(self, m: tuple, L: np.ndarray) -> "HilbertBasis":
        """The same kind of basis around the same centre with `m` functions per column on the box of half-width `L`."""
        return HilbertBasis(self.parameters()["center"], L, m, self.constant, self.linear)

    def __call__(self, X) -> np.ndarray:
        X = as_inputs(X, "X")
        p = self.parameters()
        reach = np.max(np.abs(X - p["center"]), axis=0, initial=0.0)
        if np.any(reach > p["L"] * (1 + 1e-12)):
            k = int(np.argmax(reach / p["L"]))
            warnings.warn(
                f"inputs reach {reach[k]:.4g} from the HSGP box's centre {p['center'][k]:.4g} in column {k}, beyond its "
                f"half-width L = {p['L'][k]:.4g}: the Hilbert-space basis does not extend there (its functions vanish "
                "at ±L and reflect beyond), so predictions there are not the GP's; refit with a larger c or L",
                RuntimeWarning,
                skip_file_prefixes=(PACKAGE_DIR,),
            )
        return super().__call__(X)

    def _repr_args(self):
        p = self.parameters()
        return {"m": self.m, "center": np.round(p["center"], 6).tolist(), "L": np.round(p["L"], 6).tolist()}


def hilbert_features(X, center, L, omega, constant: bool, linear: bool):
    """[Πₖ sin(ωⱼₖ(xₖ − cₖ + Lₖ))/√Lₖ]ⱼ ⊕ [1] ⊕ [x] (PyMC's `calc_eigenvectors` for the Dirichlet boundary, with the
    frequencies ω (Πm, d) an input, so that a model's basis can change size after it is built)."""
    parts = [pt.prod(pt.sin(omega[None, :, :] * (X - center + L)[:, None, :]) / pt.sqrt(L), axis=2)]
    if constant:
        parts.append(filled(1.0, X.shape[0], 1))
    if linear:
        parts.append(X)
    return pt.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]


def _not_approximable(kernel: Kernel) -> ValueError:
    return ValueError(
        f"HSGP cannot approximate the kernel {kernel!r}: it needs a stationary kernel with a spectral density "
        "(RBF with scalar or ARD length scales, Matern32, Matern52), scaled and summed, where Constant and Linear "
        "parts stay exact; periodic, rational-quadratic, non-stationary kernels and products have no such basis. "
        "Use approx=bayeskern.approx.VFE(...) (inducing points, any PSD kernel) or the exact GP (approx=None)"
    )


@singledispatch
def _variances(kernel: Kernel, omega, bind) -> dict:
    """{"basis": S(ω) over the eigenfunctions, "constant": c, "linear": (d,)} — the prior variances of each feature group."""
    raise _not_approximable(kernel)


def _merge(parts: list) -> dict:
    out = {}
    for part in parts:
        for key, v in part.items():
            out[key] = out[key] + v if key in out else v  # Σ of kernels on one feature group: variances add
    return out


@_variances.register
def _(kernel: Sum, omega, bind):
    return _merge([_variances(k, omega, bind) for k in kernel.children])


@_variances.register
def _(kernel: Scaled, omega, bind):
    scale = bind(kernel)["scale"]
    return {key: scale * v for key, v in _variances(kernel.children[0], omega, bind).items()}  # s·k ↦ s·v


def _spectral(kernel, omega, bind):
    return {"basis": kernel._pymc(omega.type.shape[1], bind(kernel)).power_spectral_density(omega)}  # S_θ(√λⱼ)


for _cls in _RULES:
    _variances.register(_cls, _spectral)


@_variances.register
def _(kernel: Constant, omega, bind):
    return {"constant": pt.reshape(bind(kernel)["c"], (1,))}  # k = c: feature 1, variance c


@_variances.register
def _(kernel: Linear, omega, bind):
    return {"linear": pt.ones((omega.type.shape[1],), dtype="float64")}  # k = xᵀx′: features x, variances 1


_ORDER = ("basis", "constant", "linear")


def _variance_vector(kernel: Kernel, omega, bind):
    """v_θ over [eigenfunctions, 1, x], floored at VARIANCE_FLOOR times the largest (and at the smallest normal float): a
    spectral density that underflows or nearly does (high frequencies, long length scales) stays a variance that weighs
    nothing."""
    parts = _variances(kernel, omega, bind)
    v = pt.concatenate([pt.broadcast_to(parts[k], (omega.shape[0],)) if k == "basis" else parts[k] for k in _ORDER if k in parts])
    return pt.maximum(v, pt.maximum(TINY, VARIANCE_FLOOR * pt.max(v)))


def _stationary_parts(kernel: Kernel) -> list:
    return [node for node in kernel.walk() if type(node) in _RULES]


def _half_range(X: np.ndarray) -> np.ndarray:
    """S, the data's half-range per column: the box's half-width is c·S."""
    return (X.max(axis=0) - X.min(axis=0)) / 2.0


def _prior_length_scales(kernel: Kernel) -> bool:
    """Whether some stationary part's length scale is a random variable (its range read off its prior's quantiles)."""
    return any(is_symbolic(node.hyperparameters["lengthscale"]) for node in _stationary_parts(kernel))


def _lengthscale_range(kernel: Kernel, d: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(ℓmin, ℓmax) per input column over the stationary parts — numbers as given, random variables by their prior's
    quantiles; a scalar ℓ serves every column, an ARD one its own — and the rule."""
    low, high, rules = [], [], []
    for node in _stationary_parts(kernel):
        ell = node.hyperparameters["lengthscale"]
        if is_symbolic(ell):
            lo, hi = np.quantile(draw(ell, draws=PRIOR_DRAWS, random_seed=0), PRIOR_QUANTILES, axis=0)
        else:
            lo = hi = np.asarray(ell, dtype=np.float64)
        low.append(np.broadcast_to(lo, (d,))), high.append(np.broadcast_to(hi, (d,))), rules.append(_RULES[type(node)])
    # the roughest rule (largest a₂) decides m: Matérn 3/2 before 5/2 before the RBF
    rule = max(rules, key=["expquad", "matern52", "matern32"].index)
    return np.min(low, axis=0), np.max(high, axis=0), rule


class ShortBasisWarning(RuntimeWarning):
    """An HSGP basis given by the caller that PyMC's rule finds too small for the length scales it is conditioned at."""


def _resolution(node: Kernel, basis: HilbertBasis, S: np.ndarray, fitted: bool) -> list[str]:
    """The columns where `node`'s numeric length scale ℓ needs more than `basis` has by PyMC's rule (data half-range S):
    a box of half-width L ≥ c_rule·S, c_rule = max(a₁ℓ/S, 1.2), and m ≥ m_rule·(L/S)/c_rule functions (m ∝ c at fixed ℓ).
    Each message names what falls short and the setting that raises it (L = c·S); `fitted`: ℓ is a fit's optimum."""
    L, m = basis.parameters()["L"], basis.m
    ell = np.broadcast_to(np.asarray(node.hyperparameters["lengthscale"], dtype=np.float64), L.shape)
    messages = []
    for k in range(len(L)):
        needed_m, needed_L = _pymc_rule(S[k], ell[k], ell[k], _RULES[type(node)], L[k])  # (S = 0: the rule's limit)
        short = [(f"m ≥ {needed_m}", "m")] if m[k] < needed_m else []
        # (1e-8: `_pymc_rule` widens ℓ's range by 1e-9, and L = c_rule·S exactly would fall short of its own rule)
        short += [(f"L ≥ {needed_L:.3g}", "c" if S[k] > 0 else "L")] if L[k] < needed_L * (1 - 1e-8) else []
        if short:
            messages.append(
                f"HSGP: the {'fitted ' if fitted else ''}length scale {ell[k]:.3g} of {type(node).__name__} in column {k} is not "
                f"resolved by the basis (m = {m[k]}, L = {L[k]:.3g}, data half-range {S[k]:.3g}): PyMC's rule asks for "
                f"{' and '.join(asked for asked, _ in short)}; {'refit' if fitted else 'condition'} with a larger "
                f"{' and '.join(setting for _, setting in short)}, or measure the error with bayeskern.checks.approximation_error"
            )
    return messages


def _check_m(m, d: int) -> tuple | None:
    if m is None:
        return None
    ms = (m,) * d if np.ndim(m) == 0 else tuple(m)
    if len(ms) != d or any(isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in ms):
        raise ValueError(f"m must be a positive integer or one positive integer per input column ({d}), got {m!r}")
    return tuple(int(k) for k in ms)


@dataclass(frozen=True)
class HSGP:
    """The Hilbert-space approximation, for `approx=` of `bayeskern.gp.marginal_likelihood` and `bayeskern.gp.condition`.

    `m`: eigenfunctions per input column (an int, or one per column; Πm in all). `c`: the box's half-width
    as a multiple of the data's half-range S (L = c·S around the data's midpoint), c > 1. `L`: the half-width
    itself (instead of c). Left out, m and c follow PyMC's `approx_hsgp_hyperparams` rules from S and the
    length scales (a random variable's by its prior's 1 %–99 % quantiles), column by column (each column's S and
    length scales): c = max(a₁ℓmax/S, 1.2), m = a₂c·S/ℓmin (a₂L/ℓmin in a box L given), m capped at `M_MAX`.
    1–3 input columns.
    """

    m: object = None
    c: float | None = None
    L: object = None

    def __post_init__(self):
        if self.m is not None:
            _check_m(self.m, 1 if np.ndim(self.m) == 0 else len(self.m))
        if self.c is not None and self.L is not None:
            raise ValueError("give c or L, not both: L = c·S fixes the box either way")
        if self.c is not None and not (float(check_number(self.c, "c", positive=True, scalar=True)) > 1.0):
            raise ValueError(f"c must be > 1 (the box c·S must contain the data with room to spare), got {self.c!r}")
        if self.L is not None:
            check_number(self.L, "L", positive=True)

    def basis(self, kernel: Kernel, X: np.ndarray) -> HilbertBasis:
        """The basis for `kernel` on inputs X: the box from X's range and c (or L), m given or chosen."""
        kernel, d = check_kernel(kernel), X.shape[1]
        if d > 3:
            raise ValueError(
                f"HSGP needs 1–3 input dimensions (a tensor-product basis of Πm functions), but X has {d} columns: "
                "use approx=bayeskern.approx.VFE(...) (inducing points) for more"
            )
        groups = _variances(kernel, pt.tensor(shape=(None, d), dtype="float64"), bind_given)  # the ValueError, if any
        center = (X.max(axis=0) + X.min(axis=0)) / 2.0
        S = _half_range(X)
        if np.any(S <= 0) and self.L is None:
            raise ValueError("HSGP needs inputs that vary in every column (X's range is 0 in some column); give L")
        m, c = _check_m(self.m, d), self.c
        if "basis" in groups and (m is None or (c is None and self.L is None)):
            m, c, capped = _automatic(kernel, S, m, c, d, self.L)
            # a basis from the length scales' prior, which an empirical-Bayes fit re-chooses at its optimum, is only used
            # as it is by a sampler: `bayeskern.fit.mcmc` says it is capped (`sampling_warnings`), not the model
            if capped and not (self.automatic and _prior_length_scales(kernel)):
                warnings.warn(capped, RuntimeWarning, skip_file_prefixes=(PACKAGE_DIR,))
        L = np.broadcast_to(np.asarray(self.L, dtype=np.float64), (d,)) if self.L is not None else (C_MIN if c is None else c) * S
        if self.L is not None and np.any(L <= S):  # as c ≤ 1: a box that cuts the data off (log p was 950 nats off)
            k = int(np.argmax(L <= S))
            raise ValueError(f"L must exceed the data's half-range (the box centre ± L must contain the data with room to spare, "
                             f"c = L/S > 1), but column {k} has L = {L[k]:.4g} and half-range S = {S[k]:.4g}")
        return HilbertBasis(center, L, m if "basis" in groups else (1,) * d, "constant" in groups, "linear" in groups)

    @property
    def automatic(self) -> bool:
        """Whether the package chooses the basis (m, c and L all left out): then it is refined at fitted hyperparameters."""
        return self.m is None and self.c is None and self.L is None

    def marginal_likelihood(self, name: str, X, y, kernel: Kernel, sigma, **kwargs):
        """Add the collapsed HSGP likelihood t ~ N(0, ΦVΦᵀ + σ²I) to the current PyMC model (see `bayeskern.gp.marginal_likelihood`)."""
        name, (X, t) = check_name(name), owned_data(X, y)  # (kept by the likelihood's record: not the caller's arrays)
        record = _warn_if_capped(self._record(check_kernel(kernel), X, t, check_sigma(sigma, allow_zero=False)))
        record = dataclasses.replace(record, shared=SharedBasis.of(name, record.basis, record.rows))
        shared = record.shared
        y_data = pytensor.shared(t, name=f"{name}_y", shape=(None,))

        def generate(v, sigma, omega, center, L, size):  # the basis's shared variables come in as parameters
            Phi = hilbert_features(pt.as_tensor_variable(X), center, L, omega, record.basis.constant, record.basis.linear)
            z = pm.Normal.dist(0.0, 1.0, shape=(Phi.shape[1],))
            return pt.dot(Phi, pt.sqrt(v) * z) + pm.Normal.dist(0.0, sigma, shape=(Phi.shape[0],))  # Φw + ε, w ~ N(0, V)

        def logp(value, v, sigma, *basis):
            if _without_casts(value) is not y_data:
                raise ValueError("the collapsed HSGP likelihood holds the statistics of [Φ | t] for its observed y only")
            return weight_space_evidence(shared.r_factor, len(t), v, pt.square(sigma))

        obs = pm.CustomDist(name, record.variances(), record.sigma, shared.omega, shared.center, shared.L, dist=generate, logp=logp,
                            signature="(m),(),(j,d),(d),(d)->(n)", observed=y_data, **kwargs)
        return attach(obs, record)

    def condition(self, kernel: Kernel, X: np.ndarray, t: np.ndarray, sigma: float, box_of: np.ndarray | None = None) -> WeightSpaceBLR:
        """The weight-space solver of the HSGP at numeric hyperparameters (see `bayeskern.gp.condition`).

        `box_of`: the inputs whose range sets the box and m (X if None) — all the data, when X is a subsample.
        """
        record = _warn_if_capped(self._record(kernel, X, t, sigma, box_of))
        for message in record.resolution_messages(fitted=False):
            warnings.warn(message, ShortBasisWarning, skip_file_prefixes=(PACKAGE_DIR,))
        return record.condition()

    def _record(self, kernel: Kernel, X: np.ndarray, t: np.ndarray, sigma, box_of: np.ndarray | None = None) -> "HSGPLikelihood":
        """The likelihood record: the basis for `box_of` (X if None) and the statistics of Φ(X) with t; an automatic basis
        at numeric hyperparameters is enlarged until log p(t | θ) has converged in it (`_converged`)."""
        kernel._check_dims(X.shape[1], None)  # (length scales against X's columns, named, before the basis reads them)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            basis = self.basis(kernel, X if box_of is None else box_of)
        record = HSGPLikelihood(X, t, sigma, kernel, basis, DesignRows(basis, X, t), self)
        if self.automatic and not any(is_symbolic(v) for v in record.hyperparameters()):
            return _converged(record)  # (its measured verdict, `capped`, replaces what the rule said of the basis)
        for w in said:
            warnings.warn(w.message, w.category, skip_file_prefixes=(PACKAGE_DIR,))
        return record


def _warn_if_capped(record: "HSGPLikelihood") -> "HSGPLikelihood":
    """`record`, after a RuntimeWarning with its `capped` message if it has one (a basis used as it is)."""
    if record.capped:
        warnings.warn(record.capped, RuntimeWarning, skip_file_prefixes=(PACKAGE_DIR,))
    return record


def _pymc_rule(s: float, low: float, high: float, rule: str, box: float | None = None) -> tuple[int, float]:
    """(m, L_rule) by PyMC's `approx_hsgp_hyperparams` for half-range s and length scales in [low, high]: the box
    L_rule = c_rule·s, c_rule = max(a₁·high/s, 1.2), and m the functions it asks for in the box of half-width `box`
    (L_rule if None) — m ∝ the box at a fixed ℓmin. At s = 0 (one point, a constant column) the rule's limit,
    L_rule = a₁·high and m = a₂·box/low, which any half-range below a₁·high/1.2 gives (a₁ ≥ 3.2)."""
    s = s if s > 0 else 1e-3 * low
    m_rule, c_rule = approx_hsgp_hyperparams([-s, s], [low, max(high, low * (1 + 1e-9))], rule)
    L_rule = c_rule * s
    return int(np.ceil(m_rule * (1.0 if box is None else box / L_rule))), L_rule  # (the ratio first: huge s, box)


def _automatic(kernel: Kernel, S: np.ndarray, m, c, d: int, L=None) -> tuple[tuple, object, str | None]:
    """PyMC's rule for (m, c), column by column, from each column's half-range S and length scales: m for the box given
    (c or L) or the rule's, capped at M_MAX[d], and c given or the rule's (one per column); and, where m was left out and
    the rule asks for more than M_MAX[d] in some column, the message that says so (else None)."""
    low, high, rule = _lengthscale_range(kernel, d)
    L = None if L is None else np.broadcast_to(np.asarray(L, dtype=np.float64), (d,))
    boxes = [L[k] if L is not None else None if c is None else c * S[k] for k in range(d)]
    needed, L_rule = zip(*(_pymc_rule(float(S[k]), low[k], high[k], rule, boxes[k]) for k in range(d)), strict=True)
    if c is None and L is None:
        c = np.array(L_rule) / S  # (S > 0 in every column without L)
    capped = None
    if m is None:
        k = int(np.argmax(needed))
        if needed[k] > M_MAX[d]:
            capped = (f"HSGP: the smallest length scale {low[k]:.3g} of column {k} would need m = {needed[k]} basis functions "
                      f"(PyMC's rule, half-range {S[k]:.3g}, box half-width {boxes[k] or L_rule[k]:.3g}); using m = {M_MAX[d]}, "
                      f"which resolves length scales down to ≈ {low[k] * needed[k] / M_MAX[d]:.3g}. Give m explicitly, or a "
                      "length-scale prior that excludes what the data cannot resolve")
        m = tuple(min(max(n, 1), M_MAX[d]) for n in needed)
    return m, c, capped


def _lml(record: "HSGPLikelihood", basis: HilbertBasis) -> tuple[float, "HSGPLikelihood"]:
    """log p(t | θ) of a numeric record with another basis, and that record."""
    other = dataclasses.replace(record, basis=basis, rows=DesignRows(basis, record.X, record.y))
    return other.condition().log_marginal_likelihood, other


def _converged(record: "HSGPLikelihood") -> "HSGPLikelihood":
    """The numeric `record` with the basis, from its own (PyMC's rule) upwards, in which log p(t | θ) has converged:
    m doubled in the same box while doubling moves it by more than BASIS_LML_TOL (resolution), else the box widened
    1.5× with 1.5× the functions (the same highest frequency) while that does (room at the edges), each column as far
    as M_MAX lets it (the tests themselves may go beyond). `record` itself when its basis passes both; a basis that can
    grow no further before log p converged carries the message that says so (`capped`), for its caller to give."""
    (finer, _), (wider, _) = LARGER_BASES
    here = (record.condition().log_marginal_likelihood, record)
    while True:
        step = _lml(here[1], _scaled(here[1].basis, *finer))
        if not _moved(here[0], step[0]):
            step = _lml(here[1], _scaled(here[1].basis, *wider))
            if not _moved(here[0], step[0]):
                return here[1] if here[1].capped is None else dataclasses.replace(here[1], capped=None)
        grown = _under_cap(here[1].basis, step[1].basis)
        if grown.m == here[1].basis.m:  # no column can grow under M_MAX
            return dataclasses.replace(here[1], capped=_capped_message(here, step))
        here = step if grown.m == step[1].basis.m else _lml(here[1], grown)


def _moved(lml: float, other: float) -> bool:
    """Whether log p(t | θ) moved from `lml` to `other` by more than BASIS_LML_TOL nats and more than its round-off; a
    log p that is not finite has not settled."""
    threshold = max(BASIS_LML_TOL, BASIS_LML_ROUNDOFF * abs(lml))
    return not (np.isfinite(threshold) and abs(other - lml) <= threshold)  # (NaN: moved)


def _size(basis: HilbertBasis) -> int:
    return int(np.prod(basis.m))


def _scaled(basis: HilbertBasis, m_factor: float, L_factor: float) -> HilbertBasis:
    return basis.resized(tuple(int(np.ceil(m_factor * k)) for k in basis.m), L_factor * basis.parameters()["L"])


def _under_cap(here: HilbertBasis, step: HilbertBasis) -> HilbertBasis:
    """The larger basis `step` with each column's m cut to M_MAX, and `here`'s m and L in the columns already at M_MAX."""
    cap = M_MAX[len(step.m)]
    grows = np.array(here.m) < cap
    m = tuple(min(b, cap) if g else a for a, b, g in zip(here.m, step.m, grows, strict=True))
    return here.resized(m, np.where(grows, step.parameters()["L"], here.parameters()["L"]))


def _capped_message(here: tuple, bigger: tuple) -> str:
    """That log p had not converged in `here`'s basis (log p, record), by how much `bigger`'s moves it, beyond M_MAX."""
    m, d = bigger[1].basis.m, len(bigger[1].basis.m)
    return (f"HSGP: log p(t | θ) has not converged in the basis at m = {here[1].basis.m} (m = {m} moves it by "
            f"{abs(bigger[0] - here[0]):.3g} nats), and more than m = {M_MAX[d]} per column is not chosen automatically; "
            "give m and c, or use the exact GP or VFE")


@dataclass(frozen=True)
class SharedBasis:
    """A model's HSGP basis and statistics as shared variables of its graph — the R factor of [Φ | t] (S, c, ρ²:
    `DesignRows.r_factor`), the frequencies ω, the box's centre and half-width — so that a refit with another basis
    (`HSGPLikelihood.refined`) sets values, not graphs; `capped_at_fit`: the message, if any, that the basis kept at
    the last fit optimum `refined` judged stopped at M_MAX before log p(t | θ) converged in it."""

    r_factor: tuple
    omega: object
    center: object
    L: object
    capped_at_fit: list = field(default_factory=list, compare=False)

    @classmethod
    def of(cls, name: str, basis: HilbertBasis, rows: DesignRows) -> "SharedBasis":
        p, d = basis.parameters(), len(basis.m)
        S, c, rr = rows.r_factor
        r_factor = (pytensor.shared(S, name=f"{name}_S", shape=(None, None)), pytensor.shared(c, name=f"{name}_c", shape=(None,)),
                    pytensor.shared(np.float64(rr), name=f"{name}_rr"))
        return cls(r_factor, pytensor.shared(basis.frequencies, name=f"{name}_omega", shape=(None, d)),
                   pytensor.shared(p["center"], name=f"{name}_center", shape=(d,)), pytensor.shared(p["L"], name=f"{name}_L", shape=(d,)))

    def set(self, basis: HilbertBasis, rows: DesignRows) -> None:
        p = basis.parameters()
        for variable, value in (*zip(self.r_factor, rows.r_factor, strict=True), (self.omega, basis.frequencies), (self.center, p["center"]), (self.L, p["L"])):
            variable.set_value(value)


@dataclass(frozen=True)
class HSGPLikelihood(KernelLikelihood):
    """The record of the collapsed HSGP t ~ N(0, ΦV_θΦᵀ + σ²I): data, σ, the exact kernel, its basis and the statistics of Φ.

    `approx`: the settings it was built with; `shared`: in a PyMC model, the basis as the graph's shared variables;
    `capped`: where an automatic basis stopped growing at M_MAX before log p(t | θ) converged in it (`_converged`), the
    message that says so.
    """

    X: np.ndarray
    y: np.ndarray
    sigma: object
    kernel: Kernel
    basis: HilbertBasis
    rows: DesignRows = field(repr=False)
    approx: HSGP = field(default_factory=HSGP)
    shared: SharedBasis | None = field(default=None, repr=False)
    capped: str | None = field(default=None, repr=False)

    def refined(self, numeric: "HSGPLikelihood") -> "HSGPLikelihood | None":
        """With an automatic basis, at the hyperparameters of `numeric` (a fit's optimum, in this record's basis): None if
        log p(t | θ) has converged in this basis (`_converged`) and it is at most twice the size of the basis grown from
        PyMC's rule there; else this record with the smaller of the two converged bases (this one grown, or the rule's).
        A kept basis that stopped at M_MAX before log p converged is noted in `shared.capped_at_fit` (`fit_warnings`)."""
        if not self.approx.automatic or self.shared is None:
            return None
        with warnings.catch_warnings():  # (the bases tried here are not used as they are: the one kept is said once, below)
            warnings.simplefilter("ignore", RuntimeWarning)
            grown = _converged(numeric)  # `numeric`'s basis when log p has converged in it
            chosen = self.approx._record(numeric.kernel, self.X, self.y, numeric.sigma)  # PyMC's rule at the fitted ℓ, then grown
        # (the factor 2 keeps a fit from chasing the rule's c, which moves with every ℓ)
        kept = grown.basis is numeric.basis and _size(self.basis) <= 2 * _size(chosen.basis)
        self.shared.capped_at_fit[:] = [grown.capped] if kept and grown.capped else []
        if kept:
            return None
        best = min((grown, chosen), key=lambda r: _size(r.basis))
        return dataclasses.replace(self, basis=best.basis, rows=best.rows)

    def install(self) -> None:
        self.shared.set(self.basis, self.rows)

    def variances(self):
        """v_θ: the prior variance of each feature (symbolic while the kernel's hyperparameters are)."""
        if any(is_symbolic(v) for v in self.hyperparameters()[1:]):
            omega = self.shared.omega if self.shared is not None else pt.as_tensor_variable(self.basis.frequencies)
            return _variance_vector(self.kernel, omega, bind_given)
        graph = lambda W, _, bind: _variance_vector(self.kernel, W, bind)  # noqa: E731
        return self.kernel._run_graph("hsgp-variances", self.basis.frequencies, None, graph, pairs=0)

    def on_rows(self, rows: np.ndarray) -> "HSGPLikelihood":
        X, y = self.X[rows], self.y[rows]  # the basis (box, m) stays that of all the data
        return dataclasses.replace(self, X=X, y=y, rows=DesignRows(self.basis, X, y), shared=None)

    def rows_per_evaluation(self) -> int:
        return 0  # the log density reads the R factor of [Φ | t]: O(M³), whatever n

    def fit_warnings(self, conditioned=None) -> list[str]:
        capped = list(self.shared.capped_at_fit) if self.shared is not None else []  # (an automatic basis, judged by `refined`)
        return capped + self.resolution_messages(fitted=True) + self.convergence_messages(conditioned)

    def sampling_warnings(self) -> list[str]:
        """An automatic basis chosen from the length scales' prior and capped at M_MAX: a sampler uses it as it is (not
        one an empirical-Bayes fit re-chose at its optimum below the cap, which the model then holds)."""
        d = self.X.shape[1]
        if not (self.approx.automatic and _prior_length_scales(self.kernel)) or max(self.basis.m) < M_MAX[d]:
            return []
        capped = _automatic(self.kernel, _half_range(self.X), None, None, d)[2]
        return [capped] if capped else []

    def convergence_messages(self, conditioned=None) -> list[str]:
        """For a basis given by the caller, at numeric hyperparameters: `_converged`'s test (which an automatic basis passes
        by construction), a message where log p(t | θ) moves by more than BASIS_LML_TOL with m doubled in the same box or
        with a 1.5× wider box and 1.5× the functions (PyMC's rule can pass a basis that is 1 nat off at n = 10⁴ and moves
        a fitted ℓ by 18 %). A larger basis beyond M_MAX is not tried. `conditioned`: this record's model, if at hand."""
        if self.approx.automatic:
            return []
        here = (conditioned or self.condition()).log_marginal_likelihood
        moved = []
        for factors, what in LARGER_BASES:
            bigger = _scaled(self.basis, *factors)
            if max(bigger.m) <= M_MAX[len(bigger.m)]:
                change = _lml(self, bigger)[0] - here
                if _moved(here, here + change):
                    moved.append(f"{what} changes it by {change:+.3g}")
        if not moved:
            return []
        L = ", ".join(f"{v:.3g}" for v in self.basis.parameters()["L"])
        return [f"HSGP: log p(t | θ) = {here:.6g} has not converged in the given basis (m = {', '.join(map(str, self.basis.m))}, "
                f"L = {L}): {'; '.join(moved)} nats, so hyperparameters fitted through it may be biased; give a larger m or c, "
                "or leave m and c to the package"]

    def resolution_messages(self, fitted: bool) -> list[str]:
        """Length scales the basis does not resolve by PyMC's `approx_hsgp_hyperparams` rule, one message per column; none
        for an automatic basis, which a fit re-chooses at its optimum (`refined`) and conditioning enlarges (`_converged`)."""
        if self.approx.automatic:
            return []
        S = _half_range(self.X)  # as the box was built
        return [message for node in _stationary_parts(self.kernel) for message in _resolution(node, self.basis, S, fitted)]

    def approximation_as_fitted(self, given):
        if not self.approx.automatic:
            return given
        return HSGP(m=self.basis.m, L=tuple(float(v) for v in self.basis.parameters()["L"]))  # the centre follows from the same data

    def gram_kernel(self) -> Kernel:
        return FeatureKernel(self.basis, self.variances())  # k̃(x, x′) = φ(x)ᵀVφ(x′), the approximate kernel

    def check_inputs(self, X: np.ndarray) -> None:
        self.basis._check_tree_input_dim(X.shape[1])

    def condition(self, predict_at=None) -> WeightSpaceBLR:  # (a weight-space solver: nothing to prepare)
        return WeightSpaceBLR(self.basis, self.X, self.y, float(self.sigma), self.variances(), self.rows)
