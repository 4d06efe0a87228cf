"""Reports: an analysis turned into index.html, report.md, figures/*.png, results.nc and summary.json, written atomically."""

import json
from pathlib import Path

from bayeskern.report.document import blocks, to_html, to_markdown
from bayeskern.report.results import results_tree, summary
from bayeskern.report.writer import write_atomically

__all__ = ["report_files", "results_tree", "summary", "write_atomically", "write_report"]


def write_report(analysis, folder, say=lambda message: None) -> Path:
    """Write the whole report of `analysis` (from `bayeskern.analysis.run_analysis`) into `folder`.

    Every file is produced in memory (or in a temporary folder) first; the folder is replaced only
    when all of them exist, so a failure leaves the previous report intact.
    """
    return write_atomically(folder, report_files(analysis, say))


def report_files(analysis, say=lambda message: None) -> dict:
    """The report's files, relative name → text, bytes, or a function that writes the given path (results.nc)."""
    from bayeskern.report.figures import figures  # matplotlib and ArviZ's plots (~1 s to import) when a report is drawn

    drawn = figures(analysis, say)
    tree = results_tree(analysis)
    names = ["index.html", "report.md", "results.nc", "summary.json"] + [f"figures/{n}" for n in drawn]
    numbers = summary(analysis, names)
    parts = blocks(analysis, numbers, {n: caption for n, (caption, _) in drawn.items()})
    return {
        "index.html": to_html(parts, {n: png for n, (_, png) in drawn.items()}),
        "report.md": to_markdown(parts),
        "summary.json": json.dumps(numbers, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        "results.nc": lambda path: tree.to_netcdf(path, engine="h5netcdf"),
        **{f"figures/{n}": png for n, (_, png) in drawn.items()},
    }
