#!/bin/sh
# ringcap-vm-unprivileged MEMLOCK_BYTES COMMAND [ARGS...]
# Runs COMMAND in the Soft-RoCE VM as uid/gid 65534 (nobody/nogroup) without capabilities
# (so no CAP_IPC_LOCK) and with RLIMIT_MEMLOCK = MEMLOCK_BYTES (soft and hard), the way a
# non-root receiver runs in a pod. Example: ringcap-vm-unprivileged $((8 << 20)) ./verbs.test -test.run TestX
# Go tests can do the same without the shell: see test/vm/vmtest.RunUnprivileged.
[ $# -ge 2 ] || { echo "usage: ringcap-vm-unprivileged MEMLOCK_BYTES COMMAND [ARGS...]" >&2; exit 2; }
m=$1; shift
exec prlimit --memlock="$m:$m" -- setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "$@"
