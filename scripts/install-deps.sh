#!/usr/bin/env bash
# Installs every Debian package that Ladder's build, tests, benchmarks and demo
# need. Idempotent: packages already present are skipped, the rest are named
# before they are installed. As a non-root user it prints the apt command to run.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git lld
  clang libclang-rt-14-dev clang-format clang-tidy
  # libraries
  libboost-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libhwy-dev libpcre2-dev libtomlplusplus-dev libssl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2 python3-numpy curl
  python3-jsonschema
  # bench scripts read records and ledgers
  jq
  # report rendering test (headless browser)
  chromium
  # the replay's HTTPS test makes a self-signed certificate
  openssl
  # rung 2: the network-namespace test (ip netns, veth) and the deploy/ check
  iproute2 python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js 20 with npm (the openai client tests) may come from another source
# than Debian; only ask apt for it when no node/npm is on the PATH.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: not root; run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
