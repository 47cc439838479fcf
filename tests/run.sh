#!/usr/bin/env bash
# Installs everything the tests need, then runs them:
#   - a virtualenv (.venv) with proximity and its test extras (pytest, hypothesis, ruff, mypy,
#     and the hook hosts the tests drive: pre-commit, prek with the uv it uses, lefthook)
#     from PyPI;
#   - git, Chromium, Neovim and Emacs with eglot from the OS packages when missing (the
#     view test drives a real headless browser; the editor tests real headless editors).
# The tests run in parallel, two processes per core (at most 8): many of them wait on a
# clock (a hook's time limit, a service's quiet moment, a lock's timeout) while their
# neighbours keep the cores busy. Extra arguments go to pytest, e.g.
# `bash tests/run.sh -k hooks`, or `bash tests/run.sh -n 0` to run them in one process.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || need_apt+=(chromium)
command -v nvim >/dev/null 2>&1 || need_apt+=(neovim)
command -v emacs >/dev/null 2>&1 || need_apt+=(emacs-nox elpa-eglot)
if [ ${#need_apt[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        echo "installing OS packages: ${need_apt[*]}"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "warning: cannot install ${need_apt[*]} (no apt-get); related tests will fail" >&2
    fi
fi

VENV=${PROXIMITY_VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'

"$VENV/bin/python" -m ruff check proximity tests benchmarks docs
"$VENV/bin/python" -m mypy
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
workers=$((cores * 2))
[ "$workers" -le 8 ] || workers=8
exec "$VENV/bin/python" -m pytest -n "$workers" "$@"
