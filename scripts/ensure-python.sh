# shellcheck shell=bash
# Sourced by scripts/test (and so by .ci/run), or run directly: make a Python
# with the `perfetto` package's protobuf bindings available for the trace
# end-to-end test (crates/cli/tests/trace.rs runs scripts/check_perfetto_trace.py).
#
#   ensure_python     create or reuse the venv, export SCHEDLAB_PYTHON
#
# The venv lives in $SCHEDLAB_PYVENV, else ${XDG_CACHE_HOME:-~/.cache}/schedlab/pyvenv; it is reused
# when it already imports the bindings. On a fresh Debian bookworm machine
# python3 lacks venv/ensurepip: python3-venv is installed from Debian's
# packages, then perfetto and protobuf (pinned) from PyPI. perfetto's
# trace_processor (which downloads a binary) is never used.

_py_log() { echo "[ensure-python] $*" >&2; }

# Pinned: the versions the trace checker was written against.
SCHEDLAB_PY_PACKAGES=(perfetto==0.59.1 protobuf==7.36.2)

_py_has_bindings() {
    "$1" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1
}

ensure_python() {
    local venv="${SCHEDLAB_PYVENV:-${XDG_CACHE_HOME:-$HOME/.cache}/schedlab/pyvenv}"
    if [ -x "$venv/bin/python" ] && _py_has_bindings "$venv/bin/python"; then
        export SCHEDLAB_PYTHON="$venv/bin/python"
        _py_log "using $SCHEDLAB_PYTHON"
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        if ! declare -F _apt_install >/dev/null; then
            # shellcheck source=scripts/ensure-rust.sh
            . "$(dirname "${BASH_SOURCE[0]}")/ensure-rust.sh"
        fi
        _py_log "python3 with venv/ensurepip missing"
        _apt_install python3 python3-venv || return 1
        hash -r
    fi
    _py_log "creating $venv and installing ${SCHEDLAB_PY_PACKAGES[*]}"
    python3 -m venv --clear "$venv" || return 1
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q "${SCHEDLAB_PY_PACKAGES[@]}" </dev/null || return 1
    if ! _py_has_bindings "$venv/bin/python"; then
        _py_log "$venv/bin/python still cannot import perfetto's protobuf bindings"
        return 1
    fi
    export SCHEDLAB_PYTHON="$venv/bin/python"
    _py_log "using $SCHEDLAB_PYTHON"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    ensure_python
fi
