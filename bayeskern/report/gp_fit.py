"""The report of a GP fit: candidate kernels ranked by evidence, the chosen posterior on a grid."""

import io
import json

import numpy as np

__all__ = ["gp_fit_files"]


def gp_fit_files(spec, X, t, candidates: list[dict], best: dict, post) -> dict[str, str]:
    """The files of the report: summary.json, report.md, predictions.csv.

    `candidates`: one dict per kernel with "kernel" and "log_marginal_likelihood".
    `best`: the chosen candidate. `post`: its `bayeskern.gp.posterior` on the grid.
    """
    band = 1.959963984540054 * post.std  # 95% central interval of a Gaussian
    summary = {
        "name": spec.name,
        "description": spec.description,
        "spec": str(spec.path),
        "data": {**spec.data, "n": int(len(t))},
        "model": {"kind": "gp", "sigma": spec.sigma, "mean": "zero"},
        "fit": "kernel chosen by the highest log marginal likelihood among the candidates",
        "candidates": candidates,
        "selected": {**best, "jitter": post.jitter},
        "predictions": {
            "file": "predictions.csv",
            "include_noise": post.include_noise,
            "n_points": int(len(post.mean)),
            "interval": "mean ± 1.96 sd (95%)",
        },
    }
    csv = io.StringIO()
    csv.write("x,mean,sd,lower95,upper95\n")
    for x, m, s, b in zip(post.Xnew[:, 0], post.mean, post.std, band):
        csv.write(f"{x:.10g},{m:.10g},{s:.10g},{m - b:.10g},{m + b:.10g}\n")

    ranked = sorted(candidates, key=lambda c: -c["log_marginal_likelihood"])
    rows = "\n".join(
        f"| {'**→**' if c is best else ''} | `{c['kernel']}` | {c['log_marginal_likelihood']:.4f} |" for c in ranked
    )
    what = "new observations t (noise included)" if post.include_noise else "the latent function f (noise excluded)"
    resid = t - np.interp(X[:, 0], post.Xnew[:, 0], post.mean)
    md = f"""# {spec.name}

{spec.description}

- **Data**: `{spec.data['source']}`, n = {len(t)}, noise sd = {spec.data['noise']}, seed = {spec.data['seed']}.
- **Model**: zero-mean GP, t = f(x) + ε, ε ~ N(0, σ²), σ = {spec.sigma}.
- **Fit**: each candidate kernel's exact log marginal likelihood log p(t | X); the highest is kept.

## Candidate kernels by evidence

| | kernel | log p(t \\| X) |
|---|---|---|
{rows}

Selected: `{best['kernel']}` (jitter added: {post.jitter:g}).

## Posterior on the grid

{len(post.mean)} points in [{post.Xnew[0, 0]:g}, {post.Xnew[-1, 0]:g}], for {what}; mean ± 1.96 sd in
`predictions.csv`. Mean sd over the grid: {np.mean(post.std):.4f}. RMS of data minus the
interpolated posterior mean: {np.sqrt(np.mean(resid**2)):.4f}.
"""
    return {"summary.json": json.dumps(summary, indent=2) + "\n", "report.md": md, "predictions.csv": csv.getvalue()}
