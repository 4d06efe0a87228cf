"""K-fold cross-validation of a spec's candidates: each refitted by empirical Bayes on each training split, scored by the
log predictive density of the held-out points, compared as ArviZ compares models (elpd, its standard error, differences).

elpd_kfold = Σᵢ log p(yᵢ | y₋fold(i), θ̂₋fold(i)), the pointwise predictive density of a new observation (f plus noise)
from the model conditioned on the other folds at their own EB optimum (or, with `refit=False`, at the optimum on all
the data: with K = n that is the exact leave-one-out of R&W 5.10–5.12). se = √(n·var(pointwise)) and the difference
of two candidates' elpd has se √(n·var(pointwise₁ − pointwise₂)), as in ArviZ's `loo`/`compare` (Vehtari et al. 2017).
Every (candidate, fold) fit is one task whose seed derives from the spec's seed and the task's key alone.
"""

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from bayeskern._linalg import LOG_2PI
from bayeskern._validation import PACKAGE_DIR
from bayeskern.datasets import Data
from bayeskern.fit import empirical_bayes
from bayeskern.fit._plug_in import PlugIn
from bayeskern.likelihood import find_likelihood

__all__ = ["CrossValidationFailed", "KFoldResult", "check_cv", "compare", "cross_validate", "fixed_folds", "fold_indices", "refit_fold", "task_seed"]


class CrossValidationFailed(RuntimeError):
    """A cross-validation in which some candidate failed on a fold (its row in the report says why)."""


def check_cv(analysis) -> None:
    """CrossValidationFailed naming the candidates of `analysis` whose cross-validation failed, if any."""
    failed = [f"{analysis.spec.name}: {r.candidate} ({r.error})" for r in analysis.cv or [] if r.error is not None]
    if failed:
        raise CrossValidationFailed(f"cross-validation failed for {len(failed)} candidate(s): {'; '.join(failed)}")


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


def _training_rows(data: Data, test: np.ndarray) -> np.ndarray:
    return np.setdiff1d(np.arange(len(data.y)), test)


def _training_split(data: Data, train: np.ndarray) -> Data:
    return dataclasses.replace(data, X=data.X[train], y=data.y[train], description=f"{data.description} (a training split)")


def _caught(fn, *args) -> tuple:
    """(fn(*args), the warnings it raised as (category, message)): a worker's warnings travel back with its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn(*args)
    return value, [(w.category, str(w.message)) for w in caught]


def refit_fold(spec, index: int, data: Data, test: np.ndarray, fold: int, seed: int) -> tuple:
    """One task: candidate `index` refitted by EB on the rows outside `test` (seed from the task's key), scored on `test`."""
    def score():
        model = spec.model(spec.candidates[index], _training_split(data, _training_rows(data, test)))
        conditioned = empirical_bayes(model, seed=task_seed(seed, index, fold), **spec.empirical_bayes.as_kwargs()).conditioned
        return _log_predictive(conditioned, data.X[test], data.y[test])
    return _caught(score)


def fixed_folds(spec, index: int, data: Data, folds: list, params: dict) -> tuple:
    """One task: candidate `index` at the hyperparameters `params` (the EB optimum on all the data), conditioned on each
    training split and scored on its fold; a fold that raises gives its exception in its place."""
    def score():
        model = spec.model(spec.candidates[index], data)
        numeric = PlugIn(model, find_likelihood(model)[1]).numeric(params)
        out = []
        for test in folds:
            try:
                out.append(_log_predictive(numeric.on_rows(_training_rows(data, test)).condition(), data.X[test], data.y[test]))
            except Exception as err:  # noqa: BLE001 — reported in the candidate's row
                out.append(err)
        return out
    return _caught(score)


def cross_validate(spec, data: Data, seed: int, submit, full_params: list | None = None):
    """Start `spec.cv`'s tasks and return a function that waits for them and gives (folds, one `KFoldResult` per candidate).

    `submit(fn, [args, ...])` sends the tasks off (here or to a cluster, `bayeskern.batch.submit_tasks`) and returns a
    function giving each one's result or exception. `full_params`: each candidate's EB optimum on all the data, needed
    with `refit = false` only — with refitting, the tasks can start before the full-data fits. The tasks' warnings are
    raised when their results are collected, naming candidate and fold.
    """
    folds, n_folds = fold_indices(len(data.y), spec.cv.folds, spec.cv.shuffle, spec.cv.seed), spec.cv.folds
    candidates = range(len(spec.candidates))
    if spec.cv.refit:
        pending = submit(refit_fold, [(spec, i, data, folds[k], k, seed) for i in candidates for k in range(n_folds)])
    else:
        pending = submit(fixed_folds, [(spec, i, data, folds, full_params[i]) for i in candidates])

    def collect() -> tuple[list, list]:
        outputs = pending()
        if spec.cv.refit:
            per_fold = {(i, k): outputs[i * n_folds + k] for i in candidates for k in range(n_folds)}
        else:
            per_fold = {}
            for i, output in zip(candidates, outputs):
                values, said = (output, []) if isinstance(output, Exception) else output
                per_fold |= {(i, k): (values if isinstance(values, Exception) else values[k], said if k == 0 else []) for k in range(n_folds)}
        return folds, [_assemble(spec.candidates[i], data, folds, [per_fold[i, k] for k in range(n_folds)]) for i in candidates]
    return collect


def _assemble(candidate: str, data: Data, folds: list, outputs: list) -> KFoldResult:
    """One candidate's result from its folds' (pointwise, warnings) in fold order; the first failure ends it."""
    pointwise, fold_elpd = np.empty(len(data.y)), []
    for k, (test, output) in enumerate(zip(folds, outputs)):
        value, said = (output, []) if isinstance(output, Exception) else output
        for category, message in said:
            warnings.warn(f"{candidate}: cross-validation fold {k}: {message}", category, skip_file_prefixes=(PACKAGE_DIR,))
        if isinstance(value, Exception):
            return KFoldResult(candidate, None, tuple(fold_elpd), f"fold {k}: {type(value).__name__}: {' '.join(str(value).split())}")
        pointwise[test] = value
        fold_elpd.append(float(np.sum(value)))
    return KFoldResult(candidate, pointwise, tuple(fold_elpd))


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
