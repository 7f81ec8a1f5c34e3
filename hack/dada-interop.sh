#!/usr/bin/env bash
# Interoperability check of ringcap's rings against real PSRDADA tools (manual; not part of
# CI, which cannot reach PSRDADA's sources). Builds the PSRDADA library and a few tools with
# plain gcc from a checkout you provide (e.g. github.com/mirror-psrdada/mirror-psrdada-code),
# then checks, in both directions:
#   1. dada_db creates, ringcap writes, dada_dbdisk -s reads; dada_dbxferinfo shows the
#      contract's state (w_buf_curr 6, slot 0 [0,0] => [5,524411]);
#   2. ringcap creates (same ipcs listing as dada_db), two dada_diskdb sessions (1.1.0
#      new-style headers) are read by one persistent `ringcap ring read`;
#   3. dada_dbmonitor and `ringcap ring monitor` print the same line;
#   4. a persistent dada_dbdisk reads 3 observations of one ringcap session and 10 more
#      sessions (old-style headers);
#   5. a fresh dada_dbdisk -s per observation, each observation a ringcap session with its
#      own UTC_START, in both header styles: every file is named after and carries its own
#      observation's header, and dada_header shows the header of the last one;
#   6. a ringcap reader that leaves mid-observation (its output pipe closed): the next
#      `ringcap ring read` resumes it at the right byte, and then dada_dbdisk -s reads the next
#      observation on that slot;
#   7. `ringcap ring read --dada-dir` beside dada_dbdisk on one observation (three files, the
#      last one short): the same file names and headers (but the last file's FILE_SIZE, the
#      target in dada_dbdisk's, the bytes it holds in ringcap's) and data; dada_diskdb replays
#      ringcap's files as one observation, and `ringcap ring write -f` takes dada_dbdisk's
#      files back, each verified.
#
#   hack/dada-interop.sh /path/to/psrdada-checkout
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
SRC=${1:?usage: hack/dada-interop.sh PSRDADA_CHECKOUT}
KEY=${INTEROP_KEY:-5a50}
B=$RINGCAP_CACHE/psrdada
R=$RINGCAP_CACHE/psrdada/ringcap
work=$(mktemp -d)
cleanup() {
  local rc=$?
  jobs -p | xargs -r kill 2>/dev/null || true
  wait 2>/dev/null || true
  "$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] && echo "work: $work" || rm -rf "$work"
  [ $rc -eq 0 ] && echo "interop: OK" || echo "interop: FAILED" >&2
  exit $rc
}
trap cleanup EXIT INT TERM
fail() { echo "interop: $*" >&2; exit 1; }

echo "== build PSRDADA tools from $SRC into $B"
mkdir -p "$B/obj"
: >"$B/obj/config.h"
for f in ascii_header ipcbuf ipcio ipcutil dada_hdu dada_client multilog multilog_server monitor sock \
         daemon diff_time disk_array fileread filesize string_array node_array tmutil command_parse \
         command_parse_server dada_affinity stopwatch dada_generator; do
  gcc -O1 -w -include sys/vfs.h -I"$B/obj" -I"$SRC/src" -c "$SRC/src/$f.c" -o "$B/obj/$f.o"
done
ar rcs "$B/libpsrdada.a" "$B"/obj/*.o
for a in dada_db dada_dbdisk dada_diskdb dada_dbxferinfo dada_dbmonitor dada_header; do
  gcc -O1 -w -I"$B/obj" -I"$SRC/src" "$SRC/apps/$a.c" "$B/libpsrdada.a" -lm -lpthread -o "$B/$a"
done
go build -o "$R" ./cmd/ringcap

expected() { # the pattern stream of $1 bytes (seed 11), through a ringcap-only ring
  "$R" ring create -k "$KEY" -b 1048576 -n 8 2>/dev/null
  "$R" ring write -k "$KEY" --seed 11 --bytes "$1" 2>/dev/null
  "$R" ring read -k "$KEY" -s -o "$work/expected.$1" 2>/dev/null
  "$R" ring destroy -k "$KEY" 2>/dev/null
}
check_files() { # every dada file in $1 holds a 4096-byte header and then the stream of $2 bytes
  local n=0
  for f in "$1"/*.dada; do
    cmp -s <(tail -c +4097 "$f") "$work/expected.$2" || fail "$f does not hold the expected $2 bytes"
    n=$((n + 1))
  done
  echo "$n"
}

echo "== 1: dada_db creates, ringcap writes, dada_dbdisk reads"
expected 5767291
mkdir "$work/d1"
"$B/dada_db" -k "$KEY" -b 1048576 -n 8 2>/dev/null
timeout 60 "$B/dada_dbdisk" -k "$KEY" -D "$work/d1" -s >"$work/d1.log" 2>&1 &
dbdisk=$!
sleep 0.5
"$R" ring write -k "$KEY" --seed 11 --bytes 5767291 --header FILE_SIZE=100000000 2>/dev/null
wait "$dbdisk" || fail "dada_dbdisk failed: $(cat "$work/d1.log")"
[ "$(check_files "$work/d1" 5767291)" = 1 ] || fail "dada_dbdisk wrote no file"
"$B/dada_dbxferinfo" -k "$KEY" 2>&1 | tee "$work/xfer.txt" | sed -n '7,8p;15,16p'
grep -q "sync->w_buf_curr: 6" "$work/xfer.txt" || fail "w_buf_curr"
grep -Eq "^ 0 \[ +0, +0\] => \[ +5, 524411\] +1" "$work/xfer.txt" || fail "slot 0"
"$B/dada_db" -k "$KEY" -d 2>/dev/null

echo "== 2: ringcap creates, dada_diskdb writes twice, one persistent ringcap reader"
"$R" ring create -k "$KEY" -b 1048576 -n 8 2>/dev/null
ipcs -m | awk -v k="$KEY" '$1 ~ k"$" || $1 ~ substr(k,1,3)"[01]$"' | wc -l | grep -qx 18 || fail "ipcs: want 18 segments for ring $KEY"
"$R" ring read -k "$KEY" --verify 11 2>"$work/r2.log" &
reader=$!
sleep 0.3
f=$(ls "$work"/d1/*.dada)
"$B/dada_diskdb" -k "$KEY" -f "$f" -s >/dev/null 2>&1
"$B/dada_diskdb" -k "$KEY" -f "$f" -s >/dev/null 2>&1
sleep 1
kill -TERM "$reader"; wait "$reader" || true
cat "$work/r2.log"
grep -q "read: bytes=11534582 blocks=12 observations=2 mismatches=0" "$work/r2.log" || fail "ringcap reader"

echo "== 3: dada_dbmonitor vs ringcap ring monitor"
timeout 2 "$B/dada_dbmonitor" -k "$KEY" 2>&1 | sed -n '13p' >"$work/m1" || true
"$R" ring monitor -k "$KEY" -c 1 | sed -n '13p' >"$work/m2"
cat "$work/m2"
cmp -s "$work/m1" "$work/m2" || fail "monitor lines differ: $(cat "$work/m1")"
"$R" ring destroy -k "$KEY" 2>/dev/null

echo "== 4: persistent dada_dbdisk, 3 observations in one session + 10 sessions"
expected 300000
mkdir "$work/d3"
"$R" ring create -k "$KEY" -b 65536 -n 4 2>/dev/null
"$B/dada_dbdisk" -k "$KEY" -D "$work/d3" >"$work/d3.log" 2>&1 &
dbdisk=$!
sleep 0.3
"$R" ring write -k "$KEY" --seed 11 --bytes 300000 --observations 3 --header FILE_SIZE=100000000 2>/dev/null
for i in $(seq 1 10); do
  "$R" ring write -k "$KEY" --seed 11 --bytes 300000 --header FILE_SIZE=100000000 \
    --header "UTC_START=2026-01-01-00:00:$(printf %02d "$i")" 2>/dev/null
done
for _ in $(seq 1 50); do [ "$(grep -c 'bytes transferred' "$work/d3.log")" -ge 13 ] && break; sleep 0.2; done
kill "$dbdisk"; wait "$dbdisk" 2>/dev/null || true
n=$(check_files "$work/d3" 300000)
echo "$n files verified"
[ "$n" = 13 ] || fail "dada_dbdisk wrote $n files, want 13"

echo "== 5: a fresh dada_dbdisk -s per observation gets that observation's header"
for style in "" --new-style-header; do
  "$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
  "$R" ring create -k "$KEY" -b 65536 -n 4 2>/dev/null
  d="$work/d5$style"
  mkdir "$d"
  for i in 1 2 3; do
    timeout 60 "$B/dada_dbdisk" -k "$KEY" -D "$d" -s >"$d.log" 2>&1 &
    dbdisk=$!
    sleep 0.3
    "$R" ring write -k "$KEY" --seed 11 --bytes 300000 --header FILE_SIZE=100000000 $style \
      --header "UTC_START=2026-02-0$i-00:00:00" --header "OBSNAME=OBS$i" 2>/dev/null
    wait "$dbdisk" || fail "dada_dbdisk -s, observation $i: $(cat "$d.log")"
    f=$(ls "$d"/2026-02-0$i-00:00:00*.dada 2>/dev/null) || fail "no file named after observation $i's UTC_START: $(ls "$d")"
    head -c 4096 "$f" | grep -aEq "^OBSNAME +OBS$i\$" || fail "$f carries another observation's header"
  done
  [ "$(check_files "$d" 300000)" = 3 ] || fail "dada_dbdisk -s wrote the wrong files ($style)"
  "$R" ring write -k "$KEY" --seed 11 --bytes 1000 $style --header OBSNAME=OBS4 2>/dev/null
  timeout 10 "$B/dada_header" -k "$KEY" 2>/dev/null | grep -Eq "^OBSNAME +OBS4\$" || fail "dada_header shows a stale header ($style)"
  echo "3 observations, each with its own header${style:+ ($style)}; dada_header current"
done

echo "== 6: a reader leaves mid-observation, ringcap resumes it, dada_dbdisk reads on"
"$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
"$R" ring create -k "$KEY" -b 65536 -n 4 2>/dev/null
"$R" ring write -k "$KEY" --seed 11 --bytes 300000 --header FILE_SIZE=100000000 2>/dev/null &
writer=$!
# The first reader fails (EPIPE) and closes once head has its 100000 bytes, inside the observation.
("$R" ring read -k "$KEY" -s -o /dev/stdout 2>/dev/null | head -c 100000 >/dev/null) || true
timeout 60 "$R" ring read -k "$KEY" -s -o "$work/rest" 2>"$work/r6.log" || fail "resuming reader: $(cat "$work/r6.log")"
off=$(sed -n 's/.*resuming the observation in progress at byte \([0-9]*\).*/\1/p' "$work/r6.log")
[ -n "$off" ] || fail "the second reader did not resume: $(cat "$work/r6.log")"
cmp -s <(tail -c +$((off + 1)) "$work/expected.300000") "$work/rest" || fail "the resumed reader's bytes from $off differ"
wait "$writer" || fail "the writer did not finish the observation"
mkdir "$work/d6"
timeout 60 "$B/dada_dbdisk" -k "$KEY" -D "$work/d6" -s >"$work/d6.log" 2>&1 &
dbdisk=$!
sleep 0.3
"$R" ring write -k "$KEY" --seed 11 --bytes 300000 --header FILE_SIZE=100000000 2>/dev/null
wait "$dbdisk" || fail "dada_dbdisk -s after a resumed slot: $(cat "$work/d6.log")"
[ "$(check_files "$work/d6" 300000)" = 1 ] || fail "dada_dbdisk -s after a resumed slot wrote the wrong file"
echo "resumed at byte $off; dada_dbdisk -s read the next observation on the slot"

echo "== 7: ring read --dada-dir beside dada_dbdisk; dada_diskdb replays ringcap's files"
"$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
"$R" ring create -k "$KEY" -b 65536 -n 4 -r 2 2>/dev/null
mkdir "$work/d7" "$work/r7"
timeout 60 "$B/dada_dbdisk" -k "$KEY" -D "$work/d7" -s >"$work/d7.log" 2>&1 &
dbdisk=$!
timeout 60 "$R" ring read -k "$KEY" -s --dada-dir "$work/r7" 2>"$work/r7.log" &
rreader=$!
sleep 0.3
"$R" ring write -k "$KEY" --seed 11 --bytes 250000 --header FILE_SIZE=100000 --header UTC_START=2026-03-01-00:00:00 2>/dev/null
wait "$dbdisk" || fail "dada_dbdisk: $(cat "$work/d7.log")"
wait "$rreader" || fail "ring read --dada-dir: $(cat "$work/r7.log")"
[ "$(cd "$work/d7" && ls)" = "$(cd "$work/r7" && ls)" ] || fail "file names differ: dada_dbdisk $(ls "$work/d7"), ringcap $(ls "$work/r7")"
[ "$(ls "$work/r7" | wc -l)" = 3 ] || fail "ring read --dada-dir wrote $(ls "$work/r7") for 250000 bytes in files of 100000"
for f in "$work"/d7/*.dada; do
  g="$work/r7/$(basename "$f")"
  cmp -s <(tail -c +4097 "$f") <(tail -c +4097 "$g") || fail "$(basename "$f"): the data differ"
  # ascii_header_set pads a value it sets with blanks; ringcap's values end at their last character
  hdr() { head -c 4096 "$1" | tr -d '\000' | sed 's/ *$//' | grep -v '^FILE_SIZE'; }
  diff <(hdr "$f") <(hdr "$g") >/dev/null || fail "$(basename "$f"): the headers differ beyond FILE_SIZE"
done
"$R" ring destroy -k "$KEY" >/dev/null 2>&1 || true
"$R" ring create -k "$KEY" -b 65536 -n 4 2>/dev/null
timeout 60 "$R" ring read -k "$KEY" -s --verify 11 2>"$work/v7.log" &
verifier=$!
sleep 0.3
mapfile -t files < <(ls "$work"/r7/*.dada)
"$B/dada_diskdb" -k "$KEY" $(printf -- '-f %s ' "${files[@]}") -s >"$work/dd7.log" 2>&1 || fail "dada_diskdb: $(cat "$work/dd7.log")"
wait "$verifier" || fail "verifying dada_diskdb's replay: $(cat "$work/v7.log")"
grep -q "read: bytes=250000 .* observations=1 mismatches=0" "$work/v7.log" || fail "dada_diskdb's replay: $(cat "$work/v7.log")"
for f in "$work"/d7/*.dada; do
  timeout 60 "$R" ring read -k "$KEY" -s --verify 11 2>"$work/w7.log" &
  verifier=$!
  sleep 0.3
  "$R" ring write -k "$KEY" -f "$f" 2>/dev/null || fail "ring write -f $(basename "$f")"
  wait "$verifier" || fail "ring write -f $(basename "$f"): $(cat "$work/w7.log")"
  grep -q " mismatches=0" "$work/w7.log" || fail "ring write -f $(basename "$f"): $(cat "$work/w7.log")"
done
echo "dada_dbdisk and ring read --dada-dir wrote the same 3 files; dada_diskdb replayed ringcap's, ring write -f took dada_dbdisk's back"
