"""MCMC diagnostics from ArviZ with a verdict: R-hat, bulk/tail ESS, divergences, tree depth, E-BFMI."""

import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import xarray as xr

from bayeskern._json import jsonable
from bayeskern._validation import PACKAGE_DIR, check_flag, check_number
from bayeskern.fit.warning import FitWarning

__all__ = ["Diagnostics", "check_chains_moved", "diagnose"]

RHAT_MAX = 1.01  # Vehtari et al. (2021)
ESS_PER_CHAIN_MIN = 100  # bulk and tail ESS per parameter ≥ 100 × chains (Vehtari et al. 2021; PyMC's convergence checks)
EBFMI_MIN = 0.3  # Betancourt (2016): below this the momentum resampling explores energy poorly


@dataclass(frozen=True)
class Diagnostics:
    """The numbers and the verdict.

    `table`: per parameter (and element) `rhat`, `ess_bulk`, `ess_tail` (an xarray Dataset).
    `divergences`: post-warm-up divergent transitions; `max_depth_hits`: transitions that hit the
    maximum tree depth; `ebfmi`: E-BFMI per chain. `passed`: at least 2 chains, R-hat ≤ rhat_max and ESS ≥ ess_min
    for every parameter, no divergences, no transition at the maximum tree depth, E-BFMI ≥ ebfmi_min on every chain.
    `problems`: one sentence per failure, naming what failed.
    """

    table: xr.Dataset
    divergences: int
    max_depth_hits: int
    ebfmi: np.ndarray
    passed: bool
    problems: tuple
    thresholds: dict

    def to_dict(self) -> dict:
        """JSON values (`_json.jsonable`: None for a NaN R-hat or ESS): the table as parameter → statistic → list."""
        table = {}
        for key, values in self.table.data_vars.items():
            name, stat = key.rsplit("__", 1)
            table.setdefault(name, {})[stat] = np.asarray(values)
        return jsonable({"passed": self.passed, "problems": self.problems, "divergences": self.divergences,
                         "max_depth_hits": self.max_depth_hits, "ebfmi": self.ebfmi, "table": table,
                         "thresholds": self.thresholds})

    def __str__(self) -> str:
        return "diagnostics passed" if self.passed else "diagnostics failed: " + "; ".join(self.problems)


def _stat(stats: xr.Dataset, *names):
    for name in names:
        if name in stats:
            return stats[name]
    return None


def diagnose(dt: xr.DataTree, rhat_max: float = RHAT_MAX, ess_min: float | None = None, ebfmi_min: float = EBFMI_MIN, warn: bool = True) -> Diagnostics:
    """Diagnose an MCMC DataTree (from `bayeskern.fit.mcmc` or `pm.sample`); warn (FitWarning) naming failures.

    `ess_min`: the smallest bulk and tail ESS accepted; None: 100 per chain (400 for 4 chains, Vehtari et al. 2021)."""
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children or "sample_stats" not in dt.children:
        raise ValueError(f"dt must be an MCMC DataTree with posterior and sample_stats groups, got {type(dt).__name__}")
    rhat_max = float(check_number(rhat_max, "rhat_max", positive=True, scalar=True))
    if ess_min is not None:
        ess_min = float(check_number(ess_min, "ess_min", nonnegative=True, scalar=True))
    ebfmi_min = float(check_number(ebfmi_min, "ebfmi_min", nonnegative=True, scalar=True))
    warn = check_flag(warn, "warn")
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # too few draws: NaN statistics, named below as problems
        warnings.simplefilter("ignore", RuntimeWarning)
        rhat, ess_bulk, ess_tail = az.rhat(dt), az.ess(dt, method="bulk"), az.ess(dt, method="tail")
        ebfmi = az.bfmi(dt) if "energy" in dt["sample_stats"].to_dataset() else None
    as_ds = lambda v: v.to_dataset() if isinstance(v, xr.DataTree) else v  # noqa: E731
    rhat, ess_bulk, ess_tail = as_ds(rhat), as_ds(ess_bulk), as_ds(ess_tail)
    table = xr.Dataset(
        {f"{name}__{kind}": src[name] for name in rhat.data_vars for kind, src in (("rhat", rhat), ("ess_bulk", ess_bulk), ("ess_tail", ess_tail))}
    )
    stats = dt["sample_stats"].to_dataset()
    diverging = _stat(stats, "diverging")
    divergences = int(diverging.sum()) if diverging is not None else 0
    depth_hit = _stat(stats, "reached_max_treedepth", "maxdepth_reached")
    max_depth_hits = int(depth_hit.sum()) if depth_hit is not None else 0
    ebfmi = np.atleast_1d(np.asarray(as_ds(ebfmi).to_array().values, dtype=float)).ravel() if ebfmi is not None else np.array([])

    chains = dt["posterior"].sizes["chain"]
    ess_min = float(ESS_PER_CHAIN_MIN * chains) if ess_min is None else ess_min
    problems = [] if chains > 1 else [f"R-hat needs at least 2 chains, {chains} was run: whether the chains agree is unchecked"]
    for name in rhat.data_vars:
        worst_rhat = float(np.max(rhat[name].values))
        if chains > 1 and not worst_rhat <= rhat_max:
            digits = next((k for k in range(3, 10) if round(worst_rhat, k) > rhat_max), 10)  # 1.01005 > 1.01, not "1.010 > 1.01"
            problems.append(f"R-hat of {name} is {worst_rhat:.{digits}f} > {rhat_max}")
        for kind, src in (("bulk", ess_bulk), ("tail", ess_tail)):
            worst = float(np.min(src[name].values))
            if not worst >= ess_min:
                problems.append(f"{kind} ESS of {name} is {worst:.0f} < {ess_min:g}")
    if divergences:
        n = stats.sizes["chain"] * stats.sizes["draw"]
        problems.append(f"{divergences} divergent transitions out of {n}: the posterior geometry is hard here; reparametrise or raise target_accept")
    if max_depth_hits:
        problems.append(f"{max_depth_hits} transitions hit the maximum tree depth")
    low = [i for i, v in enumerate(ebfmi) if v < ebfmi_min]
    if low:
        problems.append(f"E-BFMI below {ebfmi_min} on chain(s) {', '.join(map(str, low))} ({', '.join(f'{ebfmi[i]:.2f}' for i in low)})")
    result = Diagnostics(
        table, divergences, max_depth_hits, ebfmi, not problems, tuple(problems),
        {"rhat_max": rhat_max, "ess_min": ess_min, "ebfmi_min": ebfmi_min},
    )
    if warn and problems:
        warnings.warn(str(result), FitWarning, skip_file_prefixes=(PACKAGE_DIR,))
    return result


def check_chains_moved(dt: xr.DataTree) -> None:
    """A ValueError naming the chains that never moved: every draw of every posterior variable the same point (NUTS
    without tuning can keep rejecting from its first step size). Nothing can be estimated from such a chain, and
    ArviZ's LOO fails on it ("All tail values are the same")."""
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise ValueError(f"dt must be an MCMC DataTree with a posterior group, got {type(dt).__name__}")
    posterior = dt["posterior"].to_dataset()
    values = [np.asarray(v.values).reshape(v.sizes["chain"], v.sizes["draw"], -1) for v in posterior.data_vars.values()]
    moved = np.zeros(posterior.sizes["chain"], dtype=bool)
    for v in values:
        moved |= np.any(v != v[:, :1], axis=(1, 2))
    if not moved.all():
        stuck = np.flatnonzero(~moved)
        raise ValueError(f"MCMC chain(s) {', '.join(map(str, stuck))} of {len(moved)} never moved: each of their "
                         f"{posterior.sizes['draw']} draws is the same point; give the sampler tuning steps (tune)")
