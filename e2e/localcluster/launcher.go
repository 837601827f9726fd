package localcluster

// launchScript runs as `sh -c launchScript launch CGROUP ROOT SCRATCH WORKDIR HOSTNAME N [SRC DST MODE]xN CMD...`
// inside a fresh mount and UTS namespace (unshare). It first joins the container's cgroup
// (so everything it starts is counted, killed, frozen and partitioned with it), then builds the container's root file system
// as a copy-on-write overlay of the host's / (writes land in a tmpfs that vanishes with the
// namespace, so creating a mount point such as /etc/valkey never touches the host), binds
// /proc, /sys and /dev, binds each volume at its mount path, then chroots and execs the
// command in the working directory. The exec keeps the PID, so the process the agent started
// is the container's main process, and the parent-death signal set on it survives.
const launchScript = `set -e
echo $$ > "$1/cgroup.procs"
root=$2; scratch=$3; wd=$4; host=$5; n=$6; shift 6
mount -t tmpfs -o mode=0755 tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root"
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
exec chroot "$root" /bin/sh -c 'cd "$1" || exit 127; shift; exec "$@"' sh "$wd" "$@"
`
