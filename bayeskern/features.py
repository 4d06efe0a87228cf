"""Feature maps φ: inputs X (n, d) → design matrix Φ (n, M), as PyTensor graphs evaluated to numbers."""

import math
from collections.abc import Hashable
from itertools import combinations_with_replacement

import numpy as np
import pytensor.tensor as pt
from pytensor import wrap_py
from pytensor.tensor.variable import TensorConstant

from bayeskern._fills import filled
from bayeskern._linalg import EPS, psd_eigh
from bayeskern._parameterised import Parameterised, bind_given, parameter
from bayeskern._validation import as_array, as_inputs, check_finite_result, check_flag, check_integer, check_kernel, check_number, is_symbolic, numerical_failure, rng_from

__all__ = [
    "FeatureMap",
    "Fourier",
    "GaussianBasis",
    "MercerFeatures",
    "Monomials",
    "Polynomial",
    "PolynomialKernelFeatures",
    "PowerSet",
    "RandomFourier",
    "SigmoidBasis",
    "design_matrix",
    "design_tensor",
    "n_features",
]


class FeatureMap(Parameterised):
    """Base: `phi(X)` gives Φ (n, M) as numpy; `phi.symbolic(X)` gives the PyTensor graph.

    A feature map implements `_symbolic(X, p)`, where `p` maps the names of its numeric `parameters()`
    (centers, widths, random weights …) to tensors, and `_config()`, the settings that change the graph
    (a degree, a flag). Numbers are fed to the compiled graph, so maps that differ only in their
    numbers share one compiled function, as kernels do (both are `Parameterised`).
    """

    def _symbolic(self, X, p: dict):
        raise NotImplementedError

    def _graph(self, X, bind):
        """Φ for the symbolic X with every node's parameters from `bind(node)` (a map with child parts overrides it)."""
        return self._symbolic(X, bind(self))

    def symbolic(self, X):
        return self._graph(X, bind_given)

    def n_features(self, d: int) -> int:
        raise NotImplementedError

    def __call__(self, X) -> np.ndarray:
        X = as_inputs(X, "X")
        self._check_tree_input_dim(X.shape[1])
        pairs = X.shape[0] * self.n_features(X.shape[1])
        Phi = self._run_graph("features", X, None, lambda Xt, _, bind: self._graph(Xt, bind), pairs=pairs)
        return check_finite_result(Phi, lambda: f"the features {self!r} of X")  # finite X, yet inf/NaN: an overflow

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._repr_args().items())})"

    def _repr_args(self) -> dict:
        return {}


def _rbf(lengthscale):
    from bayeskern.kernels.stationary import RBF  # kernels import features, not the other way round

    return RBF(lengthscale)


def _with_bias(Phi, bias: bool):
    return pt.concatenate([filled(1.0, Phi.shape[0], 1), Phi], axis=1) if bias else Phi


def _one_column(d: int, what: str) -> None:
    if d != 1:
        raise ValueError(f"{what} is defined for 1-D inputs, but X has {d} columns")


class Monomials(FeatureMap):
    """φ(x) = all monomials x₁^a₁⋯x_d^a_d with a₁+⋯+a_d ≤ M; for d = 1, (1, x, x², …, x^M)   (PRML 3.3).

    `degree`: M ≥ 0. The constant 1 is the first feature. Also named `Polynomial` (the polynomial
    basis of PRML; not the kernel `bayeskern.kernels.Polynomial`, (xᵀx′ + c)^M).
    """

    def __init__(self, degree: int):
        self.degree = check_integer(degree, "degree", 0)
        super().__init__()

    def exponents(self, d: int) -> np.ndarray:
        """The (M, d) exponent table, by total degree then lexicographically."""
        rows = []
        for total in range(self.degree + 1):
            for combo in combinations_with_replacement(range(d), total):
                rows.append(np.bincount(np.asarray(combo, dtype=int), minlength=d))
        return np.asarray(rows, dtype=np.float64).reshape(-1, d)

    def n_features(self, d: int) -> int:
        return math.comb(self.degree + d, d)  # monomials of degree ≤ M in d variables, counted without listing them

    def _config(self):
        return self.degree

    def _symbolic(self, X, p):
        E = self.exponents(X.type.shape[1])
        return pt.prod(X[:, None, :] ** E[None, :, :], axis=2)  # Φ[n, j] = Πₖ x_nk^E_jk

    def _repr_args(self):
        return {"degree": self.degree}


#: the feature map's name in PRML 3.3 (the polynomial basis), kept: `Monomials` says what it gives
Polynomial = Monomials


class GaussianBasis(FeatureMap):
    """φⱼ(x) = exp(−‖x − μⱼ‖² / (2s²))   (PRML 3.4), i.e. the RBF kernel between X and the centers.

    `centers`: μ (M,) or (M, d). `width`: s > 0. `bias`: prepend the constant feature φ₀ = 1.
    """

    centers = parameter("centers", "μ (M, d)")
    width = parameter("width", "s, a scalar or one per input column")

    def __init__(self, centers, width, bias: bool = False):
        centers = as_inputs(centers, "centers")
        width = check_number(width, "width", positive=True)
        if np.ndim(width) > 1:
            raise ValueError(f"width must be a scalar or one width per input column, got shape {np.shape(width)}")
        try:
            _rbf(width)  # the RBF's own checks on its length scale ℓ = s
        except ValueError as err:
            raise ValueError(f"width, the length scale of the Gaussian basis: {err}") from None
        self.bias = check_flag(bias, "bias")
        super().__init__(centers=centers, width=width)

    def n_features(self, d: int) -> int:
        return len(self.centers) + self.bias

    def _check_input_dim(self, d: int) -> None:
        if self.centers.shape[1] != d:
            raise ValueError(f"centers have {self.centers.shape[1]} column(s) but X has {d}")
        _rbf(self.width)._check_input_dim(d)

    def _config(self):
        return self.bias

    def _symbolic(self, X, p):
        # φⱼ(x) = k(x, μⱼ) with the RBF kernel of length scale s
        return _with_bias(_rbf(p["width"]).full(X, p["centers"]), self.bias)

    def _repr_args(self):
        return {"n_centers": len(self.centers), "width": float(np.max(self.width)), "bias": self.bias}


class SigmoidBasis(FeatureMap):
    """φⱼ(x) = σ((x − μⱼ)/s) with the logistic sigmoid σ(a) = 1/(1 + e⁻ᵃ)   (PRML 3.5); 1-D inputs.

    `centers`: μ (M,). `width`: s > 0. `bias`: prepend the constant feature φ₀ = 1.
    """

    centers = parameter("centers", "μ (M,)")
    width = parameter("width", "s, a scalar")

    def __init__(self, centers, width, bias: bool = False):
        centers = as_inputs(centers, "centers")
        if centers.shape[1] != 1:
            raise ValueError("centers must be 1-D: SigmoidBasis is defined for 1-D inputs")
        width = check_number(width, "width", positive=True, scalar=True)
        self.bias = check_flag(bias, "bias")
        super().__init__(centers=centers[:, 0], width=width)

    def n_features(self, d: int) -> int:
        return len(self.centers) + self.bias

    def _check_input_dim(self, d: int) -> None:
        _one_column(d, "SigmoidBasis")

    def _config(self):
        return self.bias

    def _symbolic(self, X, p):
        return _with_bias(pt.sigmoid((X - p["centers"][None, :]) / p["width"]), self.bias)

    def _repr_args(self):
        return {"n_centers": len(self.centers), "width": float(self.width), "bias": self.bias}


class Fourier(FeatureMap):
    """φ(x) = (1, cos(2πx/P), sin(2πx/P), …, cos(2πKx/P), sin(2πKx/P)); 1-D inputs.

    `order`: K ≥ 0 harmonics (2K + 1 features). `period`: P > 0.
    """

    period = parameter("period", "P, a scalar")

    def __init__(self, order: int, period=1.0):
        self.order = check_integer(order, "order", 0)
        super().__init__(period=check_number(period, "period", positive=True, scalar=True))

    def n_features(self, d: int) -> int:
        return 2 * self.order + 1

    def _check_input_dim(self, d: int) -> None:
        _one_column(d, "Fourier")

    def _config(self):
        return self.order

    def _symbolic(self, X, p):
        k = np.arange(1, self.order + 1, dtype=np.float64)
        angle = 2 * np.pi * X * k[None, :] / p["period"]  # 2πkx/P, (n, K)
        pairs = pt.stack([pt.cos(angle), pt.sin(angle)], axis=2).reshape((X.shape[0], 2 * self.order))
        return _with_bias(pairs, True)

    def _repr_args(self):
        return {"order": self.order, "period": float(self.period)}


# -- feature maps of kernels: from k(x, x′) back to φ(x)ᵀφ(x′) ----------------------------------------
class PolynomialKernelFeatures(FeatureMap):
    """The explicit features of the polynomial kernel: φ(x)ᵀφ(z) = (xᵀz + c)^M exactly.

    With v = (√c, x₁, …, x_d), (vᵀw)^M = Σ_|a|=M (M; a) Πⱼ vⱼ^aⱼ wⱼ^aⱼ (the multinomial theorem), so
    φ_a(x) = √((M; a)) Πⱼ vⱼ^aⱼ over the multi-indices a with |a| = M. For c = 0 and M = 2, d = 2:
    (x₁², √2·x₁x₂, x₂²), the seeds' example.
    """

    c = parameter("c", "the offset c ≥ 0, a scalar")

    def __init__(self, degree: int, c: float = 0.0):
        self.degree = check_integer(degree, "degree", 1)
        super().__init__(c=check_number(c, "c", nonnegative=True, scalar=True))

    def exponents(self, d: int) -> np.ndarray:
        """Multi-indices a over (constant, x₁, …, x_d) with |a| = M (a₀ = 0 only when c = 0)."""
        rows = [np.bincount(np.asarray(combo, dtype=int), minlength=d + 1) for combo in combinations_with_replacement(range(d + 1), self.degree)]
        E = np.asarray(rows, dtype=np.float64)
        return E[E[:, 0] == 0] if self.c == 0.0 else E

    def n_features(self, d: int) -> int:
        # multi-indices with |a| = M over d + 1 slots (constant and x), or over the d slots of x when c = 0
        return math.comb(self.degree + d, d) if self.c != 0.0 else math.comb(self.degree + d - 1, d - 1)

    def _config(self):
        return (self.degree, self.c == 0.0)

    def _symbolic(self, X, p):
        E = self.exponents(X.type.shape[1])
        # (M; a) = M! / Πⱼ aⱼ!, in exact integers
        coefficient = np.array([math.factorial(self.degree) // math.prod(math.factorial(int(a)) for a in row) for row in E], dtype=np.float64)
        V = pt.concatenate([pt.fill(X[:, :1], pt.sqrt(p["c"])), X], axis=1)  # v = (√c, x)
        return np.sqrt(coefficient)[None, :] * pt.prod(V[:, None, :] ** E[None, :, :], axis=2)

    def _repr_args(self):
        return {"degree": self.degree, "c": float(self.c)}


class RandomFourier(FeatureMap):
    """Random Fourier features of the RBF kernel: φ(x) = √(2/D) cos(Wᵀx + b) (Rahimi & Recht 2007).

    W (d, D) ~ N(0, ℓ⁻²), b ~ U(0, 2π): E[φ(x)ᵀφ(x′)] = exp(−‖x − x′‖²/(2ℓ²)), with an error that
    shrinks like 1/√D. `n_features`: D. `lengthscale`: ℓ (scalar, or one per column). `input_dim`: d.
    `seed`: fixes W and b.
    """

    W = parameter("W", "the random frequencies (d, D)")
    b = parameter("b", "the random phases (D,)")

    def __init__(self, n_features: int, lengthscale=1.0, input_dim: int = 1, seed=0):
        self.D = check_integer(n_features, "n_features", 1)
        self.input_dim = check_integer(input_dim, "input_dim", 1)
        self.lengthscale = check_number(lengthscale, "lengthscale", positive=True)
        if np.ndim(self.lengthscale) > 1:
            raise ValueError(f"lengthscale must be a scalar or one per input column, got shape {np.shape(self.lengthscale)}")
        if np.ndim(self.lengthscale) == 1 and len(self.lengthscale) != self.input_dim:
            raise ValueError(f"lengthscale has {len(self.lengthscale)} entries but input_dim is {self.input_dim}")
        self.seed = seed
        rng = rng_from(seed)
        ls = np.broadcast_to(np.asarray(self.lengthscale, dtype=np.float64), (self.input_dim,))
        with np.errstate(over="ignore"):
            W = rng.standard_normal((self.input_dim, self.D)) / ls[:, None]  # W ~ N(0, ℓ⁻²)
        check_finite_result(W, f"the random frequencies W ~ N(0, lengthscale⁻²) with lengthscale {np.min(ls):.3g}")
        super().__init__(W=W, b=rng.uniform(0.0, 2 * np.pi, self.D))  # b ~ U(0, 2π)

    def n_features(self, d: int) -> int:
        return self.D

    def _check_input_dim(self, d: int) -> None:
        if d != self.input_dim:
            raise ValueError(f"RandomFourier was drawn for input_dim={self.input_dim} but X has {d} column(s)")

    def _symbolic(self, X, p):
        return pt.sqrt(2.0 / p["b"].shape[0]) * pt.cos(pt.dot(X, p["W"]) + p["b"][None, :])

    def _repr_args(self):
        return {"n_features": self.D, "lengthscale": self.lengthscale, "input_dim": self.input_dim, "seed": self.seed}


class KernelProjection(FeatureMap):
    """φ(x) = Pᵀ k(X_basis, x): a kernel's values at basis points X_basis, projected by P (Nyström-type features).

    The kernel is a child part and X_basis, P are numbers fed in: one compiled graph per structure.
    A subclass chooses P: Λ^(−½)U (`MercerFeatures`), L⁻ᵀ of a Cholesky factor (`bayeskern.approx.VFE`).
    """

    X_basis = parameter("X_basis", "the basis points (n_basis, d)")
    projection = parameter("projection", "P (n_basis, M)")

    def __init__(self, kernel, X_basis: np.ndarray, projection: np.ndarray):
        super().__init__(X_basis=X_basis, projection=projection)
        self.children = (kernel,)

    @property
    def kernel(self):
        """The kernel k whose values at the basis points these features project."""
        return self.children[0]

    def n_features(self, d: int) -> int:
        return self.projection.shape[1]

    def _check_input_dim(self, d: int) -> None:
        if d != self.X_basis.shape[1]:
            raise ValueError(f"the basis points have {self.X_basis.shape[1]} column(s) but X has {d}")

    def _graph(self, X, bind):
        p = bind(self)
        K = self.kernel._build(X, p["X_basis"], False, bind)  # k(x, X_basis), (n, n_basis)
        return pt.dot(K, p["projection"])  # φ(x) = Pᵀ k(X_basis, x)


class MercerFeatures(KernelProjection):
    """Eigen-features of a kernel on basis points: Φ = U√Λ on X_basis, K(X_basis, X_basis) = UΛUᵀ (seed 001).

    At new points the Nyström extension φ(x) = Λ^(−½) Uᵀ k(X_basis, x), which equals U√Λ on the basis
    points, so ΦΦᵀ reproduces the Gram matrix there. `n_components`: keep the largest (all above the
    round-off floor n·ε·λmax by default). `kernel`: a kernel with numeric hyperparameters.
    """

    @numerical_failure("the kernel's values on X_basis overflow float64, or its eigendecomposition fails: scale or center X_basis")
    def __init__(self, kernel, X_basis, n_components: int | None = None):
        check_kernel(kernel)
        X_basis = as_inputs(X_basis, "X_basis")
        lam, U = psd_eigh(kernel.evaluate(X_basis), "the kernel on X_basis")
        lam, U = lam[::-1], U[:, ::-1]  # largest first
        keep = lam > len(lam) * EPS * max(lam[0], 1e-300)
        if n_components is not None:
            keep &= np.arange(len(lam)) < check_integer(n_components, "n_components", 1)
        self.eigenvalues, self.eigenvectors = lam[keep], U[:, keep]
        super().__init__(kernel, X_basis, self.eigenvectors / np.sqrt(self.eigenvalues)[None, :])  # P = U Λ^(−½)

    def _repr_args(self):
        return {"n_basis": len(self.X_basis), "n_components": len(self.eigenvalues)}


class PowerSet(FeatureMap):
    """φ_A(x) = Π_{j∈A} xⱼ over all 2^d subsets A of the columns: for binary x, 1 if A ⊆ x.

    Then φ(x)ᵀφ(x′) counts the subsets of x ∩ x′: 2^|x∩x′|, the set kernel (seed 003). d ≤ 16.
    """

    def n_features(self, d: int) -> int:
        return 2**d

    def _check_input_dim(self, d: int) -> None:
        if d > 16:
            raise ValueError(f"PowerSet has 2^d features; d = {d} is too many (at most 16)")

    def _symbolic(self, X, p):
        d = X.type.shape[1]
        E = np.array([[(mask >> j) & 1 for j in range(d)] for mask in range(2**d)], dtype=np.float64)
        return pt.prod(X[:, None, :] ** E[None, :, :], axis=2)  # Πⱼ xⱼ^[j ∈ A], with 0⁰ = 1


def n_features(phi, d: int) -> int | None:
    """M for a bayeskern feature map on d-column inputs; None for a plain callable (unknown)."""
    d = check_integer(d, "d", 1)
    _check_callable(phi, "phi")
    if isinstance(phi, FeatureMap):
        phi._check_tree_input_dim(d)
        return phi.n_features(d)
    return None


_CALLABLE_OPS: dict[Hashable, object] = {}


def _check_callable(phi, name: str) -> None:
    if not callable(phi):
        raise ValueError(f"{name} must be a feature map or a callable X -> Phi, got {phi!r}")


def design_matrix(phi, X, name: str = "phi") -> np.ndarray:
    """Φ = φ(X) as a numpy (n, M) array, for a feature map or any callable X (n, d) → Φ (n, M).

    `name`: what the caller calls φ, for the error messages.
    """
    if isinstance(phi, FeatureMap):
        return phi(X)
    _check_callable(phi, name)
    return _call_plain(phi, as_inputs(X, "X"))


def design_tensor(phi, X):
    """Φ = φ(X) as a tensor, for a feature map or any callable X (n, d) → Φ (n, M).

    Numeric inputs give a constant (Φ computed and checked once); for a plain callable on symbolic
    inputs the callable is wrapped as a PyTensor Op (no gradient with respect to X, which is data).
    """
    _check_callable(phi, "phi")
    if not is_symbolic(X):
        return pt.as_tensor_variable(design_matrix(phi, X))
    if isinstance(phi, FeatureMap):
        return phi.symbolic(X)
    if isinstance(X, TensorConstant):
        return pt.as_tensor_variable(_call_plain(phi, X.data))
    op = _CALLABLE_OPS.get(phi)
    if op is None:
        op = wrap_py(itypes=[pt.dmatrix], otypes=[pt.dmatrix])(lambda A: _call_plain(phi, A))
        _CALLABLE_OPS[phi] = op
    return op(X)


def _call_plain(phi, X: np.ndarray) -> np.ndarray:
    Phi = as_array(phi(X), "phi(X)")
    if Phi.ndim == 1:
        Phi = Phi[:, None]
    if Phi.ndim != 2 or Phi.shape[0] != X.shape[0]:
        raise ValueError(f"phi must map X ({X.shape[0]}, d) to Phi ({X.shape[0]}, M), got shape {Phi.shape}")
    if not np.all(np.isfinite(Phi)):
        raise ValueError("phi returned NaN or infinite features")
    return Phi
