package localcluster

// launchScript runs as `sh -c launchScript launch CGROUP MEMCGROUP ROOT SCRATCH WORKDIR HOSTNAME USERSPEC GROUPS ROOTMODE IMAGEROOT N [SRC DST MODE]xN CMD...`
// inside a fresh mount and UTS namespace (unshare). It first joins the container's cgroup
// (so everything it starts is counted, killed, frozen and partitioned with it) and, when not
// empty, MEMCGROUP, the container's group in a v1 memory hierarchy (memcgroup.go: its memory
// limit then holds for all of it, this shell included), then builds the container's root file system
// as a copy-on-write overlay of the host's / (writes land in a tmpfs that vanishes with the
// namespace, so creating a mount point such as /etc/valkey never touches the host), with the
// image's unpacked file system IMAGEROOT, when given, laid over it by a second overlay (its
// files at their paths win: the image's entrypoint is the image's binary; the host's shell and
// chroot stay there for this script's last step, which an empty image could not run; one
// overlay with both as lower layers is refused, ELOOP, because IMAGEROOT lies under /; two
// stacked overlays are the kernel's limit, so this needs a host / that is not itself an
// overlay), binds
// /proc, /sys and /dev, binds each volume at its mount path, makes the root read-only when
// ROOTMODE is ro (readOnlyRootFilesystem), then chroots and execs the command in the working
// directory, as USERSPEC (uid:gid, runAsUser/runAsGroup) with GROUPS (fsGroup, supplemental)
// when given. The exec keeps the PID, so the process the agent started
// is the container's main process, and the parent-death signal set on it survives.
const launchScript = `set -e
echo $$ > "$1/cgroup.procs"
if [ -n "$2" ]; then echo $$ > "$2/cgroup.procs"; fi
shift
root=$2; scratch=$3; wd=$4; host=$5; user=$6; groups=$7; rootmode=$8; imageroot=$9; shift 9; n=$1; shift
mount -t tmpfs -o mode=0755 tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root"
if [ -n "$imageroot" ]; then
  mkdir "$scratch/image-upper" "$scratch/image-work"
  mount -t overlay overlay -o "lowerdir=$imageroot:$root,upperdir=$scratch/image-upper,workdir=$scratch/image-work" "$root"
fi
for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
hostname "$host"
while [ "$n" -gt 0 ]; do
  src=$1; dst=$2; mode=$3; shift 3; n=$((n-1))
  if [ -d "$src" ]; then
    mkdir -p "$root$dst"
  else
    mkdir -p "$(dirname "$root$dst")"
    [ -e "$root$dst" ] || : > "$root$dst"
  fi
  mount --bind "$src" "$root$dst"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$root$dst"; fi
done
if [ "$rootmode" = ro ]; then mount -o remount,ro "$root"; fi
set -- /bin/sh -c 'cd "$1" || exit 127; shift; exec "$@"' sh "$wd" "$@"
if [ -z "$user" ]; then exec chroot "$root" "$@"; fi
if [ -z "$groups" ]; then exec chroot --userspec="$user" --groups="${user#*:}" "$root" "$@"; fi
exec chroot --userspec="$user" --groups="$groups" "$root" "$@"
`
