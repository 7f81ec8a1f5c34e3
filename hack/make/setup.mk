# The README's setup on a fresh machine (issue 56): hack/setup.sh's Go step in a debootstrap
# bookworm root without Go. See docs/development.md.
.PHONY: test-setup

## test-setup: in a fresh debootstrap bookworm root (chroot), hack/setup.sh installs Go 1.26 from bookworm-backports' Go and the Go module proxy; it builds and tests small packages
test-setup:
	hack/setup-test.sh

TEST_ALL += test-setup
