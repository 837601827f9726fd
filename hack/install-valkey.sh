#!/usr/bin/env bash
# Installs Valkey 8.0 (valkey-server, valkey-cli, valkey-sentinel, ...) from Debian
# bookworm-backports when valkey-server is not on PATH yet.
set -euo pipefail
if command -v valkey-server >/dev/null && valkey-server --version | grep -q 'v=8\.'; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "valkey-server 8 is missing and installing it needs root: run" >&2
  echo "  sudo $0" >&2
  exit 1
fi
src=/etc/apt/sources.list.d/bookworm-backports.sources
if [ ! -f "$src" ]; then
  cat > "$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools valkey-sentinel nftables >/dev/null
# The package enables a systemd unit; nothing starts it here, and tests start their own servers.
valkey-server --version
