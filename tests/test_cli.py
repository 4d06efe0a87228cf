"""The `bayeskern` command: help, list, check of every shipped spec, the README's spec example, and the CI script."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bayeskern import cli

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
