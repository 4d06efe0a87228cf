#!/usr/bin/env bash
# What a new user meets: a fresh clone of main (default /work/main, or $1), an empty PyTensor compile directory, the
# README's two commands exactly as written, timed; the venv and the compile directory are deleted between the two, so the
# test command starts from nothing too. Usage: bash benchmarks/fresh_clone.sh [REPO]
set -u
dir=$(mktemp -d /tmp/fresh.XXXX)
git clone -q "${1:-/work/main}" "$dir/bayeskern" && cd "$dir/bayeskern" || exit 1
export PYTENSOR_FLAGS=base_compiledir=$dir/compiledir
main_cmd=$(grep -m1 '^PYENV_VERSION=3.12 python3.12 -m venv .venv && .venv/bin/pip install -q -e . &&' README.md)
test_cmd=$(grep -m1 '^(command -v chromium' README.md)
echo "clone $(git rev-parse --short HEAD) in $dir"
echo "MAIN: $main_cmd"; s=$(date +%s.%N); bash -c "$main_cmd" > "$dir/main.log" 2>&1; echo "main exit $? $(echo "$(date +%s.%N) - $s" | bc) s"
rm -rf .venv "$dir/compiledir"  # the test command makes its own venv, on an empty cache again
echo "TEST: $test_cmd"; s=$(date +%s.%N); bash -c "$test_cmd" > "$dir/test.log" 2>&1; echo "test exit $? $(echo "$(date +%s.%N) - $s" | bc) s"
tail -3 "$dir/test.log"
