"""The `bayeskern` command and the spec format: end to end on a small spec, bad specs, atomic writes."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bayeskern as bk
from bayeskern import cli, spec
from bayeskern.report import write_atomically

ROOT = Path(__file__).resolve().parents[1]

SMALL = """
name = "small"
description = "a small test spec"
[data]
source = "sinusoid"
n = 8
noise = 0.1
seed = 3
[model]
kind = "gp"
sigma = 0.1
kernels = ["PRML(1, 4, 0, 0)", "2.0 * RBF(lengthscale=0.2) + Constant(0.5)"]
[predict]
start = 0.0
stop = 1.0
num = 11
"""


def _write(tmp_path, text, name="small.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_run_writes_every_file_with_the_right_numbers(tmp_path):
    out = tmp_path / "report"
    assert cli.main(["run", str(_write(tmp_path, SMALL)), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["predictions.csv", "report.md", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= {"name", "data", "model", "candidates", "selected", "predictions"}
    X, t = bk.datasets.sinusoid(8, 0.1, 3)
    lmls = [bk.gp.posterior(k, X, t, 0.1).log_marginal_likelihood
            for k in (bk.kernels.PRML(1, 4, 0, 0), 2.0 * bk.kernels.RBF(0.2) + bk.kernels.Constant(0.5))]
    np.testing.assert_allclose([c["log_marginal_likelihood"] for c in summary["candidates"]], lmls, rtol=1e-12)
    assert summary["selected"]["kernel"] == summary["candidates"][int(np.argmax(lmls))]["kernel"]
    table = np.loadtxt(out / "predictions.csv", delimiter=",", skiprows=1)
    best = [bk.kernels.PRML(1, 4, 0, 0), 2.0 * bk.kernels.RBF(0.2) + bk.kernels.Constant(0.5)][int(np.argmax(lmls))]
    post = bk.gp.posterior(best, X, t, 0.1, Xnew=np.linspace(0, 1, 11))
    np.testing.assert_allclose(table[:, 1], post.mean, rtol=1e-9, atol=1e-12)  # 10 significant digits written
    np.testing.assert_allclose(table[:, 2], post.std, rtol=1e-9, atol=1e-12)
    assert "# small" in (out / "report.md").read_text()


def test_same_seed_same_numbers_and_seed_override(tmp_path):
    path = _write(tmp_path, SMALL)
    for name, seed in [("a", None), ("b", None), ("c", 4)]:
        cli.main(["run", str(path), "--out", str(tmp_path / name)] + (["--seed", str(seed)] if seed else []))
    read = lambda n: (tmp_path / n / "predictions.csv").read_text()  # noqa: E731
    assert read("a") == read("b")
    assert read("a") != read("c")


@pytest.mark.parametrize(
    "change, key",
    [
        (("kind = \"gp\"", "kind = \"svm\""), "model.kind"),
        (("sigma = 0.1", "sigma = -0.1"), "model.sigma"),
        (("\"PRML(1, 4, 0, 0)\"", "\"Foo(1)\""), "model.kernels[0]"),
        (("\"PRML(1, 4, 0, 0)\"", "\"__import__('os').system('true')\""), "model.kernels[0]"),
        (("\"PRML(1, 4, 0, 0)\"", "\"RBF(-1.0)\""), "model.kernels[0]"),
        (("n = 8", "n = \"eight\""), "data.n"),
        (("source = \"sinusoid\"", "source = \"mystery\""), "data.source"),
        (("num = 11", "num = 1"), "predict"),
        (("[predict]", "[predict]\ncolour = 1"), "predict.colour"),
        (("[predict]", "colour = 1\n[predict]"), "model.colour"),
    ],
)
def test_bad_spec_gets_one_line_naming_file_and_key_and_exit_code_2(tmp_path, capsys, change, key):
    path = _write(tmp_path, SMALL.replace(*change))
    out = tmp_path / "never"
    assert cli.main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and key in err[0]
    assert not out.exists()
    assert cli.main(["check", str(path)]) == 2


def test_kernel_expressions_are_parsed_safely():
    k = spec.parse_kernel("2.0 * RBF(lengthscale=0.5) + Constant(1.0) + Linear()")
    X = np.linspace(0, 1, 4)
    expected = (2.0 * bk.kernels.RBF(0.5) + bk.kernels.Constant(1.0) + bk.kernels.Linear()).evaluate(X)
    np.testing.assert_allclose(k.evaluate(X), expected)
    np.testing.assert_allclose(spec.parse_kernel("RBF([0.5, 2.0])").evaluate(np.ones((2, 2))), np.ones((2, 2)))
    for bad in ["os.system('x')", "RBF(0.5).__class__", "[c for c in 'ab']", "lambda: 1", "RBF(1) - Linear()", "RBF("]:
        with pytest.raises(ValueError):
            spec.parse_kernel(bad)


def test_a_failed_write_keeps_the_previous_report(tmp_path):
    folder = write_atomically(tmp_path / "r", {"a.txt": "old"})
    with pytest.raises(OSError):
        write_atomically(folder, {"b.txt": "new", "c": "x", "c/d.txt": "x"})  # c is a file, not a folder
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"] and (folder / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary folder left behind
    write_atomically(folder, {"b.txt": "new"})
    assert sorted(p.name for p in folder.iterdir()) == ["b.txt"]


def test_shipped_specs_are_valid_and_listed(capsys):
    paths = sorted((ROOT / "models").glob("*.toml"))
    assert paths
    for path in paths:
        assert cli.main(["check", str(path)]) == 0
    assert cli.main(["list", str(ROOT / "models")]) == 0
    assert "prml_sum_kernel" in capsys.readouterr().out


def test_missing_spec_file_and_help():
    assert cli.main(["check", "no/such/spec.toml"]) == 2
    done = subprocess.run([sys.executable, "-m", "bayeskern.cli", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "run" in done.stdout


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert len(ci) == 1 and ci[0] in readme
