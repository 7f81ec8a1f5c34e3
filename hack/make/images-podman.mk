# The Dockerfile built with podman from local base images, and checked against `make images`
# (issue 36). See docs/install.md, "Building the images with podman, without a registry".
.PHONY: images-podman images-podman-check images-podman-clean

## images-podman: podman build of the Dockerfile's targets from local bases (debootstrap + this host's Go), no registry
images-podman:
	hack/images/podman/build.sh

## images-podman-check: build both ways (Dockerfile with podman, hack/images/build.sh) and compare the images
images-podman-check:
	hack/images/podman/check.sh

## images-podman-clean: remove the project's podman storage, cached bases and archives ($RINGCAP_CACHE/podman)
images-podman-clean:
	hack/images/podman/clean.sh

TEST_ALL += images-podman-check
