"""K-fold cross-validation of spec candidates (bayeskern.cv, [cv]): the folds, elpd_kfold against a brute-force numpy
computation at each fold's EB optimum, K = n without refitting against the closed-form LOO, failures, spec errors, report."""

import json

import numpy as np
import pytest
import xarray as xr
from threadpoolctl import threadpool_limits

import bayeskern as bk
from bayeskern import cli, cv
from bayeskern import spec as specs
from bayeskern.analysis import run_analysis
from bayeskern.datasets import Data
from bayeskern.report import write_report

SPEC = """
name = "cv"
seed = 4
[data]
source = "sinusoid"
n = 24
noise = 0.2
seed = 1
[priors]
ell = "Gamma(alpha=2.0, beta=8.0)"
amp = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = ["amp * RBF(lengthscale=ell)", "amp * RBF(lengthscale=ell) + Linear()"]
sigma = "noise"
[fit.empirical_bayes]
restarts = 2
"""


def _spec(tmp_path, cv_section: str):
    path = tmp_path / "cv.toml"
    path.write_text(SPEC + cv_section)
    return specs.load(path)


def gp_log_predictive(X, y, Xs, ys, amp, ell, sigma, linear: bool):
    """log N(ys | μ, v): the GP predictive of new observations from the formula (R&W 2.23–2.24), in numpy."""
    k = lambda A, B: amp * np.exp(-0.5 * (A[:, None, 0] - B[None, :, 0]) ** 2 / ell**2) + (A @ B.T if linear else 0.0)  # noqa: E731
    C = k(X, X) + sigma**2 * np.eye(len(X))
    Ks = k(X, Xs)
    mean = Ks.T @ np.linalg.solve(C, y)
    var = amp + (np.sum(Xs**2, axis=1) if linear else 0.0) - np.sum(Ks * np.linalg.solve(C, Ks), axis=0) + sigma**2
    return -0.5 * np.log(2 * np.pi * var) - 0.5 * (ys - mean) ** 2 / var


def test_folds_partition_the_rows_contiguously_or_by_a_seeded_shuffle():
    contiguous = cv.fold_indices(10, 3, False, 0)
    assert [f.tolist() for f in contiguous] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    shuffled = cv.fold_indices(10, 3, True, 5)
    assert sorted(np.concatenate(shuffled).tolist()) == list(range(10)) and [len(f) for f in shuffled] == [4, 3, 3]
    assert [f.tolist() for f in shuffled] == [f.tolist() for f in cv.fold_indices(10, 3, True, 5)]
    assert shuffled[0].tolist() != contiguous[0].tolist()
    seeds = {cv.task_seed(4, i, k) for i in range(3) for k in range(5)}
    assert len(seeds) == 15 and cv.task_seed(4, 1, 2) == cv.task_seed(4, 1, 2)


def test_elpd_kfold_is_the_numpy_predictive_at_each_folds_own_optimum(tmp_path):
    spec = _spec(tmp_path, "[cv]\nfolds = 4\n")
    a = run_analysis(spec)
    data = a.data
    for i, result in enumerate(a.cv):
        expected = []
        for k, test in enumerate(a.cv_folds):
            train = np.setdiff1d(np.arange(len(data.y)), test)
            split = Data(data.X[train], data.y[train], data.x_names, data.y_name, "")
            with threadpool_limits(limits=1):  # as every task runs: BLAS's thread count moves the optimum by round-off (~1e-8)
                fit = bk.fit.empirical_bayes(spec.model(spec.candidates[i], split), seed=cv.task_seed(a.seed, i, k), restarts=2)
            p = fit.params
            expected.append(gp_log_predictive(data.X[train], data.y[train], data.X[test], data.y[test], p["amp"], p["ell"], p["noise"], i == 1))
        # the same optimum, scored by the package's Cholesky and by numpy's solve: round-off of ~1e-12 relative
        np.testing.assert_allclose(result.pointwise, np.concatenate(expected), rtol=1e-9)
        assert result.elpd == pytest.approx(np.sum(np.concatenate(expected)), rel=1e-10)
        assert result.se == pytest.approx(np.sqrt(24 * np.var(result.pointwise)), rel=1e-12)


def test_with_fixed_hyperparameters_and_one_point_per_fold_it_is_the_closed_form_loo(tmp_path):
    a = run_analysis(_spec(tmp_path, "[cv]\nfolds = 24\nrefit = false\n"))
    for c, result in zip(a.candidates, a.cv):
        # n refits of the GP on n − 1 points against R&W 5.12 from one factorisation: the same numbers to round-off
        np.testing.assert_allclose(result.pointwise, c.eb.conditioned.loo_log_predictive, rtol=1e-9)


def test_the_report_ranks_the_candidates_with_differences_and_their_standard_errors(tmp_path):
    a = run_analysis(_spec(tmp_path, "[cv]\nfolds = 3\nshuffle = true\nseed = 9\n"))
    folder = write_report(a, tmp_path / "report")
    summary = json.loads((folder / "summary.json").read_text())
    table = summary["cross_validation"]["table"]
    best, other = table
    assert best["rank"] == 0 and best["elpd_kfold"] >= other["elpd_kfold"] and best["elpd_diff"] == 0.0
    diff = next(r for r in a.cv if r.candidate == best["candidate"]).pointwise - next(r for r in a.cv if r.candidate == other["candidate"]).pointwise
    assert other["elpd_diff"] == pytest.approx(np.sum(diff), rel=1e-12) and other["dse"] == pytest.approx(np.sqrt(24 * np.var(diff)), rel=1e-12)
    assert summary["cross_validation"]["shuffle"] is True and summary["cross_validation"]["fold_sizes"] == [8, 8, 8]
    assert "Cross-validation" in (folder / "report.md").read_text()
    # results.nc holds the same numbers as arrays: pointwise densities, elpd and se per candidate, each row's fold
    with xr.open_datatree(folder / "results.nc") as dt:
        held = dt["cross_validation"].to_dataset().load()
    for row in table:
        one = held.sel(candidate=row["candidate"])
        assert float(one["elpd_kfold"]) == row["elpd_kfold"] and float(one["elpd_kfold_se"]) == row["se"]
        np.testing.assert_array_equal(one["pointwise_elpd"].values, next(r for r in a.cv if r.candidate == row["candidate"]).pointwise)
        assert [float(one["pointwise_elpd"].values[held["fold"].values == k].sum()) for k in range(3)] == pytest.approx(row["fold_elpd"], rel=1e-12)
    assert held.attrs["folds"] == 3 and held.attrs["seed"] == 9


def test_a_candidate_that_fails_on_a_fold_is_reported_and_the_run_exits_1(tmp_path, monkeypatch, capsys):
    spec = _spec(tmp_path, "[cv]\nfolds = 3\n")
    real = cv.refit_fold

    def failing(spec, index, data, test, fold, seed):
        if index == 1 and fold == 2:
            raise ValueError("K + sigma^2 I is not positive definite")
        return real(spec, index, data, test, fold, seed)

    monkeypatch.setattr(cv, "refit_fold", failing)
    code = cli.main(["run", str(spec.path), "--out", str(tmp_path / "out")])
    assert code == 1
    err = capsys.readouterr().err
    assert "cross-validation failed for 1 candidate(s): cv: amp * RBF(lengthscale=ell) + Linear() (fold 2: ValueError" in err
    table = json.loads((tmp_path / "out" / "summary.json").read_text())["cross_validation"]["table"]
    assert table[0]["error"] is None and table[0]["elpd_kfold"] is not None
    assert table[1]["error"].startswith("fold 2: ValueError") and table[1]["rank"] is None and len(table[1]["fold_elpd"]) == 2


@pytest.mark.parametrize(
    "section, key, match",
    [("[cv]\nfolds = 1\n", "cv.folds", "at least 2"), ("[cv]\nfolds = 3\nk = 1\n", "cv.k", "unknown key"),
     ("[cv]\nfolds = 3\nshuffle = 1\n", "cv.shuffle", "true or false"), ("[cv]\nfolds = 3\nseed = -1\n", "cv.seed", "whole number")],
)
def test_bad_cv_sections_are_spec_errors(tmp_path, section, key, match):
    with pytest.raises(specs.SpecError, match=f"{key}: .*{match}"):
        _spec(tmp_path, section)


def test_more_folds_than_rows_and_cv_without_empirical_bayes_are_refused(tmp_path):
    with pytest.raises(specs.SpecError, match="cv.folds: must be at most the number of data rows \\(24\\)"):
        _spec(tmp_path, "[cv]\nfolds = 25\n").load_data()
    path = tmp_path / "mc.toml"
    path.write_text(SPEC.replace('kernel = ["amp * RBF(lengthscale=ell)", "amp * RBF(lengthscale=ell) + Linear()"]', 'kernel = "amp * RBF(lengthscale=ell)"')
                    .replace("[fit.empirical_bayes]\nrestarts = 2\n", "[fit.mcmc]\ndraws = 50\n") + "[cv]\nfolds = 3\n")
    with pytest.raises(specs.SpecError, match="cv: cross-validation fits each training split by empirical Bayes"):
        specs.load(path)
