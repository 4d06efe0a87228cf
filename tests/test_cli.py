"""The `bayeskern` command: help, list, check of every shipped spec, the README's spec example, and the CI script."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bayeskern import cli
from bayeskern import spec as specs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["check", "--help"], ["list", "--help"]])
def test_help_everywhere(args):
    done = subprocess.run([sys.executable, "-m", "bayeskern.cli", *args], capture_output=True, text=True)
    assert done.returncode == 0 and "usage: bayeskern" in done.stdout


def test_usage_errors_exit_2():
    done = subprocess.run([sys.executable, "-m", "bayeskern.cli", "run"], capture_output=True, text=True)
    assert done.returncode == 2 and "spec" in done.stderr


def test_shipped_specs_are_valid_and_listed(capsys):
    paths = sorted((ROOT / "models").glob("*.toml"))
    names = {p.stem for p in paths}
    assert {"prml_sum_kernel", "blr_model_order", "kernel_trick_audit", "diabetes_gp"} <= names
    for path in paths:
        if path.stem == "diabetes_gp":
            pytest.importorskip("sklearn")  # the diabetes data ship with scikit-learn
        assert cli.main(["check", str(path)]) == 0, path
    capsys.readouterr()
    assert cli.main(["list", str(ROOT / "models")]) == 0
    listed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert sorted(row[1] for row in listed) == sorted(names) and all(row[2] for row in listed)


def test_list_marks_invalid_specs_and_a_missing_folder(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text("name = 'x'\n[data]\nsource = 'mystery'\n")
    assert cli.main(["list", str(tmp_path)]) == 0
    assert "INVALID\tdata.source" in capsys.readouterr().out
    assert cli.main(["list", str(tmp_path / "none")]) == 2


def test_the_readme_spec_example_is_valid(tmp_path):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    assert blocks, "the README documents the spec format with a complete example"
    path = tmp_path / "example.toml"
    path.write_text(blocks[0])
    assert cli.main(["check", str(path)]) == 0


def test_the_readme_main_command_runs_the_first_shipped_spec():
    """The README's main job is `bayeskern run` of the seeds' sum-kernel spec (the run itself is
    exercised on a small spec by tests/test_report.py; the shipped one takes about a minute)."""
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n```", readme, flags=re.S).group(1)
    assert first.endswith(".venv/bin/bayeskern run models/prml_sum_kernel.toml")


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert len(lines) == 1
    # the one command does all the set-up: the browser of the report test, the venv, then pytest
    assert "apt-get install" in lines[0] and "chromium" in lines[0]
    assert f"```bash\n{lines[0]}\n```" in readme and lines[0].endswith("-m pytest")


TINY = """
name = "tiny"
[data]
source = "sinusoid"
n = 6
[priors]
ell = "Gamma(alpha=2.0, beta=4.0)"
[model]
kind = "gp"
kernel = "RBF(lengthscale=ell)"
sigma = 0.1
"""


def test_list_goes_on_past_any_bad_file(tmp_path, capsys, monkeypatch):
    """Whatever is wrong with one file (a SpecError or any other exception), it gets its own INVALID line and the rest are listed."""
    (tmp_path / "a_good.toml").write_text(TINY.replace('name = "tiny"', 'name = "good"\ndescription = "fine"'))
    (tmp_path / "b_syntax.toml").write_text("[data\n")
    (tmp_path / "c_binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "d_folder.toml").mkdir()
    (tmp_path / "e_deep.toml").write_text(TINY.replace("RBF(lengthscale=ell)", "-" * 100_000 + "RBF(lengthscale=ell)"))
    (tmp_path / "f_unreadable.toml").write_text(TINY)
    (tmp_path / "g_good.toml").write_text(TINY.replace('name = "tiny"', 'name = "good2"\ndescription = "also fine"'))
    load = specs.load

    def load_or_fail(path):
        if Path(path).name == "f_unreadable.toml":  # root reads any file: the failure is simulated
            raise PermissionError(13, "Permission denied", str(path))
        return load(path)

    monkeypatch.setattr(specs, "load", load_or_fail)
    assert cli.main(["list", str(tmp_path)]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [Path(r[0]).name for r in rows] == ["a_good.toml", "b_syntax.toml", "c_binary.toml", "d_folder.toml", "e_deep.toml",
                                               "f_unreadable.toml", "g_good.toml"]
    assert rows[0][1:] == ["good", "fine"] and rows[6][1:] == ["good2", "also fine"]
    assert rows[1][1:] == ["INVALID", rows[1][2]] and rows[1][2].startswith("(file): not valid TOML")
    assert rows[2][2].startswith("(file): not valid TOML")
    assert rows[3][2] == "(file): is a folder, not a spec file"
    assert rows[4][2].startswith("model.kernel: too deeply nested")
    assert rows[5][1] == "INVALID" and rows[5][2].startswith("(file): PermissionError:") and "Permission denied" in rows[5][2]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """The tiny spec, with fitting replaced by a failure: a test using it must stop before any fit."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)

    def no_fitting(*args, **kwargs):
        raise AssertionError("must be refused before fitting")

    monkeypatch.setattr("bayeskern.analysis.run_analysis", no_fitting)
    return path


def _under_a_file(t):
    (t / "file").write_text("x")
    return t / "file" / "out"


def _non_empty(t):
    (t / "work").mkdir()
    (t / "work" / "thesis.tex").write_text("years of work")
    return t / "work"


@pytest.mark.parametrize("make, reason", [
    (_under_a_file, "cannot be made: {t}/file is not a folder"),
    (_non_empty, "exists and is not a bayeskern report (no summary.json): refusing to replace it"),
    (lambda t: Path("/proc/bayeskern-out"), "cannot be written"),  # /proc refuses new folders, even to root
])
def test_a_bad_out_is_refused_before_fitting_with_one_line_and_exit_2(tiny, tmp_path, capsys, make, reason):
    out = make(tmp_path)
    assert cli.main(["run", str(tiny), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bayeskern: error: --out {out}: "), err
    assert reason.format(t=tmp_path) in err[0]


@pytest.mark.parametrize("seed", ["-5", "99999999999999999999", "1.5"])
def test_a_bad_seed_on_the_command_line_is_a_usage_error(tiny, capsys, seed):
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", str(tiny), "--seed", seed])
    assert stop.value.code == 2
    assert "argument --seed: must be" in capsys.readouterr().err


def test_interrupts_say_which_report_is_in_place(tiny, tmp_path, capsys, monkeypatch):
    from bayeskern.report.writer import Interrupted

    out = tmp_path / "r"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("bayeskern.analysis.run_analysis", interrupted)  # Ctrl-C during the fit
    assert cli.main(["run", str(tiny), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == f"bayeskern: interrupted; no report was written to {out}/"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    assert cli.main(["run", str(tiny), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == f"bayeskern: interrupted; the previous report in {out}/ is untouched"

    def swapped(*args, **kwargs):  # Ctrl-C held back during the swap, raised once the new report is in place
        raise Interrupted(out, "new")

    monkeypatch.setattr("bayeskern.analysis.run_analysis", lambda *args, **kwargs: None)
    monkeypatch.setattr("bayeskern.report.write_report", swapped)
    assert cli.main(["run", str(tiny), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == f"bayeskern: interrupted; the new report was already complete and is in {out}/"


def test_a_ctrl_c_during_the_first_imports_exits_130_without_a_traceback(monkeypatch, capsys):
    """Ctrl-C in the first second of a run lands in `bayeskern.spec`'s import (a review: a KeyboardInterrupt traceback)."""
    import bayeskern

    class Interrupt:  # a meta-path finder that is asked for bayeskern.spec while Ctrl-C arrives
        def find_spec(self, name, path=None, target=None):
            if name == "bayeskern.spec":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "bayeskern.spec")
    monkeypatch.delattr(bayeskern, "spec")
    monkeypatch.setattr(sys, "meta_path", [Interrupt(), *sys.meta_path])
    assert cli.main(["check", "any.toml"]) == 130
    assert capsys.readouterr().err.strip() == "bayeskern: interrupted"


def test_version_and_an_empty_out_folder(capsys):
    """`--version` names the installed version; `--out ""` is refused (it silently meant reports/<name>/)."""
    from importlib.metadata import version

    with pytest.raises(SystemExit) as shown:
        cli.main(["--version"])
    assert shown.value.code == 0 and capsys.readouterr().out.strip() == f"bayeskern {version('bayeskern')}"  # the installed one
    with pytest.raises(SystemExit) as refused:
        cli.main(["run", "models/prml_sum_kernel.toml", "--out", ""])
    assert refused.value.code == 2 and "--out: must be a folder's path, got an empty one" in capsys.readouterr().err
