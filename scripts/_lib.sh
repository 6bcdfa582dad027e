# Shared by scripts/test and scripts/demo: find a Python >= 3.12 and build a venv.
# shellcheck shell=bash

# Print the path of a Python >= 3.12, or explain what to install and fail.
find_python() {
    local candidates=()
    [ -n "${OMNIGENT_AGY_PYTHON:-}" ] && candidates+=("$OMNIGENT_AGY_PYTHON")
    candidates+=(python3.13 python3.12 python3 python)
    local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    local found
    for found in "$pyenv_root"/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[23] /usr/bin/python3.1[23]; do
        [ -x "$found" ] && candidates+=("$found")
    done
    local py
    for py in "${candidates[@]}"; do
        if command -v "$py" >/dev/null 2>&1 &&
            "$py" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
            command -v "$py"
            return 0
        fi
    done
    echo "omnigent-agy needs Python 3.12 or newer and found none." >&2
    echo "Install one (e.g. 'pyenv install 3.12' or your system's python3.12 package)," >&2
    echo "or point OMNIGENT_AGY_PYTHON at its interpreter, then run this again." >&2
    return 1
}

# ensure_venv DIR: create DIR as a venv of a Python >= 3.12 unless it already is one.
ensure_venv() {
    local dir=$1
    if [ -x "$dir/bin/python" ] &&
        "$dir/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
        return 0
    fi
    local py
    py=$(find_python) || return 1
    echo "creating $dir with $("$py" --version 2>&1)" >&2
    rm -rf "$dir"
    "$py" -m venv "$dir"
    quiet_pip "$dir" --upgrade pip
}

# quiet_pip DIR ARGS...: `pip install ARGS` into the venv DIR with its output in DIR/pip.log,
# shown only if it fails: a machine's own pip settings (extra indexes, find-links that are not
# there) can fill the screen with warnings a newcomer need not read.
quiet_pip() {
    local dir=$1
    shift
    if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >"$dir/pip.log" 2>&1; then
        tail -n 40 "$dir/pip.log" >&2
        echo "pip install $* failed; its whole output is in $dir/pip.log" >&2
        return 1
    fi
}

# ensure_command NAME WHY: the Debian package NAME (which installs the command NAME) where it is
# missing and we can (root with apt-get); otherwise say what to install and fail.
ensure_command() {
    local name=$1 why=$2
    command -v "$name" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $name ($why)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$name" >/dev/null
        return $?
    fi
    echo "$name is needed ($why): install it with your package manager (e.g. 'apt-get install $name')." >&2
    return 1
}

# ensure_tmux: agy (and the simulator) run inside tmux.
ensure_tmux() {
    ensure_command tmux "agy runs inside tmux"
}

# ensure_chromium: the browser tests (tests/e2e/test_browser.py) drive Debian's chromium through
# Playwright, which is pointed at the system browser instead of downloading its own; a
# Chromium elsewhere can be named with OMNIGENT_AGY_CHROMIUM.
ensure_chromium() {
    [ -n "${OMNIGENT_AGY_CHROMIUM:-}" ] && [ -x "$OMNIGENT_AGY_CHROMIUM" ] && return 0
    ensure_command chromium "for the browser tests"
}
