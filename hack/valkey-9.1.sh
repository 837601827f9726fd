#!/usr/bin/env bash
# Builds Valkey 9.1 (valkey-server, valkey-cli, valkey-benchmark, valkey-check-rdb,
# valkey-check-aof, valkey-sentinel) from Debian's source package and prints the directory that
# holds the binaries. Debian bookworm has only 8.0 (backports); sid's 9.1 binaries need a newer
# libc, but its source builds on bookworm as it is (../shared/notes/valkey-cluster-mode.md).
#
# The build takes about 10 minutes on 2 cores, so it is cached by version in the per-user cache
# (hack/cache-dir.sh) and rebuilt from the same recipe when absent. Nothing of the system's apt
# configuration is touched: the source index lives in a directory of its own.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=9.1.2
debian_version=9.1.2-1
dir="$("$top/hack/cache-dir.sh")/valkey-$version"
bin="$dir/bin"
mkdir -p "$dir"
# Parallel callers (two test packages at once) build it once: the others wait.
exec 9>"$dir/.lock"
flock 9
if [ -x "$bin/valkey-server" ] && "$bin/valkey-server" --version | grep -q "v=$version"; then
  echo "$bin"
  exit 0
fi
for tool in make gcc pkg-config; do
  command -v "$tool" >/dev/null || { echo "building Valkey $version needs $tool" >&2; exit 1; }
done
if ! dpkg -s libssl-dev >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "building Valkey $version with TLS needs libssl-dev: sudo apt-get install libssl-dev" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev >/dev/null
fi
echo "building Valkey $version from Debian's source package (once, about 10 minutes; cached in $dir)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
cat > "$work/sources.list" <<'SRC'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives" -o Debug::NoLocking=1
  -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq >&2
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "valkey=$debian_version" >&2)
# The upstream tarball's top directory is named after a commit (valkey-io-valkey-<hash>).
src="$work/src"
mkdir -p "$src"
tar -xzf "$work/valkey_$version.orig.tar.gz" -C "$src" --strip-components=1
make -C "$src" -j"$(nproc)" BUILD_TLS=yes >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
rm -rf "$bin.new" && mkdir -p "$bin.new"
for b in valkey-server valkey-cli valkey-benchmark valkey-check-rdb valkey-check-aof valkey-sentinel; do
  if [ -e "$src/src/$b" ]; then cp -L "$src/src/$b" "$bin.new/$b"; fi
done
"$bin.new/valkey-server" --version | grep -q "v=$version"
rm -rf "$bin" && mv "$bin.new" "$bin"
echo "$bin"
