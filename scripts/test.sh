#!/usr/bin/env bash
# Set up (if needed), then lint, type-check and run the whole test suite.
# What CI runs (.ci/run calls this), so a newcomer's run is CI's run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The operator console's end-to-end tests (tests/e2e) drive Debian's Chromium;
# Playwright never downloads a browser of its own here.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo apt-get update -qq && sudo apt-get install -y -qq chromium
    else
        echo "scripts/test.sh: /usr/bin/chromium is missing and cannot be installed without root;" \
             "install Debian's chromium (apt-get install chromium) or the browser tests are skipped" >&2
    fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check service tests lab
.venv/bin/mypy service lab
.venv/bin/lint-imports  # imports point one way (pyproject.toml [tool.importlinter])
# The documentation site (mkdocs.yml, docs/): a broken link or anchor, or a page left out
# of the navigation, fails here; built into a scratch directory, not the tree.
site_dir="$(mktemp -d)"
trap 'rm -rf "$site_dir"' EXIT
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site_dir"
# Two workers (pytest-xdist): the suite waits on servers, browsers and the database as much as
# it computes. Tests of one corpus's shared app stay on one worker (tests/conftest.py).
.venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
