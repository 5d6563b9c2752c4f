#!/usr/bin/env bash
# Installs the Debian packages myriad needs, only those missing. With --test, also what the tests
# need: clang (libFuzzer), clang-format (the format check), and the Python oracles in build/venv from tools/requirements-test.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev
      libopenblas-dev libpcre2-dev libicu-dev xz-utils libboost1.81-dev
      libcurl4-openssl-dev libssl-dev libedit-dev)
if [[ "${1:-}" == "--test" ]]; then
    pkgs+=(libgtest-dev clang libclang-rt-dev clang-format python3 python3-venv)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing Debian packages: ${missing[*]}"
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ "${1:-}" == "--test" ]]; then
    req=tools/requirements-test.txt
    stamp=build/venv/.installed
    if [[ ! -f $stamp || $req -nt $stamp ]]; then
        mkdir -p build
        python3 -m venv build/venv
        build/venv/bin/pip install -q --disable-pip-version-check -r "$req"
        touch "$stamp"
    fi
fi
