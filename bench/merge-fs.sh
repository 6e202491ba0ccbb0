#!/usr/bin/env bash
# `agentproof report merge` of 1,000 cells (BenchmarkReportMerge1000 in internal/cli)
# on several file systems side by side, in turns, in one run. Rerun from the
# repository root:
#
#   bench/merge-fs.sh [ROUNDS] [DIR ...]   # default: 4 rounds; $TMPDIR, /dev/shm, and
#                                          # as root a journaled ext4 made for the run
#
# Each DIR is a directory on the file system to measure (the benchmark's shard and
# campaign directories are made there). Without DIRs it measures the file system of
# $TMPDIR (or /tmp), tmpfs (/dev/shm) and, when run as root with mkfs.ext4 and a free
# loop device, a fresh ext4 with its default journal, made in a 4 GiB image file next
# to $TMPDIR and mounted for the run (unmounted and removed at the end). Each round
# runs the benchmark once per file system (three merges each, a fresh process) in the
# same order; at the end it prints per file system the median wall time and process
# CPU time per merge, and the ratio of each median to the first file system's.
#
# Why the file system: a merge makes every attempt's directories anew (about 7,200 per
# 1,000 attempts) and hard-links its files. On an ext4 without a journal the kernel's
# inode allocator steps over every inode freed in the last minute (fs/ext4/ialloc.c,
# find_inode_bit and recently_deleted), so each mkdir costs more the more was deleted
# just before, the benchmark's own clean-up of the previous round included; a journaled
# ext4 (the default of mkfs.ext4) and tmpfs skip that check. docs/sharding.md has the
# figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-4}
shift || true
work=$(mktemp -d)
mnt=""
made=()
cleanup() {
  if [ -n "$mnt" ]; then umount "$mnt" 2>/dev/null || true; fi
  rm -rf "$work" "${made[@]}"
}
trap cleanup EXIT
(cd "$root" && go test -c -o "$work/cli.test" ./internal/cli)
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  base=${TMPDIR:-/tmp}
  dirs=("$(mktemp -d -p "$base")")
  [ -d /dev/shm ] && dirs+=("$(mktemp -d -p /dev/shm)")
  made=("${dirs[@]}")
  if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null; then
    img=$(mktemp -p "$base" ext4-XXXXXX.img)
    truncate -s 4G "$img"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img" # initialized now: no background zeroing during the rounds
    mnt="$work/ext4"
    mkdir -p "$mnt"
    if mount -o loop "$img" "$mnt"; then
      dirs+=("$mnt")
    else
      mnt=""
    fi
    rm -f "$img" # the mount keeps it open; its blocks are freed at umount
  fi
fi
# label DIR: its file system's type, and for ext4 whether it has a journal (the
# kernel's /sys/fs/ext4/<device>/journal_task is "<none>" without one).
label() {
  local src t j
  read -r src t < <(findmnt -n -o SOURCE,FSTYPE --target "$1" 2>/dev/null || echo "? $(stat -f -c %T "$1")")
  if [ "$t" = ext4 ] && j=$(cat "/sys/fs/ext4/$(basename "$src")/journal_task" 2>/dev/null); then
    if [ "$j" = "<none>" ]; then t="ext4 (no journal)"; else t="ext4 (journal)"; fi
  fi
  echo "$t"
}
for d in "${dirs[@]}"; do
  echo "# $d: $(label "$d")" >&2
done
results="$work/results.tsv"
for r in $(seq "$rounds"); do
  for d in "${dirs[@]}"; do
    line=$(cd "$root/internal/cli" && TMPDIR="$d" "$work/cli.test" -test.run '^$' \
      -test.bench '^BenchmarkReportMerge1000$' -test.benchtime 3x | grep '^BenchmarkReportMerge1000')
    ns=$(awk '{print $3}' <<<"$line")
    cpu=$(awk '{print $5}' <<<"$line")
    printf '%s\t%s\t%s\n' "$d" "$ns" "$cpu" >>"$results"
    printf 'round %d %s: %.2f s, cpu %.2f s per merge (load %s)\n' "$r" "$d" \
      "$(echo "$ns / 1000000000" | bc -l)" "$(echo "$cpu / 1000" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)" >&2
  done
done
first=""
for d in "${dirs[@]}"; do
  med() { awk -F'\t' -v d="$d" -v c="$1" '$1 == d {print $c}' "$results" | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
  wall=$(med 2)
  cpu=$(med 3)
  [ -z "$first" ] && first=$wall
  printf '%-40s %-18s median %.2f s per merge, cpu %.2f s, ×%.2f of the first\n' "$d" \
    "$(label "$d")" "$(echo "$wall / 1000000000" | bc -l)" "$(echo "$cpu / 1000" | bc -l)" \
    "$(echo "$wall / $first" | bc -l)"
done
