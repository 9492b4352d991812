# shellcheck shell=bash
# Sourced by scripts/test, scripts/demo and .ci/run: make `cargo` (with
# rustfmt and clippy when asked) available on a fresh Debian bookworm machine.
#
#   ensure_rust            cargo + rustc
#   ensure_rust lint       also `cargo fmt` and `cargo clippy`
#
# Order: cargo already on PATH; else ~/.cargo/bin (rustup); else Debian's
# packages. The minimum Rust is the workspace's `rust-version` in Cargo.toml
# (the only place it is stated; clippy's incompatible_msrv lint keeps it true).
# Bookworm's plain `rustc`/`cargo` (1.63) are too old, so we install the `-web`
# builds (rustc-web, cargo-web from bookworm-security), which put cargo/rustc
# in /usr/bin. rustup itself cannot
# help here: only package registries are reachable, not rustup's downloads.

_rust_log() { echo "[ensure-rust] $*" >&2; }

_apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo -n"
        else
            _rust_log "need root (or sudo) to apt-get install $*"
            return 1
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        _rust_log "no apt-get here: install $* by hand"
        return 1
    fi
    _rust_log "installing Debian packages: $*"
    if [ -z "${_RUST_APT_UPDATED:-}" ]; then
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null || return 1
        _RUST_APT_UPDATED=1
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null
}

# The minor version of the workspace's rust-version (1.NN).
_rust_min_minor() {
    sed -n 's/^rust-version *= *"1\.\([0-9]*\).*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml" | head -1
}

_cargo_usable() {
    # cargo exists and is at least the workspace's rust-version.
    command -v cargo >/dev/null 2>&1 || return 1
    local v minor
    v=$(cargo --version 2>/dev/null) || return 1
    minor=$(echo "$v" | sed -n 's/^cargo 1\.\([0-9]*\)\..*/\1/p')
    [ -n "$minor" ] && [ "$minor" -ge "$(_rust_min_minor)" ]
}

ensure_rust() {
    local want_lint="${1:-}"
    if ! _cargo_usable && [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    if ! _cargo_usable; then
        if command -v cargo >/dev/null 2>&1; then
            _rust_log "$(cargo --version) is too old for this workspace (Cargo.toml rust-version: 1.$(_rust_min_minor))"
        else
            _rust_log "no cargo on PATH nor in ~/.cargo/bin"
        fi
        _rust_log "installing Debian's rustc-web and cargo-web (rustup downloads are not reachable from here)"
        _apt_install rustc-web cargo-web ca-certificates || return 1
        hash -r
        # Prefer Debian's /usr/bin over an old cargo elsewhere on PATH.
        export PATH="/usr/bin:$PATH"
        _cargo_usable || { _rust_log "still no usable cargo"; return 1; }
    fi
    if ! command -v cc >/dev/null 2>&1; then
        _apt_install gcc libc6-dev || return 1
    fi
    if [ "$want_lint" = lint ]; then
        if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
            case "$(command -v cargo)" in
            /usr/bin/cargo)
                _apt_install rustfmt-web rust-web-clippy || return 1
                ;;
            *)
                _rust_log "cargo at $(command -v cargo) lacks rustfmt or clippy; with rustup: rustup component add rustfmt clippy"
                return 1
                ;;
            esac
        fi
    fi
    _rust_log "using $(command -v cargo): $(cargo --version)"
}
