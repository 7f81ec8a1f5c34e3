# Soft-RoCE VM tier (issue 3): real rxe devices in a qemu guest booting Debian's kernel.
# See hack/vm/README.md. Artifacts are cached under $(RINGCAP_VM_DIR).
RINGCAP_VM_DIR ?= /var/tmp/ringcap/vm
export RINGCAP_VM_DIR

# RINGCAP_VM_KERNEL_SUITE (environment or make argument) boots another Debian suite's kernel
# (hack/vm/kernel-paths.sh); default: the host's bookworm kernel (6.1).
# VM_ATTACHMENT_SUITE: the suite test-vm-attachment boots.
VM_ATTACHMENT_SUITE ?= trixie-backports
# The drop trace TestVMAttachmentStream logs: enabled at boot, and symbolised on 6.1 too.
VM_ATTACHMENT_APPEND = trace_event=skb:kfree_skb no_hash_pointers

.PHONY: vm-image test-vm bench-verbs vm-shell test-vm-attachment

## vm-image: fetch the Debian kernel (apt-get download, never installed) and build the initramfs
vm-image:
	hack/vm/fetch-kernel.sh
	hack/vm/build-initramfs.sh

## test-vm: the vm-tagged tests of test/vm/packages.txt in one boot of the Soft-RoCE VM
test-vm: vm-image
	test/vm/run-tests.sh

## test-vm-attachment: stream into a macvlan's RoCE GID (Attachment mode) in the VM on VM_ATTACHMENT_SUITE's kernel (default trixie-backports; empty: bookworm's 6.1); fails while rxe drops that traffic (docs/network.md); not in test-all
test-vm-attachment:
	RINGCAP_VM_KERNEL_SUITE=$(VM_ATTACHMENT_SUITE) hack/vm/fetch-kernel.sh
	RINGCAP_VM_KERNEL_SUITE=$(VM_ATTACHMENT_SUITE) hack/vm/build-initramfs.sh
	RINGCAP_VM_KERNEL_SUITE=$(VM_ATTACHMENT_SUITE) RINGCAP_VM_APPEND="$(VM_ATTACHMENT_APPEND) $${RINGCAP_VM_APPEND:-}" \
	  test/vm/run-tests.sh --tags vmattachment --run '^TestVMAttachmentStream$$' ./pkg/capture

## bench-verbs: memory registration and RDMA WRITE, whole-ring vs per-block MRs (in the VM)
bench-verbs: vm-image
	@mkdir -p bin
	test/vm/run-tests.sh --bench 'BenchmarkRegistration|BenchmarkRingWrite' --benchtime 1x ./pkg/rdma/verbs ./pkg/capture/verbsfabric | tee $(call bench-log,bench-verbs)
	$(call bench-record,make bench-verbs,VM,$(call bench-log,bench-verbs))

## vm-shell: interactive shell in the Soft-RoCE VM (exit powers it off)
vm-shell: vm-image
	RINGCAP_VM_SHELL=1 hack/vm/run.sh

TEST_ALL += test-vm
