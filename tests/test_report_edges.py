"""The report at its edges: the EB-against-MCMC figures where f is known exactly, MAP-II named with both numbers, one
round-off number in the PSD section, and a failed approximation audit among the warnings."""

import json
import re

import numpy as np
import pytest
import xarray as xr
from scipy.stats import halfnorm

import reference
from bayeskern import cli, spec
from bayeskern.analysis import run_analysis
from bayeskern.datasets import sinusoid
from bayeskern.report import write_report

#: k(x, x′) = a·x·x′ on a grid that starts at x = 0, where f = 0 exactly under every θ; MAP-II; the PSD check
LINEAR = """
name = "linear"
seed = 1
[data]
source = "sinusoid"
n = 15
noise = 0.2
seed = 3
[priors]
a = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "a * Linear()"
sigma = "noise"
[fit.empirical_bayes]
restarts = 2
include_prior = true
[fit.mcmc]
draws = 60
tune = 60
chains = 2
[predict]
start = 0.0
stop = 1.0
num = 11
[checks]
psd = true
[report]
prior_samples = 0
"""


@pytest.fixture(scope="module")
def linear(tmp_path_factory):
    """The linear spec analysed once and written: (summary, report.md, results.nc, θ̂, X, t)."""
    folder = tmp_path_factory.mktemp("linear")
    (folder / "linear.toml").write_text(LINEAR)
    report = write_report(run_analysis(spec.load(folder / "linear.toml")), folder / "report")
    summary = json.loads((report / "summary.json").read_text())
    X, t = sinusoid(15, 0.2, 3)
    return summary, (report / "report.md").read_text(), xr.open_datatree(report / "results.nc"), summary["empirical_bayes"]["params"], X, t


def test_grid_points_where_f_is_known_exactly_are_left_out_of_the_eb_mcmc_figures(linear):
    """At x = 0 both sds of f are 0 (0/0): the gap and the sd ratio are computed on the other 10 points, against numpy
    (EB: PRML 6.66–6.67; MCMC: Var f = E[Var f | θ] + Var E[f | θ] over the draws), and the report says one was left out."""
    summary, md, results, p, X, t = linear
    grid = np.linspace(0, 1, 11)[:, None]
    k = lambda A, B: p["a"] * reference.linear(A, B)  # noqa: E731
    mean, cov, _ = reference.gp_posterior(k(X, X), k(X, grid), k(grid, grid), t, p["noise"])
    pp = results["posterior_predictive"].to_dataset()
    f_mean = pp["f_mean"].values.reshape(-1, 11)
    f_var = pp["f_var"].values.reshape(-1, 11)
    mix_mean, mix_sd = f_mean.mean(0), np.sqrt(f_var.mean(0) + f_mean.var(0))
    assert mix_sd[0] == 0 and cov[0, 0] == 0 and np.all(mix_sd[1:] > 0)
    eb_sd = np.sqrt(np.diag(cov)[1:])
    cmp = summary["eb_vs_mcmc"]
    assert cmp["exact_points"] == 1
    np.testing.assert_allclose(cmp["max_mean_gap_sd"], np.max(np.abs(mean[1:] - mix_mean[1:]) / mix_sd[1:]), rtol=1e-6)
    ratio = eb_sd / mix_sd[1:]
    np.testing.assert_allclose(cmp["sd_ratio"], [ratio.min(), np.median(ratio), ratio.max()], rtol=1e-6)
    assert not any("invalid value" in w for w in summary["warnings"])
    assert f"differ in mean by at most {cmp['max_mean_gap_sd']:.3g} MCMC sd of f" in md
    assert "Left out of these figures: 1 grid point where both sds of f are 0 (f is known exactly there" in md


def test_map_ii_is_named_and_states_the_maximised_objective_and_the_evidence(linear):
    """With include_prior the section is MAP-II and gives log p(t | θ̂) + log p(θ̂) and log p(t | θ̂), both against numpy
    (N(t | 0, K + σ²I) and the half-normal densities of the priors)."""
    summary, md, _, p, X, t = linear
    _, _, lml = reference.gp_posterior(p["a"] * reference.linear(X, X), np.zeros((15, 0)), np.zeros((0, 0)), t, p["noise"])
    log_prior = halfnorm.logpdf(p["a"], scale=2.0) + halfnorm.logpdf(p["noise"], scale=0.5)
    eb = summary["empirical_bayes"]
    np.testing.assert_allclose([eb["log_marginal_likelihood"], eb["objective"]], [lml, lml + log_prior], rtol=1e-9)
    assert "## Empirical Bayes (MAP-II, type-II maximum a posteriori)" in md and "type-II maximum likelihood" not in md
    assert (f"maximised log p(t | θ̂) + log p(θ̂) = {lml + log_prior:.6g}, of which log p(t | θ̂) = {lml:.6g};") in md


def test_the_psd_section_states_one_round_off_number_the_one_checks_psd_uses(linear):
    """The Gram sentence, the checks.psd verdict and summary.json give one round-off scale, n·ε·max|λ| (numpy's eigvalsh
    of a·XXᵀ), and min_relative = λmin / that."""
    summary, md, _, p, X, _ = linear
    lam = np.linalg.eigvalsh(p["a"] * reference.linear(X, X))
    scale = 15 * np.finfo(float).eps * np.max(np.abs(lam))
    np.testing.assert_allclose(summary["gram_spectrum"]["roundoff"], scale, rtol=1e-9)
    assert summary["checks"]["psd"]["min_relative"] == pytest.approx(summary["gram_spectrum"]["min"] / scale, rel=1e-9)
    assert f"round-off scale n·ε·max|λ| = {scale:.3g} (as checks.psd" in md
    numbers = set(re.findall(r"round-off (?:scale|tolerance)[^=]*?(?:= )?(-?[0-9.]+e[-+][0-9]+)", md))
    assert numbers == {f"{scale:.3g}"}  # the Gram sentence and the check's verdict: one number


HSGP = """
name = "hsgp_coarse"
seed = 0
[data]
source = "sinusoid"
n = 300
noise = 0.2
seed = 0
[priors]
eta = "HalfNormal(sigma=2.0)"
ell = "Gamma(alpha=2.0, beta=5.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "eta * RBF(lengthscale=ell)"
sigma = "noise"
approx = "HSGP(m=6, c=1.5)"
[fit.empirical_bayes]
restarts = 2
[predict]
start = 0.0
stop = 1.0
num = 20
[report]
prior_samples = 0
"""


def test_a_failed_approximation_audit_is_among_the_warnings(tmp_path):
    """A basis of 6 functions misses the fitted sinusoid: the audit fails, and the report's Warnings and summary.json say
    so in one sentence with each error beyond its tolerance (the exit code stays 0)."""
    (tmp_path / "h.toml").write_text(HSGP)
    assert cli.main(["run", str(tmp_path / "h.toml"), "--out", str(tmp_path / "r")]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    audit = summary["checks"]["approximation"]
    assert audit["passed"] is False and audit["mean_error"] > audit["mean_tol"]
    [said] = [w for w in summary["warnings"] if "approximation audit" in w]
    assert said.startswith("FitWarning: approximation audit: HSGP(m=6, c=1.5, L=None) is NOT within the tolerances")
    assert f"mean error {audit['mean_error']:.3g}·sd(y) against the tolerance 0.01·sd(y)" in said
    for name, tol in (("predictive-variance error", "var_tol"), ("log-likelihood error", "lml_tol")):
        assert (name in said) == (audit[tol.replace("tol", "error")] > audit[tol])
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"- {said}" in md.split("## Warnings")[1].split("##")[0]


def test_counts_are_printed_whole_and_equal_fold_sizes_once():
    """A review read "n | 2e+03" in the PSD table and "folds of 5–5 points"."""
    from bayeskern.report.document import _num, _span

    assert _num(2000) == "2000" and _num(np.int64(123456)) == "123456" and _num(2000.0) == "2000" and _num(1234.5) == "1234"
    assert _span([5, 5, 5]) == "5" and _span([5, 6]) == "5–6"


def test_the_mcmc_paragraph_says_when_the_grid_predictions_are_thinned():
    from bayeskern.report.document import _mcmc

    mc = {"chains": 2, "draws": 100, "tune": 100, "sampler": "nutpie", "thin": 4, "verdict": "ok",
          "diagnostics": {"divergences": 0, "ebfmi": [1.0, 1.0], "table": {}}, "loo": {"elpd": 1.0, "se": 0.1}, "posterior_mean": {}}
    text = _mcmc({"mcmc": mc}, lambda name: [])[1][1]
    assert "(nutpie; grid predictions from every 4th draw)" in text
    assert "every" not in _mcmc({"mcmc": {**mc, "thin": 1}}, lambda name: [])[1][1]
