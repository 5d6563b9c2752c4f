#!/usr/bin/env bash
# Downloads what an offline GPU host (Ubuntu 24.04 with CUDA, cmake, fmt, CLI11, GoogleTest,
# nlohmann-json and OpenBLAS; issue 7 lists it) lacks to build myriad, into the git-ignored
# .gpu-bundle/: Debian packages unpacked there with `dpkg -x` by tools/gpu_run.sh, and Python
# wheels for the GPU tests. Run here (network), then carry .gpu-bundle with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
mkdir -p "$out/deb" "$out/whl"
# Boost's headers (Beast and Asio, header-only: the server's HTTP layer), PCRE2, utf8proc,
# libcurl's headers (the host's own libcurl.so.4 is linked), and ICU's headers (the host has the
# ICU runtime only; see gpu_run.sh for how the version is matched); GoogleTest and pkgconf in
# case the host lacks them; libedit (myriad chat) with its runtime.
pkgs=(libboost1.81-dev libpcre2-dev libpcre2-8-0 libpcre2-16-0
      libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 libcurl4-openssl-dev
      libicu-dev libgtest-dev pkgconf pkgconf-bin libpkgconf3
      libedit-dev libedit2 libbsd0 libmd0)
(cd "$out/deb" && apt-get download "${pkgs[@]}")
# libicu-dev is 10 MB, nearly all static libraries: keep its headers only (gpu_run.sh unpacks).
if ls "$out"/deb/libicu-dev_*.deb >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    dpkg -x "$out"/deb/libicu-dev_*.deb "$tmp"
    tar -C "$tmp" -cJf "$out/icu-headers.tar.xz" usr/include
    rm -rf "$tmp" "$out"/deb/libicu-dev_*.deb
fi
# Wheels the GPU-side Python tests import that the host's image may lack: openai, pytest,
# requests, tiktoken (test_generate_chat's tokenizer oracle) and what they need. pip resolves
# the dependencies for the host's Python 3.12.
wheels=(openai==1.109.1 anthropic pytest requests tiktoken jinja2 jsonschema)
if ! ls "$out"/whl/tiktoken-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$out/whl" "${wheels[@]}" \
        || echo "gpu_bundle: pip download of ${wheels[*]} failed; the Python server tests will fail"
fi
du -sh "$out"
