# Where the VM's kernel and initramfs live (sourced by the hack/vm scripts after hack/env.sh).
#
#   RINGCAP_VM_KERNEL_SUITE   unset (default): the kernel of the host's own apt sources
#                             (bookworm, Linux 6.1) in $VM_DIR/kernel and $VM_DIR/initramfs.cpio.gz;
#                             a Debian suite (trixie, bookworm-backports, ...): that suite's
#                             linux-image-amd64, fetched with a private apt state
#                             ($VM_DIR/apt-SUITE), in $VM_DIR/kernel-SUITE and
#                             $VM_DIR/initramfs-SUITE.cpio.gz: the default VM is left untouched.
VM_DIR=${RINGCAP_VM_DIR:-$RINGCAP_CACHE/vm}
VM_KERNEL_SUITE=${RINGCAP_VM_KERNEL_SUITE:-}
case "$VM_KERNEL_SUITE" in
  '') VM_KSUFFIX= ;;
  *[!a-z0-9-]*|-*)
    echo "RINGCAP_VM_KERNEL_SUITE=$VM_KERNEL_SUITE: not a Debian suite name (e.g. trixie, bookworm-backports)" >&2
    exit 2 ;;
  *) VM_KSUFFIX=-$VM_KERNEL_SUITE ;;
esac
VM_KDIR=$VM_DIR/kernel$VM_KSUFFIX
VM_INITRD=$VM_DIR/initramfs$VM_KSUFFIX.cpio.gz
