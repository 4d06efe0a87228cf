"""The report's text: one list of blocks (headings, paragraphs, tables, figures), rendered to HTML and to Markdown."""

import base64
import html

import numpy as np

from bayeskern._linalg import PSD_ROUNDOFF

__all__ = ["blocks", "to_html", "to_markdown"]


def _num(v, digits: int = 4) -> str:
    """A number for a table: 4 significant digits, arrays element-wise, None as —."""
    if v is None:
        return "—"
    a = np.asarray(v)
    if a.ndim:
        return "[" + ", ".join(_num(x, digits) for x in a.ravel()) + "]"
    if a.dtype == bool:
        return "yes" if a else "no"
    if a.dtype.kind in "iu":  # a count: every digit (n = 2000, not 2e+03)
        return str(int(a))
    x = float(a)
    return "NaN" if np.isnan(x) else f"{x:.{digits}g}"


def _span(sizes) -> str:
    """"5" for sizes all 5, "5–6" otherwise."""
    return str(min(sizes)) if min(sizes) == max(sizes) else f"{min(sizes)}–{max(sizes)}"


def _edge(bound) -> str:
    """θ̂ of a parameter at the edge of its support: the edge, not where round-off stopped the optimiser."""
    return f"at the edge (→ {'∞' if bound is None else _num(bound)})"  # JSON has no ∞: jsonable wrote null


def blocks(a, summary: dict, figure_captions: dict[str, str]) -> list[tuple]:
    """The report as blocks: ("h1"|"h2"|"p", text), ("list", items), ("table", header, rows), ("figure", file, caption)."""
    fig = lambda name: [("figure", name, figure_captions[name])] if name in figure_captions else []  # noqa: E731
    return [*_data_and_model(a), *_candidates(a, summary, fig), *_empirical_bayes(summary), *_mcmc(summary, fig),
            *_eb_vs_mcmc(summary), *_predictions(fig), *_checks(summary, fig), *_approximation(summary), *_cross_validation(summary),
            *_reproduce(a, summary)]


def _data_and_model(a) -> list[tuple]:
    """The title, the description, the data, the model and its priors, and the warnings of the run."""
    spec, out = a.spec, []
    out += [("h1", spec.report.title), ("p", spec.description)]
    out += [("h2", "Data and model"), ("p", a.data.description + ".")]
    if a.data.standardisation is not None:
        out.append(("p", "The analysis runs in these standardised units: every number and figure below"
                         + (" (the prediction grid, given in the input's own units, is standardised alike)" if a.spec.grid is not None else "")
                         + "; summary.json's data.standardisation holds the means and sds that convert back."))
    kind = ("a zero-mean Gaussian process, t = f(x) + ε, f ~ GP(0, k), ε ~ N(0, σ²)" if spec.kind == "gp"
            else "Bayesian linear regression t = Φw + ε, w ~ N(0, Σ) with Σ from prior_cov (a number c: c·I; a vector: its diagonal), "
                 "ε ~ N(0, σ²), weights integrated out")
    approx = f"; fitted through the approximation {spec.approx} (audited against the exact GP below)" if spec.approx else ""
    out.append(("p", f"Model: {kind}{approx}. Noise sd σ = {spec.sigma}" + (f"; prior_cov = {spec.prior_cov}" if spec.kind == "blr" else "") + "."))
    if spec.priors:
        out.append(("table", ["hyperparameter", "prior"], [[n, p] for n, p in spec.priors.items()]))
    if a.warnings:
        out += [("h2", "Warnings"), ("list", a.warnings)]
    return out


def _candidates(a, summary: dict, fig) -> list[tuple]:
    """The candidates ranked by their evidence (with more than one), and the one analysed in full."""
    out = []
    if len(a.candidates) > 1:
        out.append(("h2", "Candidates by evidence"))
        lml = lambda i: summary["candidates"][i]["log_marginal_likelihood"]  # noqa: E731
        order = sorted(range(len(summary["candidates"])), key=lambda i: np.inf if lml(i) is None else -lml(i))  # no evidence: last
        out.append(("table", ["candidate", "log p(t | θ̂)", "converged"],
                    [[("→ " if i == a.selected else "") + summary["candidates"][i]["expression"],
                      _num(lml(i), 6), _num(summary["candidates"][i]["converged"])] for i in order]))
        out += fig("evidence.png")
    out.append(("p", f"Analysed in full: {a.chosen.expression}."))
    return out


def _empirical_bayes(summary: dict) -> list[tuple]:
    """θ̂, its evidence, convergence and Laplace sd (nothing without an empirical-Bayes fit)."""
    eb = summary["empirical_bayes"]
    if eb is None:
        return []
    return [("h2", "Empirical Bayes (MAP-II, type-II maximum a posteriori)" if eb["include_prior"] else "Empirical Bayes (type-II maximum likelihood)"),
            ("p", f"{_maximised(eb)}; converged: {_num(eb['converged'])} "
                  f"(max |gradient| {_num(eb['grad_norm'], 2)}); {len(eb['optima'])} distinct optim{'um' if len(eb['optima']) == 1 else 'a'} from "
                  f"{eb['restarts']} starts; jitter {_num(eb['jitter'])}; {_num(eb['seconds'], 3)} s."),
            ("table", ["hyperparameter", "θ̂", "Laplace sd", "at the edge of its support"],
             [[n, _edge(eb["bound"][n]) if np.ndim(v) == 0 and n in eb["bound"] else _num(v), _num(eb["laplace_sd"][n]),
               _num(eb["at_bound"][n])] for n, v in eb["params"].items()])]


def _maximised(eb: dict) -> str:
    """What θ̂ maximises: log p(t | θ̂), or for MAP-II log p(t | θ̂) + log p(θ̂) (`objective`) and its log p(t | θ̂)."""
    lml = f"log p(t | θ̂) = {_num(eb['log_marginal_likelihood'], 6)}"
    return f"maximised log p(t | θ̂) + log p(θ̂) = {_num(eb['objective'], 6)}, of which {lml}" if eb["include_prior"] else lml


def _mcmc(summary: dict, fig) -> list[tuple]:
    """The MCMC run, its diagnostics and their verdict, PSIS-LOO, and the trace, rank and pair figures (nothing without MCMC)."""
    mc = summary["mcmc"]
    if mc is None:
        return []
    d = mc["diagnostics"]
    thinned = "" if mc.get("thin", 1) == 1 else f"; grid predictions from every {mc['thin']}th draw"
    return [("h2", "MCMC (NUTS)"),
            ("p", f"{mc['chains']} chains × {mc['draws']} draws after {mc['tune']} tuning steps ({mc['sampler']}{thinned}). "
                  f"Verdict: {mc['verdict']}. Divergences: {d['divergences']}; E-BFMI per chain: {_num(d['ebfmi'], 3)}. "
                  f"PSIS-LOO elpd = {_num(mc['loo']['elpd'])} ± {_num(mc['loo']['se'], 2)}."),
            ("table", ["hyperparameter", "posterior mean", "R-hat", "bulk ESS", "tail ESS"],
             [[n, _num(mc["posterior_mean"][n]), _num(t["rhat"]), _num(t["ess_bulk"], 3), _num(t["ess_tail"], 3)]
              for n, t in d["table"].items()]),
            *fig("trace.png"), *fig("rank.png"), *fig("pair.png")]


def _eb_vs_mcmc(summary: dict) -> list[tuple]:
    """θ̂ against the posterior, and the two leave-one-out elpds (nothing unless both fits ran)."""
    cmp = summary["eb_vs_mcmc"]
    if cmp is None:
        return []
    gap = _grid_gap(cmp)
    return [("h2", "Empirical Bayes against MCMC"),
            ("table", ["hyperparameter", "EB θ̂", "posterior mean", "posterior sd", "95% interval", "z = (θ̂ − mean)/sd", "θ̂ inside"],
             [[n, _num(r["eb"]), _num(r["mean"]), _num(r["sd"]), f"{_num(r['lower'])} … {_num(r['upper'])}",
               _num(r["z"], 3), _num(r["eb_in_interval"])] for n, r in cmp["params"].items()]),
            ("p", f"Leave-one-out elpd: EB plug-in {_num(cmp['elpd_loo_eb'])} (optimistic: θ̂ saw every point), "
                  f"MCMC (PSIS-LOO) {_num(cmp['elpd_loo_mcmc'])} ± {_num(cmp['elpd_loo_mcmc_se'], 2)}." + gap)]


def _grid_gap(cmp: dict) -> str:
    """The two posteriors of f on the grid, without the points where both sds are 0 (f known exactly: nothing to compare)."""
    known = cmp.get("exact_points", 0)
    points = f"{known} grid point{'s' if known > 1 else ''}"
    if cmp["max_mean_gap_sd"] is None:
        return "" if not known else f" At every grid point ({known}) both sds of f are 0 (f is known exactly): no uncertainty to compare."
    left_out = "" if not known else (f" Left out of these figures: {points} where both sds of f are 0 (f is known exactly "
                                     "there: no uncertainty to compare).")
    return (f" On the grid the two posteriors of f (without the noise) differ in mean by at most {_num(cmp['max_mean_gap_sd'], 3)} "
            f"MCMC sd of f; their sd_EB / sd_MCMC ranges {_num(cmp['sd_ratio'][0], 3)} … {_num(cmp['sd_ratio'][2], 3)} "
            f"(median {_num(cmp['sd_ratio'][1], 3)})." + left_out)


def _predictions(fig) -> list[tuple]:
    """The prediction figures: the fit on the grid, leave-one-out predictions and PIT, prior sample functions."""
    return [("h2", "Predictions"), *fig("fit.png"), *fig("loo_predictions.png"), *fig("loo_pit.png"), *fig("prior_samples.png")]


def _checks(summary: dict, fig) -> list[tuple]:
    """The Gram spectrum at the fitted point, then each check's verdict and its numbers."""
    out = [("h2", "Checks")]
    spectrum = summary["gram_spectrum"]
    if spectrum is not None:
        verdict = (f"no eigenvalue below −{PSD_ROUNDOFF} times it" if spectrum["min"] >= -PSD_ROUNDOFF * spectrum["roundoff"]
                   else f"an eigenvalue is below −{PSD_ROUNDOFF} times it: the kernel is not positive semi-definite on these inputs")
        out.append(("p", f"Gram matrix at the fitted hyperparameters: λmin = {_num(spectrum['min'], 3)}, λmax = {_num(spectrum['max'], 3)}, "
                         f"round-off scale n·ε·max|λ| = {_num(spectrum['roundoff'], 3)} (as checks.psd, which counts λmin ≥ "
                         f"−{PSD_ROUNDOFF}·n·ε·max|λ| as positive semi-definite): {verdict}."))
        out += fig("spectrum.png")
    for name, result in summary["checks"].items():
        if name == "approximation":
            continue  # its own section
        verdict = result["passed"]
        sentence = f" {result['verdict']}" if isinstance(result.get("verdict"), str) else _kernel_trick_sentence(result) if name == "kernel_trick" else ""
        out.append(("p", f"{name}: {'passed' if verdict else 'FAILED'}.{sentence}"))
        result = {k: v for k, v in result.items() if k not in ("eigenvalues", "verdict", "is_psd")}  # spectrum plotted; is_psd = passed
        flat = {f"{k}.{j}" if isinstance(v, dict) else k: w for k, v in result.items() for j, w in (v.items() if isinstance(v, dict) else [(None, v)])}
        out.append(("table", ["quantity", "value"], [[k, v if isinstance(v, str) else _num(v, 3)] for k, v in flat.items()]))
    out += fig("kernel_trick.png")
    return out


def _kernel_trick_sentence(result: dict) -> str:
    """What the kernel-trick audit's verdict says of the kernel it audited (its two sides are in the table below)."""
    sides = (" The weight-space posterior (BLR with the features and prior covariance Σ below) and the function-space one "
             "(GP with the kernel below)")
    if result["passed"]:
        return f"{sides} agree within rtol = {_num(result['rtol'], 2)}: on these points that kernel is φᵀΣφ of those features."
    finite = {k: v for k, v in result["rel_diff"].items() if v is not None}  # (None: a difference that was not finite)
    worst = f"{max(finite, key=finite.get)} by {_num(max(finite.values()), 3)}" if finite and len(finite) == len(result["rel_diff"]) else "not finite"
    return f"{sides} differ beyond rtol = {_num(result['rtol'], 2)} (relative difference: {worst}): that kernel is not φᵀΣφ of those features."


def _approximation(summary: dict) -> list[tuple]:
    """With model.approx: the approximate GP against the exact GP at the fitted point (`checks.approximation_error`)."""
    audit = summary["checks"].get("approximation")
    if audit is None:
        return []
    verdict = "within" if audit["passed"] else "NOT within"
    return [
        ("h2", "Approximation"),
        ("p", f"{audit['approx']} against the exact GP, both conditioned on {audit['n_points']} data points at the fitted "
              f"hyperparameters and compared at {audit['n_predict']} points: {verdict} the tolerances (mean error ≤ "
              f"{_num(audit['mean_tol'], 2)}·sd(y), predictive-variance error ≤ {_num(audit['var_tol'], 2)}, "
              f"log-likelihood error ≤ {_num(audit['lml_tol'], 2)} per point)."),
        ("table", ["quantity", "value"], [[k, _num(audit[k], 3)] for k in AUDIT_ROWS if audit.get(k) is not None]),
    ]


#: the audit's rows in the report: the errors, and for inducing points the trace term and the Nyström residual
AUDIT_ROWS = ("mean_error", "var_error", "lml_error", "trace_term", "nystrom_residual")


def _cross_validation(summary: dict) -> list[tuple]:
    """With [cv]: each candidate's elpd_kfold, its standard error, the difference from the best and its standard error."""
    cv = summary.get("cross_validation")
    if cv is None:
        return []
    how = "shuffled (seed " + str(cv["seed"]) + ")" if cv["shuffle"] else "contiguous"
    fits = ("each candidate refitted by empirical Bayes on the other folds" if cv["refit"]
            else "the hyperparameters held at the empirical-Bayes optimum on all the data")
    rows = [[r["rank"] if r["rank"] is not None else "—", r["candidate"], _num(r["elpd_kfold"]), _num(r["se"], 3), _num(r["elpd_diff"]),
             _num(r["dse"], 3), r["error"] or ""] for r in cv["table"]]
    return [
        ("h2", "Cross-validation"),
        ("p", f"{cv['folds']}-fold cross-validation, {how} folds of {_span(cv['fold_sizes'])} points, "
              f"{fits}; each held-out point scored by its log predictive density. elpd_kfold is their sum, se its standard "
              "error √(n·var), elpd_diff and dse the difference from the best and its standard error (as ArviZ's compare)."),
        ("table", ["rank", "candidate", "elpd_kfold", "se", "elpd_diff", "dse", "error"], rows),
    ]


def _reproduce(a, summary: dict) -> list[tuple]:
    """The command that reproduces the report, and the files it wrote."""
    return [("h2", "Reproduce"), ("p", f"bayeskern run {a.spec.path} --seed {a.seed}   (files: {', '.join(summary['files'])})")]


CSS = """body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}figure{margin:1em 0}img{max-width:100%}figcaption{font-size:.85em;color:#555}
h1{border-bottom:2px solid #1b9e77}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"""


def to_html(parts: list[tuple], images: dict[str, bytes]) -> str:
    """One self-contained HTML file: the figures are embedded as data: URLs, the style is inline."""
    body, title = [], ""
    for part in parts:
        kind = part[0]
        if kind in ("h1", "h2", "p"):
            title = title or part[1]
            body.append(f"<{kind}>{html.escape(part[1])}</{kind}>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in part[1]) + "</ul>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in part[1])
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in part[2])
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif kind == "figure":
            data = base64.b64encode(images[part[1]]).decode("ascii")
            body.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(part[1])}">'
                        f"<figcaption>{html.escape(part[2])}</figcaption></figure>")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def to_markdown(parts: list[tuple]) -> str:
    """The same report as Markdown, the figures linked from figures/."""
    cell = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    out = []
    for part in parts:
        kind = part[0]
        if kind == "h1":
            out.append(f"# {part[1]}")
        elif kind == "h2":
            out.append(f"## {part[1]}")
        elif kind == "p":
            out.append(part[1])
        elif kind == "list":
            out.append("\n".join(f"- {i}" for i in part[1]))
        elif kind == "table":
            rows = [part[1], ["---"] * len(part[1]), *part[2]]
            out.append("\n".join("| " + " | ".join(cell(c) for c in r) + " |" for r in rows))
        elif kind == "figure":
            out.append(f"![{part[2]}](figures/{part[1]})")
    return "\n\n".join(out) + "\n"
