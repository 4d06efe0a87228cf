"""K-fold cross-validation of a spec's candidates: each refitted by empirical Bayes on each training split, scored by the
log predictive density of the held-out points, compared as ArviZ compares models (elpd, its standard error, differences).

elpd_kfold = Σᵢ log p(yᵢ | y₋fold(i), θ̂₋fold(i)), the pointwise predictive density of a new observation (f plus noise)
from the model conditioned on the other folds at their own EB optimum (or, with `refit=False`, at the optimum on all
the data: with K = n that is the exact leave-one-out of R&W 5.10–5.12). se = √(n·var(pointwise)) and the difference
of two candidates' elpd has se √(n·var(pointwise₁ − pointwise₂)), as in ArviZ's `loo`/`compare` (Vehtari et al. 2017).
Every (candidate, fold) fit is one task whose seed derives from the spec's seed and the task's key alone.
"""

from dataclasses import dataclass

import numpy as np

from bayeskern._linalg import LOG_2PI
from bayeskern.datasets import Data
from bayeskern.fit import empirical_bayes

__all__ = ["KFoldResult", "compare", "fold_indices", "kfold", "task_seed"]


def fold_indices(n: int, folds: int, shuffle: bool, seed: int) -> list[np.ndarray]:
    """The held-out rows of each fold, sorted: K contiguous blocks of n (sizes differing by at most one), or of a
    permutation of the rows drawn with `seed` when `shuffle`."""
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    return [np.sort(part) for part in np.array_split(order, folds)]


def task_seed(seed: int, candidate: int, fold: int) -> int:
    """The seed of one (candidate, fold) fit: from the spec's seed and the task's key only, whoever runs it, in any order."""
    return int(np.random.SeedSequence([seed, candidate, fold]).generate_state(1)[0])


@dataclass(frozen=True)
class KFoldResult:
    """One candidate cross-validated: `pointwise` log p(yᵢ | other folds) (n,), `fold_elpd` the sum over each fold,
    `error` what stopped it (then `pointwise` is None): the first failing fold, as "fold k: message"."""

    candidate: str
    pointwise: np.ndarray | None
    fold_elpd: tuple
    error: str | None = None

    @property
    def elpd(self) -> float | None:
        return None if self.pointwise is None else float(np.sum(self.pointwise))

    @property
    def se(self) -> float | None:
        return None if self.pointwise is None else float(np.sqrt(len(self.pointwise) * np.var(self.pointwise)))


def _log_predictive(conditioned, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log N(yᵢ | μᵢ, vᵢ) with μ, v the predictive mean and variance of a new observation at X."""
    p = conditioned.predict(X, include_noise=True)
    return -0.5 * (LOG_2PI + np.log(p.var) + (y - p.mean) ** 2 / p.var)


def _training_split(data: Data, train: np.ndarray) -> Data:
    return Data(data.X[train], data.y[train], data.x_names, data.y_name, f"{data.description} (a training split)")


def fold_score(spec, index: int, data: Data, test: np.ndarray, fold: int, seed: int, refit: bool, full_fit=None) -> np.ndarray:
    """log p(y_test | y_train) of candidate `index`: refitted by EB on the other rows, or (`refit=False`) at `full_fit`'s optimum."""
    train = np.setdiff1d(np.arange(len(data.y)), test)
    if refit:
        model = spec.model(spec.candidates[index], _training_split(data, train))
        conditioned = empirical_bayes(model, seed=task_seed(seed, index, fold), **spec.empirical_bayes.as_kwargs()).conditioned
    else:
        conditioned = full_fit.plug_in.numeric(full_fit.params).on_rows(train).condition()
    return _log_predictive(conditioned, data.X[test], data.y[test])


def kfold(spec, index: int, data: Data, folds: list, seed: int, refit: bool = True, full_fit=None) -> KFoldResult:
    """Candidate `index` of `spec` over `folds` (held-out rows); a fold that raises ends it with the error in its row."""
    pointwise, fold_elpd = np.empty(len(data.y)), []
    for k, test in enumerate(folds):
        try:
            pointwise[test] = fold_score(spec, index, data, test, k, seed, refit, full_fit)
        except Exception as err:  # noqa: BLE001 — one candidate's failure is reported in its row; the others go on
            return KFoldResult(spec.candidates[index], None, tuple(fold_elpd), f"fold {k}: {type(err).__name__}: {' '.join(str(err).split())}")
        fold_elpd.append(float(np.sum(pointwise[test])))
    return KFoldResult(spec.candidates[index], pointwise, tuple(fold_elpd))


def compare(results: list[KFoldResult]) -> list[dict]:
    """The rows of ArviZ's `compare` table, best first: rank, candidate, elpd_kfold, se, elpd_diff and dse (against the best),
    per-fold elpd, error; candidates that failed last, unranked."""
    done = sorted((r for r in results if r.error is None), key=lambda r: -r.elpd)
    rows = []
    for rank, r in enumerate(done):
        diff = done[0].pointwise - r.pointwise
        rows.append({"rank": rank, "candidate": r.candidate, "elpd_kfold": r.elpd, "se": r.se, "elpd_diff": float(np.sum(diff)),
                     "dse": float(np.sqrt(len(diff) * np.var(diff))), "fold_elpd": list(r.fold_elpd), "error": None})
    rows += [{"rank": None, "candidate": r.candidate, "elpd_kfold": None, "se": None, "elpd_diff": None, "dse": None,
              "fold_elpd": list(r.fold_elpd), "error": r.error} for r in results if r.error is not None]
    return rows
