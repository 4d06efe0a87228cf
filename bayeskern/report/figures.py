"""The report's figures, each as PNG bytes: ArviZ's plots where ArviZ has the plot, matplotlib for the rest."""

import io
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, never a window

import arviz_plots as azp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bayeskern._linalg import PSD_ROUNDOFF, psd_tolerance  # noqa: E402

__all__ = ["FIGURES", "figures"]

Z95 = 1.959963984540054  # the 97.5% quantile of N(0, 1): mean ± Z95·sd is a central 95% band
EB_COLOUR, MCMC_COLOUR, DATA_COLOUR = "#d95f02", "#1b9e77", "#333333"


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _arviz(plot, dt, **kwargs) -> bytes:
    pc = plot(dt, backend="matplotlib", **kwargs)
    fig = pc.get_viz("figure")
    return _png(getattr(fig, "item", lambda: fig)())  # a Figure, or a 0-d DataArray holding one


def fit_figure(a) -> bytes:
    """The data with the posterior mean and 95% band on the grid: empirical Bayes and MCMC overlaid."""
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    x = a.grid
    what = "y" if a.spec.include_noise else "f"
    if a.bands is not None:
        ax.fill_between(x, a.bands[f"{what}_lower"], a.bands[f"{what}_upper"], color=MCMC_COLOUR, alpha=0.25, label="MCMC 95% band")
        ax.plot(x, a.bands[f"{what}_mean"], color=MCMC_COLOUR, label="MCMC mean")
    label = "EB" if a.chosen.eb is not None else "posterior-mean θ"
    post = a.grid_eb
    ax.plot(x, post.mean - Z95 * post.std, color=EB_COLOUR, ls="--", lw=1, label=f"{label} 95% band")
    ax.plot(x, post.mean + Z95 * post.std, color=EB_COLOUR, ls="--", lw=1)
    ax.plot(x, post.mean, color=EB_COLOUR, label=f"{label} mean")
    ax.plot(a.data.X[:, 0], a.data.y, "o", color=DATA_COLOUR, ms=4, label="data")
    ax.set(xlabel=a.data.label(a.data.x_names[0]), ylabel=a.data.label(a.data.y_name),
           title=f"posterior of {'new observations' if a.spec.include_noise else 'f(x)'}")
    ax.legend(fontsize=8, loc="best")
    return _png(fig)


def loo_figure(a) -> bytes:
    """Observed against leave-one-out predicted targets, with 95% intervals (for inputs of any dimension)."""
    fig = Figure(figsize=(5.5, 5))
    ax = fig.subplots()
    mean, sd = a.loo_eb
    alpha = 0.6 if len(mean) <= 100 else 0.25  # many points: lighter bars
    ax.errorbar(a.data.y, mean, yerr=Z95 * sd, fmt="o", ms=3, color=EB_COLOUR, alpha=alpha, lw=0.8,
                label="p(tᵢ | t₋ᵢ, θ̂)")
    if a.idata is not None:
        draws = a.idata["posterior_predictive"].to_dataset()["y"]
        lo, hi = draws.quantile([0.025, 0.975], dim=("chain", "draw")).values
        m = draws.mean(("chain", "draw")).values
        ax.errorbar(a.data.y, m, yerr=[m - lo, hi - m], fmt="s", ms=3, color=MCMC_COLOUR, alpha=alpha, lw=0.8,
                    label="p(tᵢ | t₋ᵢ, θ) over MCMC draws")
    span = [min(a.data.y.min(), mean.min()), max(a.data.y.max(), mean.max())]
    ax.plot(span, span, color="grey", lw=1)
    ax.set(xlabel=f"observed {a.data.label(a.data.y_name)}", ylabel="leave-one-out prediction", title="leave-one-out predictions")
    ax.legend(fontsize=8)
    return _png(fig)


def prior_figure(a) -> bytes:
    """PRML figure 6.5: functions drawn from the prior of f, at the fitted θ and at θ drawn from the priors."""
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True).ravel()
    for k, (ax, (params, f)) in enumerate(zip(axes, a.prior_draws, strict=False)):
        if f is not None:
            ax.plot(a.grid, f.T, lw=1)
        else:
            ax.text(0.5, 0.5, "kernel not PSD on the grid", ha="center", transform=ax.transAxes)
        text = ", ".join(f"{n}={np.asarray(v).round(3).tolist()}" for n, v in params.items())
        ax.set_title(textwrap.fill(("fitted: " if k == 0 else "prior draw: ") + text, 45), fontsize=7)
    fig.supxlabel(a.data.label(a.data.x_names[0]))
    fig.suptitle(f"functions drawn from {_prior_of_f(a)}")
    return _png(fig)


def _prior_of_f(a) -> str:
    """What the prior draws are draws of: a GP's f (PRML figure 6.5), or a BLR's f = Φw (a GP too, k = φᵀΣφ)."""
    return "the prior of f = Φw, w ~ N(0, Σ)" if a.spec.kind == "blr" else "the GP prior (PRML figure 6.5)"


def prior_caption(a) -> str:
    return f"Functions drawn from {_prior_of_f(a)} at the fitted hyperparameters and at five draws from the priors."


def evidence_figure(a) -> bytes:
    """The candidates' log evidence at their empirical-Bayes optimum (model order on the x-axis)."""
    fig = Figure(figsize=(max(5, 0.9 * len(a.candidates)), 4))
    ax = fig.subplots()
    lml = [c.log_marginal_likelihood for c in a.candidates]
    ax.plot(range(len(lml)), lml, "o-", color=EB_COLOUR)
    ax.plot([a.selected], [lml[a.selected]], "o", ms=12, mfc="none", color="black", label="selected")
    ax.set_xticks(range(len(lml)), [c.expression for c in a.candidates], rotation=30, ha="right", fontsize=8)
    ax.set(ylabel="log p(t | θ̂)", title="evidence of each candidate at its optimum")
    ax.legend(fontsize=8)
    return _png(fig)


def spectrum_figure(a) -> bytes:
    """The Gram matrix's eigenvalues, |λ| on a log scale, negative ones marked, with checks.psd's threshold c·n·ε·max|λ|."""
    lam = a.spectrum[::-1]
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    i = np.arange(1, len(lam) + 1)
    floor = psd_tolerance(lam)
    ax.semilogy(i[lam > 0], lam[lam > 0], "o", ms=4, color=MCMC_COLOUR, label="λ > 0")
    if np.any(lam <= 0):
        ax.semilogy(i[lam <= 0], np.maximum(np.abs(lam[lam <= 0]), 1e-300), "x", color="red", label="|λ|, λ ≤ 0")
    if floor > 0:
        ax.axhline(floor, color="grey", ls=":", label=f"{PSD_ROUNDOFF}·n·ε·max|λ| (checks.psd's threshold)")
    ax.set(xlabel="index", ylabel="eigenvalue", title="eigen-spectrum of the Gram matrix K(X, X) at θ̂")
    ax.legend(fontsize=8)
    return _png(fig)


def kernel_trick_figure(a) -> bytes:
    """The audit: BLR's predictive mean and band against the GP's with k = φᵀΣφ, and their difference."""
    c = a.kernel_trick_curves
    x = c["x"][:, 0]
    order = np.argsort(x)
    fig = Figure(figsize=(7, 5.5))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    for key, colour, style, label in (("weight", EB_COLOUR, "-", "weight space (BLR)"), ("function", MCMC_COLOUR, "--", "function space (GP, k = φᵀΣφ)")):
        m, s = c[f"{key}_mean"][order], c[f"{key}_sd"][order]
        top.plot(x[order], m, style, color=colour, label=label)
        top.plot(x[order], m + Z95 * s, style, color=colour, lw=0.7)
        top.plot(x[order], m - Z95 * s, style, color=colour, lw=0.7)
    top.plot(a.data.X[:, 0], a.data.y, "o", ms=3, color=DATA_COLOUR)
    top.set(title=f"kernel trick: {c['phi']}", ylabel=f"predictive mean ± 95% ({a.data.label(a.data.y_name)})")
    top.legend(fontsize=8)
    for key, colour in (("mean", "black"), ("sd", "grey")):
        diff = np.abs(c[f"weight_{key}"] - c[f"function_{key}"])[order]
        bottom.semilogy(x[order], np.maximum(diff, 1e-300), color=colour, label=f"|Δ {key}|")
    bottom.set(xlabel=a.data.label(a.data.x_names[0]), ylabel="|difference|")
    bottom.legend(fontsize=8)
    return _png(fig)


def fit_caption(a) -> str:
    """fit.png's caption: the bands `fit_figure` draws for the analysis `a`, and no other."""
    point = "empirical Bayes" if a.chosen.eb is not None else "the exact GP at the posterior-mean hyperparameters"
    mcmc = " and MCMC (green, shaded)" if a.bands is not None else ""
    return f"Data with the posterior mean and 95% band: {point} (orange, dashed band){mcmc}."


#: figure file name → (caption, or a function of the analysis that writes it; when it applies; how to draw it)
FIGURES = {
    "fit.png": (fit_caption, lambda a: a.grid_eb is not None, fit_figure),
    "loo_predictions.png": ("Observed targets against their leave-one-out predictions with 95% intervals.",
                            lambda a: a.grid_eb is None, loo_figure),
    "prior_samples.png": (prior_caption, lambda a: bool(a.prior_draws), prior_figure),
    "evidence.png": ("Log evidence of every candidate at its empirical-Bayes optimum.",
                     lambda a: len(a.candidates) > 1, evidence_figure),
    "trace.png": ("MCMC traces and marginal densities per chain (ArviZ plot_trace_dist).",
                  lambda a: a.idata is not None, lambda a: _arviz(azp.plot_trace_dist, a.idata)),
    "rank.png": ("Rank plots: uniform ranks across chains mean the chains mix (ArviZ plot_rank).",
                 lambda a: a.idata is not None, lambda a: _arviz(azp.plot_rank, a.idata)),
    "pair.png": ("Pairwise posterior of the hyperparameters (ArviZ plot_pair).",
                 lambda a: a.idata is not None and len(a.idata["posterior"].data_vars) > 1,
                 lambda a: _arviz(azp.plot_pair, a.idata, marginal=True)),
    "loo_pit.png": ("LOO-PIT: the leave-one-out probability integral transforms should be uniform (ArviZ plot_loo_pit).",
                    lambda a: a.idata is not None, lambda a: _arviz(azp.plot_loo_pit, a.idata)),
    "spectrum.png": (f"Eigenvalues of the Gram matrix at the fitted hyperparameters (Mercer: none below −{PSD_ROUNDOFF}·n·ε·max|λ|, the dotted line).",
                     lambda a: a.spectrum is not None, spectrum_figure),
    "kernel_trick.png": ("The kernel-trick audit: weight-space and function-space predictions and their difference.",
                         lambda a: a.kernel_trick_curves is not None, kernel_trick_figure),
}


def figures(a, say=lambda message: None) -> dict[str, tuple[str, bytes]]:
    """Every figure that applies to the analysis `a`: file name → (caption, PNG bytes)."""
    out = {}
    for name, (caption, applies, draw) in FIGURES.items():
        if applies(a):
            say(f"figure {name}")
            out[name] = (caption(a) if callable(caption) else caption, draw(a))
    return out
