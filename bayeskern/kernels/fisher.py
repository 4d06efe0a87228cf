"""The Fisher kernel g(x)ᵀF⁻¹g(x′) of a PyMC generative model, with its score and Fisher information (seeds 000, 004)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import grad
from pytensor.graph.traversal import ancestors
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.tensor.random.op import RandomVariable

from bayeskern._compile import NUMPY, compiled, draw
from bayeskern._fills import filled
from bayeskern._validation import as_array, as_inputs, check_integer, check_prior_cov, check_seed
from bayeskern.kernels.base import Kernel

__all__ = ["FisherKernel", "GenerativeModel", "INFORMATION"]

#: the three estimates of F: E_θ[g gᵀ] by forward draws, the mean of g gᵀ over the data, −∇²ℓ/n on the data
INFORMATION = ("expected", "empirical", "observed")


class GenerativeModel:
    """p(x|θ) for one observation x of a PyMC model's observed variable, with θ its free parameters.

    `model`: a `pm.Model`. `observed`: the name of the observed variable (the model's only one if not
    given); its observations must be independent given θ along its first axis, one row of X each, and
    it must be a plain random variable (Normal, Poisson, MvNormal, …). `point`: {name: value} for every
    free random variable the observed one depends on, in the **constrained** space (σ itself, not
    log σ): θ is these values, flattened and concatenated in the model's order. A row x of X holds one
    observation, flattened (d = its number of entries).
    """

    def __init__(self, model: pm.Model, point: dict, observed: str | None = None):
        if not isinstance(model, pm.Model):
            raise ValueError(f"model must be a pm.Model, got {type(model).__name__}")
        names = [rv.name for rv in model.observed_RVs]
        if observed is None:
            if len(names) != 1:
                raise ValueError(f"the model has {len(names)} observed variables {names}: name one with observed=")
            observed = names[0]
        if observed not in names:
            raise ValueError(f"observed={observed!r} is not an observed variable of the model (it has {names})")
        obs = model[observed]
        if not isinstance(obs.owner.op, RandomVariable):
            raise ValueError(f"the observed variable {observed!r} must be a plain random variable (Normal, Poisson, MvNormal …), got {type(obs.owner.op).__name__}")
        self.model, self.observed = model, observed
        self._op = obs.owner.op
        self._params = list(self._op.dist_params(obs.owner))
        parents = set(ancestors(self._params))
        self.free = [rv for rv in model.free_RVs if rv in parents]  # θ's blocks, in the model's order
        if not isinstance(point, dict):
            raise ValueError("point must be a dict {name: value} of the free parameters (constrained space)")
        missing = [rv.name for rv in self.free if rv.name not in point]
        if missing:
            raise ValueError(f"point lacks values for the free parameters {missing} (constrained space, e.g. sigma not sigma_log__)")
        self.slots, values, start = [], [], 0
        for rv in self.free:
            v = as_array(point[rv.name], f"point[{rv.name!r}]")
            if not np.all(np.isfinite(v)):
                raise ValueError(f"point[{rv.name!r}] must be finite")
            self.slots.append((rv, slice(start, start + v.size), v.shape))
            values.append(v.ravel())
            start += v.size
        self.theta = np.concatenate(values) if values else np.zeros(0)
        if self.theta.size == 0:
            raise ValueError(f"{observed!r} depends on no free parameter: its score is empty")
        self.names = [f"{rv.name}[{i}]" if len(s) else rv.name for rv, sl, s in self.slots for i in (range(sl.stop - sl.start) if len(s) else [None])]
        # one observation x given θ: the observed variable's distribution rebuilt with θ (P,) in place
        # of the free random variables, and without its size (one draw, not the data's n)
        self._theta = pt.vector("theta", dtype="float64", shape=(self.theta.size,))
        given = {rv: pt.as_tensor_variable(self._theta[sl].reshape(shape)).astype(rv.dtype) for rv, sl, shape in self.slots}
        params_one = graph_replace(self._params, given, strict=False)
        self._one = self._rv_at(params_one)
        self._params_at_point = graph_replace(params_one, {self._theta: pt.as_tensor_variable(self.theta)})
        self._at_point = self._rv_at(self._params_at_point)
        try:
            self.obs_shape = tuple(np.shape(draw(self._at_point, random_seed=0)))  # the shape of one observation
        except ValueError as err:  # the sampler's own check of the parameters, e.g. numpy's "scale < 0"
            raise ValueError(f"point {self.at()} lies outside the support of {observed!r}'s parameters: drawing "
                             f"{observed!r} there failed ({err})") from None
        self.d = int(np.prod(self.obs_shape, dtype=int))
        self._x = pt.tensor("x", dtype="float64", shape=self.obs_shape)
        self._logp_one = pt.sum(pm.logp(self._one, self._x))  # log p(x|θ), a scalar
        data = model.rvs_to_values[obs]
        data = data.get_value() if hasattr(data, "get_value") else data.eval(mode=NUMPY)  # (no Numba compile of the data)
        self.data = np.asarray(data, dtype=np.float64).reshape(-1, self.d)

    def at(self) -> dict:
        """θ = point, by name (what a message shows)."""
        return {name: float(v) for name, v in zip(self.names, self.theta, strict=True)}

    # -- the graphs --------------------------------------------------------------------------------
    def _rv_at(self, params, size=None):
        """The observed variable's distribution at `params` as a graph: its node made directly (calling the Op hides the
        next-rng output, which PyTensor 3.3 deprecates with a warning in every call)."""
        return self._op.make_node(pt.random.shared_rng(seed=0), size, *params).default_output()

    def log_likelihood_rows(self, X, theta):
        """log p(xᵢ|θ) for each row of X (n,), with θ (P,) shared or (n, P) one per row (vectorize_graph)."""
        value = X.reshape((X.shape[0],) + self.obs_shape)
        return vectorize_graph(self._logp_one, {self._x: value, self._theta: theta})

    def score(self, X, theta):
        """G (n, P): row i is gᵢ = ∇_θ log p(xᵢ|θ), PyTensor's gradient with θ copied per row."""
        Theta = filled(1.0, X.shape[0], 1) * theta[None, :]  # one copy of θ per observation
        return grad(pt.sum(self.log_likelihood_rows(X, Theta)), Theta)

    def _fn(self, what: str):
        def build():
            X = pt.matrix("X", dtype="float64", shape=(None, self.d))
            theta = pt.vector("theta", dtype="float64", shape=(self.theta.size,))
            if what == "score":
                out = self.score(X, theta)
            else:  # the observed information −∇²_θ Σᵢ log p(xᵢ|θ) / n
                g = grad(pt.sum(self.log_likelihood_rows(X, theta)), theta)  # ∇ℓ
                H = pt.stack([grad(g[i], theta) for i in range(self.theta.size)])  # ∇²ℓ row by row (no scan)
                out = -H / X.shape[0]
            return [X, theta], out

        return compiled(("fisher", what, self.model, self.observed, self.d), build)

    def _rows(self, X, name="X"):
        X = as_inputs(X, name)
        if X.shape[1] != self.d:
            raise ValueError(f"{name} has {X.shape[1]} column(s) but one observation of {self.observed!r} has {self.d} entries")
        return X

    # -- numbers ---------------------------------------------------------------------------------
    def scores(self, X) -> np.ndarray:
        """g(x) = ∇_θ log p(x|θ) for each row of X, (n, P), at θ = point."""
        return np.asarray(self._fn("score")(self._rows(X), self.theta))

    def information(self, kind: str = "expected", data=None, draws: int = 100_000, seed=None) -> np.ndarray:
        """The Fisher information F (P, P) at θ = point.

        `kind`: "expected" — E_{x~p(x|θ)}[g gᵀ] by Monte Carlo over `draws` forward draws from p(x|θ)
        (`pm.draw` in numpy, `seed`), error O(1/√draws); "empirical" — (1/n) Σᵢ g(xᵢ)g(xᵢ)ᵀ over the data;
        "observed" — −(1/n) ∇²_θ Σᵢ log p(xᵢ|θ), PyTensor's Hessian, on the data. `data`: the rows xᵢ
        (default: the model's observed data).
        """
        if not isinstance(kind, str) or kind not in INFORMATION:
            raise ValueError(f"information must be one of {INFORMATION} or a (P, P) matrix, got {kind!r}")
        if kind == "expected":
            draws, seed = check_integer(draws, "draws", 2), check_seed(seed)
            batch = self.obs_shape[: len(self.obs_shape) - self._op.ndim_supp]
            many = self._rv_at(self._params_at_point, size=(draws, *batch))  # draws × one observation, in one call
            X = np.asarray(draw(many, random_seed=seed), dtype=np.float64)
            G = self.scores(X.reshape(draws, self.d))
            return G.T @ G / draws  # F = E[g gᵀ]
        X = self.data if data is None else self._rows(data, "data")
        if kind == "empirical":
            G = self.scores(X)
            return G.T @ G / len(X)  # F = (1/n) Σ g gᵀ
        return np.asarray(self._fn("observed")(X, self.theta))  # F = −(1/n) ∇²ℓ


class FisherKernel(Kernel):
    """k(x, x′) = g(x)ᵀ F⁻¹ g(x′), g(x) = ∇_θ log p(x|θ) the score (Jaakkola & Haussler 1999; PRML 6.33–6.36).

    `model`, `point`, `observed`: the generative model p(x|θ) at θ = point (constrained space; see
    `GenerativeModel`). `information`: F — "expected" (Monte Carlo over `draws` forward draws with
    `seed`), "empirical" (mean of g gᵀ over `data`, default the model's observed data), "observed"
    (−Hessian of the summed log-likelihood over `data`, / n), or a (P, P) SPD matrix. F⁻¹ enters
    through its Cholesky factor: k = (L⁻¹g)ᵀ(L⁻¹g′) with F = LLᵀ.

    The inputs X are observations of the model's observed variable, one per row. The score graph is
    PyTensor's gradient of the model's log-probability; θ and F ride along as (numeric)
    hyperparameters, so `.scores(X)` and `.information_matrix` show what the kernel uses.
    """

    def __init__(self, model, point, observed=None, information="expected", data=None, draws: int = 100_000, seed=None):
        draws, seed = check_integer(draws, "draws", 2), check_seed(seed)
        self.generative = GenerativeModel(model, point, observed)
        g = self.generative
        if isinstance(information, str):
            F = g.information(information, data=data, draws=draws, seed=seed)
            self.information_kind = information
        else:
            F = as_array(information, "information")
            if F.shape != (g.theta.size, g.theta.size):
                raise ValueError(f"information must be a ({g.theta.size}, {g.theta.size}) matrix for θ = {g.names}, got shape {F.shape}")
            self.information_kind = "given"
        try:
            F = check_prior_cov(F, name="information")
        except ValueError as err:
            if not np.all(np.isfinite(g.scores(g.data))):  # e.g. a scale of 0: log p(x|θ) is ±inf or NaN
                raise ValueError(f"the score ∇_θ log p(x|θ) is not finite at point {g.at()} for the data: is the point on "
                                 "the edge of the parameters' support (a scale of 0)?") from None
            raise ValueError(f"{err} (the Fisher information F for θ = {g.names}; more data or draws?)") from None
        super().__init__(theta=g.theta.copy(), information=F)

    @property
    def information_matrix(self) -> np.ndarray:
        return self.hyperparameters["information"]

    def scores(self, X) -> np.ndarray:
        return self.generative.scores(X)

    def _config(self):
        return ("fisher", self.generative.model, self.generative.observed)

    def _check_input_dim(self, d: int) -> None:
        if d != self.generative.d:
            raise ValueError(f"X has {d} column(s) but one observation of {self.generative.observed!r} has {self.generative.d} entries")

    def _whitened(self, X, p):
        L = pt.linalg.cholesky(p["information"])  # F = L Lᵀ
        return pt.linalg.solve_triangular(L, self.generative.score(X, p["theta"]).T, lower=True)  # L⁻¹ gᵀ, (P, n)

    def _full(self, X, Xs, p):
        A = self._whitened(X, p)
        As = A if Xs is None else self._whitened(Xs, p)
        return pt.dot(A.T, As)  # g(x)ᵀ F⁻¹ g(x′)

    def _diag(self, X, p):
        return pt.sum(self._whitened(X, p) ** 2, axis=0)

    def __repr__(self) -> str:
        g = self.generative
        return f"FisherKernel(observed={g.observed!r}, theta={dict(zip(g.names, np.round(g.theta, 4).tolist()))}, information={self.information_kind!r})"
