// Command mkimage builds a container image from local files, without a Docker engine or a
// registry, and writes it as a docker-archive tarball that `ctr images import`, `docker load`
// and `kind load image-archive` accept.
//
// ringcap's own cluster tests use it to package the binaries built from the current commit
// (hack/images/build.sh); the Dockerfile at the repository root is the route for users with
// Docker. The image has a single layer, no base image, and is reproducible: entries are sorted,
// owned by 0:0 and dated 1970-01-01, so the same inputs give the same digest.
//
//	mkimage -t ringcap/plugin:dev -o plugin.tar -entrypoint /plugin bin/plugin:/plugin
//	mkimage -t ringcap/ringcap:dev -o ringcap.tar -env LD_LIBRARY_PATH=/usr/lib \
//	    -symlink /bin/sh=busybox rootfs/:/
//
// Each argument is SRC:DEST. SRC may be a file or a directory (copied recursively; symbolic
// links inside it are kept as links). -symlink LINK=TARGET adds a symbolic link.
package main
