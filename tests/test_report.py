"""End to end: a small spec run into a report — every file, the numbers against numpy, results.nc, determinism,
a real browser, and the previous report kept when a run fails."""

import json
import re
import shutil

import arviz as az
import numpy as np
import pytest
import xarray as xr
from matplotlib.image import imread

import reference
from bayeskern import cli, spec
from bayeskern.datasets import sinusoid
from bayeskern.analysis import run_analysis
from bayeskern.report import results_tree, write_report

SMALL = """
name = "small"
description = "a small test spec"
seed = 1
[data]
source = "sinusoid"
n = 10
noise = 0.1
seed = 3
[priors]
ell = "Gamma(alpha=2.0, beta=4.0)"
eta = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "eta * RBF(lengthscale=ell)"
sigma = "noise"
[fit.empirical_bayes]
restarts = 2
[fit.mcmc]
draws = 60
tune = 60
chains = 2
[predict]
start = 0.0
stop = 1.0
num = 21
[checks]
psd = true
kernel_trick = { features = "Polynomial(degree=3)", prior_cov = 2.0 }
[report]
prior_samples = 3
"""

FIGURES = ["fit.png", "kernel_trick.png", "loo_pit.png", "pair.png", "prior_samples.png", "rank.png", "spectrum.png", "trace.png"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The small spec, analysed once through the Python API and written to a report folder."""
    folder = tmp_path_factory.mktemp("small")
    path = folder / "small.toml"
    path.write_text(SMALL)
    analysis = run_analysis(spec.load(path))
    report = write_report(analysis, folder / "report")
    return path, analysis, report


def test_every_file_is_written_and_well_formed(small):
    _, _, report = small
    assert sorted(p.name for p in report.iterdir()) == ["figures", "index.html", "report.md", "results.nc", "summary.json"]
    assert sorted(p.name for p in (report / "figures").iterdir()) == FIGURES
    for png in (report / "figures").iterdir():
        assert imread(png).shape[0] > 100  # decodes as an image
    html = (report / "index.html").read_text()
    assert html.count("data:image/png;base64,") == len(FIGURES) and "src=\"figures/" not in html  # self-contained
    md = (report / "report.md").read_text()
    assert all(f"(figures/{name})" in md for name in FIGURES)
    assert _caption(report, "fit.png") == "Data with the posterior mean and 95% band: empirical Bayes (orange, dashed band) and MCMC (green, shaded)."
    summary = json.loads((report / "summary.json").read_text())
    assert set(summary) >= {"name", "data", "model", "candidates", "selected", "empirical_bayes", "mcmc", "eb_vs_mcmc",
                            "checks", "gram_spectrum", "warnings", "files", "versions", "seed"}
    assert set(summary["empirical_bayes"]) >= {"params", "log_marginal_likelihood", "converged", "grad_norm", "laplace_sd", "at_bound"}
    assert set(summary["mcmc"]) >= {"diagnostics", "verdict", "loo", "posterior_mean"}
    assert set(summary["mcmc"]["diagnostics"]) >= {"passed", "problems", "divergences", "ebfmi", "table"}
    # 2 × 60 draws fall short of 100 effective draws per chain: the verdict is warned of (each distinct warning once)
    failed = [w for w in summary["warnings"] if w.startswith("FitWarning: diagnostics failed: ")]
    assert summary["mcmc"]["diagnostics"]["passed"] is False and len(failed) == 1 and "ESS" in failed[0]
    assert summary["checks"]["psd"]["is_psd"] is True and "eigenvalues" in summary["checks"]["psd"]
    # the spec audits an RBF kernel against cubic features: k ≠ φᵀΣφ, and the audit must say so
    assert summary["checks"]["kernel_trick"]["passed"] is False and summary["checks"]["kernel_trick"]["rel_diff"]["mean"] > 1e-3
    assert sorted(summary["files"]) == sorted(["index.html", "report.md", "results.nc", "summary.json"] + [f"figures/{n}" for n in FIGURES])


def test_the_reported_numbers_match_numpy(small):
    """The EB optimum's log marginal likelihood and the grid posterior against a numpy GP written from PRML 6.66–6.67
    (plain solves; rtol 1e-9 allows round-off of the two factorisations), the spectrum against numpy's eigvalsh."""
    _, analysis, report = small
    summary = json.loads((report / "summary.json").read_text())
    p = summary["empirical_bayes"]["params"]
    X, t = analysis.data.X, analysis.data.y
    grid = np.linspace(0, 1, 21)[:, None]
    k = lambda A, B: p["eta"] * reference.rbf(A, B, p["ell"])  # noqa: E731
    mean, cov, lml = reference.gp_posterior(k(X, X), k(X, grid), k(grid, grid), t, p["noise"])
    np.testing.assert_allclose(summary["empirical_bayes"]["log_marginal_likelihood"], lml, rtol=1e-9)
    results = xr.open_datatree(report / "results.nc")
    predictions = results["predictions"].to_dataset()
    np.testing.assert_allclose(predictions["mean"].values, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(predictions["sd"].values, np.sqrt(np.clip(np.diag(cov), 0, None)), rtol=1e-7, atol=1e-10)
    # leave-one-out at θ̂ by brute force: refit without point i (R&W 5.10–5.12 give the same in closed form)
    loo = [reference.gp_posterior(k(np.delete(X, i, 0), np.delete(X, i, 0)), k(np.delete(X, i, 0), X[i:i + 1]), k(X[i:i + 1], X[i:i + 1]),
                                  np.delete(t, i), p["noise"]) for i in range(len(t))]
    np.testing.assert_allclose(predictions["loo_mean"].values, [m[0] for m, _, _ in loo], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(predictions["loo_sd"].values, [np.sqrt(c[0, 0] + p["noise"] ** 2) for _, c, _ in loo], rtol=1e-8)
    eig = np.linalg.eigvalsh(k(X, X))
    np.testing.assert_allclose(results["checks"].to_dataset()["gram_eigenvalues"].values, eig, atol=1e-12 * eig.max())
    # the MCMC posterior means in the summary are those of the draws in results.nc
    posterior = results["posterior"].to_dataset()
    for name, value in summary["mcmc"]["posterior_mean"].items():
        np.testing.assert_allclose(value, posterior[name].mean().item(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto")  # true of 2 × 60 draws (k̂ above 0.52); the report has it
def test_results_nc_round_trips_exactly(small):
    _, analysis, report = small
    written = results_tree(analysis)
    back = xr.open_datatree(report / "results.nc")
    assert set(back.children) == set(written.children) >= {"posterior", "sample_stats", "log_likelihood", "posterior_predictive",
                                                          "observed_data", "data", "candidates", "empirical_bayes", "predictions", "checks", "loo"}
    for name in written.children:
        xr.testing.assert_equal(back[name].to_dataset(), written[name].to_dataset())
    # the loo group is ArviZ's PSIS-LOO of the stored log_likelihood: recomputed from the file, the same numbers
    again = az.loo(back, pointwise=True)
    np.testing.assert_array_equal(back["loo"]["elpd_loo_i"].values, again.elpd_i.values)
    np.testing.assert_array_equal(back["loo"]["pareto_k"].values, again.pareto_k.values)
    assert back["loo"].attrs["elpd_loo"] == float(again.elpd) and back["loo"]["elpd_loo_i"].values.sum() == pytest.approx(float(again.elpd), rel=1e-12)


def _without_times(summary: dict) -> dict:
    summary.pop("seconds")  # wall times differ between runs; nothing else may
    for key in ("seconds", "compile_seconds"):
        summary["empirical_bayes"].pop(key)
    for key in ("seconds", "cheaper"):  # the audit times both sides and says which was faster
        summary["checks"]["kernel_trick"].pop(key)
    return summary


def test_the_same_seed_gives_the_same_numbers_through_the_command(small, tmp_path, capsys):
    path, _, report = small
    assert cli.main(["run", str(path), "--out", str(tmp_path / "again")]) == 0
    # where the MCMC's time went (a first run of a structure compiles for most of it), the parts adding up to the whole
    said = re.search(r"done in ([\d.]+) s: compiling, loading or reusing the model ([\d.]+) s, sampling ([\d.]+) s, "
                     r"predictions and pointwise log-likelihoods ([\d.]+) s", capsys.readouterr().err)
    assert said is not None
    whole, *parts = map(float, said.groups())
    assert abs(whole - sum(parts)) <= 0.15 and all(p >= 0 for p in parts)  # (each rounded to 0.1 s)
    first, again = (_without_times(json.loads((f / "summary.json").read_text())) for f in (report, tmp_path / "again"))
    assert first == again
    a, b = xr.open_datatree(report / "results.nc"), xr.open_datatree(tmp_path / "again" / "results.nc")
    for name in a.children:  # equal values; attributes such as created_at and sampling_time differ
        xr.testing.assert_equal(a[name].to_dataset(), b[name].to_dataset())


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is needed for the browser test: apt-get install chromium (.ci/run installs it)")
    return path


def test_the_report_opens_in_a_real_browser(small):
    """Headless Chromium loads index.html: every image decodes and the console shows no errors."""
    from playwright.sync_api import sync_playwright

    _, _, report = small
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((report / "index.html").as_uri())
            page.wait_for_load_state("load")
            images = page.evaluate("() => Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
            title = page.title()
            headings = page.evaluate("() => Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
        finally:
            browser.close()
    assert len(images) == len(FIGURES)
    assert all(done and w > 100 and h > 100 for done, w, h in images), images
    assert errors == []
    assert title == "small"
    assert {"Empirical Bayes (type-II maximum likelihood)", "MCMC (NUTS)", "Empirical Bayes against MCMC", "Checks"} <= set(headings)


def test_a_failed_run_keeps_the_previous_report(small, tmp_path, monkeypatch, capsys):
    path, analysis, report = small
    folder = tmp_path / "kept"
    shutil.copytree(report, folder)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    def disk_full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xr.DataTree, "to_netcdf", disk_full)  # fails after index.html, report.md and the figures are written
    monkeypatch.setattr("bayeskern.analysis.run_analysis", lambda *args, **kwargs: analysis)
    assert cli.main(["run", str(path), "--out", str(folder)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]  # no temporary folder left behind


BLR = """
name = "order"
[data]
source = "sinusoid"
n = 12
noise = 0.2
seed = 0
[priors]
a = "HalfNormal(sigma=10.0)"
noise = "HalfNormal(sigma=1.0)"
[model]
kind = "blr"
features = ["Polynomial(degree=1)", "Polynomial(degree=3)"]
prior_cov = "a"
sigma = "noise"
[fit.empirical_bayes]
restarts = 2
[predict]
start = 0.0
stop = 1.0
num = 11
[checks]
kernel_trick = {}
[report]
prior_samples = 2
"""


def test_a_blr_audit_with_other_features_asks_whether_the_models_kernel_is_theirs(tmp_path):
    """With features given, a BLR model's audit compares the model's own kernel φ₃ᵀΣ̂φ₃ (the cubic at its fitted prior
    variance) with φᵀΣφ of the given features, as a GP model's does; it once compared the given features with their own
    kernel, and passed whatever the model. The summary names both sides."""
    path = tmp_path / "other.toml"
    path.write_text(BLR.replace('features = ["Polynomial(degree=1)", "Polynomial(degree=3)"]', 'features = ["Polynomial(degree=3)"]')
                    .replace("kernel_trick = {}", 'kernel_trick = { features = "Fourier(order=2)" }'))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "r")]) == 0
    audit = json.loads((tmp_path / "r" / "summary.json").read_text())["checks"]["kernel_trick"]
    assert audit["passed"] is False and audit["rel_diff"]["cov"] > 1e-3
    assert audit["features"] == "Fourier(order=2, period=1.0)" and audit["prior_cov"] == 1.0
    assert audit["kernel"].startswith("FeatureKernel(Monomials(degree=3), prior_cov=")  # Polynomial(3) is Monomials(3)
    # the report says what was compared and what the failure means (it once said "kernel_trick: FAILED." alone)
    assert "differ beyond rtol = 1e-08 (relative difference: " in (tmp_path / "r" / "report.md").read_text()
    assert "that kernel is not φᵀΣφ of those features." in (tmp_path / "r" / "report.md").read_text()


def test_blr_candidates_ranked_by_evidence(tmp_path):
    """Each feature map's evidence at its optimum against numpy's N(t | 0, σ²I + a·ΦΦᵀ) (rtol 1e-9); the best is analysed."""
    path = tmp_path / "order.toml"
    path.write_text(BLR)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "r")]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    X, t = sinusoid(12, 0.2, 0)
    lml = [c["log_marginal_likelihood"] for c in summary["candidates"]]
    assert summary["selected"]["index"] == int(np.argmax(lml))
    best = summary["empirical_bayes"]["params"]
    Phi = reference.poly_features(X, [1, 3][summary["selected"]["index"]])
    expected = reference.blr_posterior(Phi, t, best["noise"], best["a"] * np.eye(Phi.shape[1]), Phi)[4]
    np.testing.assert_allclose(lml[summary["selected"]["index"]], expected, rtol=1e-9)
    assert summary["mcmc"] is None and summary["eb_vs_mcmc"] is None
    # the selected features at the fitted α⁻¹, σ: weight space equals function space (the audit's rtol 1e-8)
    assert summary["checks"]["kernel_trick"]["passed"] is True
    assert "agree within rtol = 1e-08: on these points that kernel is φᵀΣφ of those features." in (tmp_path / "r" / "report.md").read_text()
    assert sorted(p.name for p in (tmp_path / "r" / "figures").iterdir()) == ["evidence.png", "fit.png", "kernel_trick.png", "prior_samples.png", "spectrum.png"]
    # the fit figure's caption names the bands it draws: empirical Bayes alone here (it once named an MCMC band too)
    assert _caption(tmp_path / "r", "fit.png") == "Data with the posterior mean and 95% band: empirical Bayes (orange, dashed band)."
    # a BLR's prior draws are of f = Φw (they were captioned "GP prior", a user trial)
    assert _caption(tmp_path / "r", "prior_samples.png").startswith("Functions drawn from the prior of f = Φw, w ~ N(0, Σ) at")


def test_inputs_of_several_dimensions_get_leave_one_out_predictions(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(15, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=15)
    np.savetxt(tmp_path / "d.csv", np.column_stack([X, y]), delimiter=",", header="u,v,y", comments="")
    (tmp_path / "s.toml").write_text("""
[data]
source = "csv"
path = "d.csv"
x = ["u", "v"]
y = "y"
[priors]
ell = "Gamma(alpha=2.0, beta=1.0)"
[model]
kind = "gp"
kernel = "RBF(lengthscale=ell) + Linear()"
sigma = 0.1
[checks]
psd = true
""")
    assert cli.main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 0
    assert sorted(p.name for p in (tmp_path / "r" / "figures").iterdir()) == ["loo_predictions.png", "spectrum.png"]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["data"]["inputs"] == ["u", "v"] and summary["data"]["n"] == 15
    # the leave-one-out predictions at θ̂ against refits without each point (numpy, PRML 6.66–6.67; rtol 1e-8)
    ell = summary["empirical_bayes"]["params"]["ell"]
    k = lambda A, B: reference.rbf(A, B, ell) + reference.linear(A, B)  # noqa: E731
    loo = [reference.gp_posterior(k(np.delete(X, i, 0), np.delete(X, i, 0)), k(np.delete(X, i, 0), X[i:i + 1]),
                                  k(X[i:i + 1], X[i:i + 1]), np.delete(y, i), 0.1) for i in range(15)]
    predictions = xr.open_datatree(tmp_path / "r" / "results.nc")["predictions"].to_dataset()
    np.testing.assert_allclose(predictions["loo_mean"].values, [m[0] for m, _, _ in loo], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(predictions["loo_sd"].values, [np.sqrt(c[0, 0] + 0.01) for _, c, _ in loo], rtol=1e-8)


def test_a_kernel_that_is_not_psd_gets_one_clear_line_and_no_report(tmp_path, capsys):
    """tanh(5xᵀx′ − 1) is not positive semi-definite on these inputs: found when the model is built, before any fit, so
    a bad spec (exit 2) naming model.kernel; a sentence, no traceback, no folder."""
    (tmp_path / "s.toml").write_text("""
[data]
source = "sinusoid"
n = 12
noise = 0.1
[priors]
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "Sigmoid(a=5.0, b=-1.0)"
sigma = "noise"
""")
    assert cli.main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("bayeskern: error:")]
    assert len(err) == 1 and f"{tmp_path / 's.toml'}: model.kernel:" in err[0] and "not positive semi-definite" in err[0]
    assert "Traceback" not in err[0]
    assert not (tmp_path / "r").exists()


def test_chains_that_never_moved_get_one_clear_line_and_no_report(tmp_path, capsys):
    """A review's spec with tune = 0: NUTS rejected every step from its first step size, and ArviZ's PSIS-LOO failed with
    "All tail values are the same" (exit 1, no word of why). Now the run says which chains never moved (exit 1, no folder)."""
    (tmp_path / "s.toml").write_text(SMALL.replace("tune = 60", "tune = 0").replace("[predict]\nstart = 0.0\nstop = 1.0\nnum = 21\n", ""))
    assert cli.main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("bayeskern: error:")]
    assert err == ["bayeskern: error: MCMC chain(s) 0, 1 of 2 never moved: each of their 60 draws is the same point; "
                   "give the sampler tuning steps (tune)"], err
    assert not (tmp_path / "r").exists()


def test_mcmc_only_reports_at_the_posterior_mean_with_noise_bands(tmp_path):
    """Without EB the point summaries use the posterior mean of θ; include_noise = true puts σ² in the grid sd
    (numpy GP at that point, sd² = diag cov + σ², rtol 1e-8)."""
    text = SMALL.replace("[fit.empirical_bayes]\nrestarts = 2\n", "").replace("num = 21", "num = 5\ninclude_noise = true")
    (tmp_path / "s.toml").write_text(text.replace('name = "small"', 'name = "mcmc_only"'))
    assert cli.main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["empirical_bayes"] is None and summary["eb_vs_mcmc"] is None
    assert summary["selected"]["point_is"] == "posterior mean"
    p = summary["selected"]["point"]
    results = xr.open_datatree(tmp_path / "r" / "results.nc")
    posterior = results["posterior"].to_dataset()
    for name in ("ell", "eta", "noise"):
        np.testing.assert_allclose(p[name], posterior[name].mean().item(), rtol=1e-12)
    X, t = sinusoid(10, 0.1, 3)
    grid = np.linspace(0, 1, 5)[:, None]
    k = lambda A, B: p["eta"] * reference.rbf(A, B, p["ell"])  # noqa: E731
    mean, cov, _ = reference.gp_posterior(k(X, X), k(X, grid), k(grid, grid), t, p["noise"])
    predictions = results["predictions"].to_dataset()
    np.testing.assert_allclose(predictions["mean"].values, mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(predictions["sd"].values, np.sqrt(np.diag(cov) + p["noise"] ** 2), rtol=1e-8)
    assert "mcmc_y_lower" in predictions and np.all(predictions["mcmc_y_lower"] < predictions["mcmc_f_lower"])
    assert _caption(tmp_path / "r", "fit.png") == ("Data with the posterior mean and 95% band: the exact GP at the posterior-mean "
                                                   "hyperparameters (orange, dashed band) and MCMC (green, shaded).")


def _caption(report, figure: str) -> str:
    """The caption report.md gives `figure`: its image's text, ![caption](figures/name)."""
    found = re.search(rf"!\[(.*?)\]\(figures/{re.escape(figure)}\)", (report / "report.md").read_text())
    return found.group(1)


HSGP_SPEC = """
name = "hsgp"
seed = 2
[data]
source = "sinusoid"
n = 12000
noise = 0.2
seed = 5
[priors]
ell = "LogNormal(mu=-1.5, sigma=0.5)"
eta = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "eta * RBF(lengthscale=ell)"
sigma = "noise"
approx = "HSGP(m=60, c=3.0)"
[fit.empirical_bayes]
restarts = 2
[predict]
start = 0.0
stop = 1.0
num = 50
"""


def test_an_approximate_gp_spec_beyond_the_exact_limit_gets_its_audit_in_the_report(tmp_path):
    """n = 12 000 > MAX_N (exact) with model.approx: fitted, and the report's Approximation section is the audit recomputed here."""
    path = tmp_path / "hsgp.toml"
    path.write_text(HSGP_SPEC)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "r")]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    audit = summary["checks"]["approximation"]
    p = summary["empirical_bayes"]["params"]
    X, t = sinusoid(12000, 0.2, 5)
    import bayeskern as bk

    again = bk.checks.approximation_error(p["eta"] * bk.kernels.RBF(p["ell"]), bk.approx.HSGP(m=60, c=3.0), X, t, p["noise"],
                                          Xnew=np.linspace(0.0, 1.0, 50), subsample=2000, seed=2)
    assert audit == again.to_dict()
    assert audit["passed"] is True and audit["n_points"] == 2000
    assert p["noise"] == pytest.approx(0.2, rel=0.05)
    report = (tmp_path / "r" / "report.md").read_text()
    assert "## Approximation" in report and "HSGP(m=60, c=3.0, L=None) against the exact GP" in report


def test_a_kernel_trick_difference_that_is_not_finite_is_said_so():
    """`summary.json` holds a relative difference that overflowed (one side's mean exactly 0) as None: the report's
    sentence says "not finite" where it once raised a TypeError comparing None with a float, and lost the report."""
    from bayeskern.report.document import _kernel_trick_sentence

    failed = {"passed": False, "rtol": 1e-8, "rel_diff": {"mean": None, "cov": 0.02, "log_marginal_likelihood": 0.5}}
    assert "(relative difference: not finite)" in _kernel_trick_sentence(failed)
    failed["rel_diff"]["mean"] = 0.9
    assert "(relative difference: mean by 0.9)" in _kernel_trick_sentence(failed)


def test_a_report_on_standardised_data_says_so_and_records_the_means_and_sds(tmp_path):
    """`standardize = true` on a CSV: the report says the numbers are in standardised units and the grid was given in the
    input's own; results.nc's data group holds the means and sds as attributes (numpy's), the predictions' x the z-scores."""
    from test_analysis import STANDARDISED_CSV, write_years

    year, level = write_years(tmp_path, 20)
    (tmp_path / "s.toml").write_text(STANDARDISED_CSV)
    assert cli.main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 0
    assert "The analysis runs in these standardised units: every number and figure below (the prediction grid, given in the input's own units" in (tmp_path / "r" / "report.md").read_text()
    tree = xr.open_datatree(tmp_path / "r" / "results.nc")
    np.testing.assert_allclose([tree["data"].attrs["x_mean"], tree["data"].attrs["x_sd"], tree["data"].attrs["y_mean"], tree["data"].attrs["y_sd"]],
                               [year.mean(), year.std(), level.mean(), level.std()], rtol=1e-12)
    np.testing.assert_allclose(tree["predictions"]["x"].values, (np.linspace(1961.0, 1989.0, 7) - year.mean()) / year.std(), rtol=0, atol=1e-12)
