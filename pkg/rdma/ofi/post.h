// Shared by ofi_cgo.go and lane_cgo.go: one operation to post, and posting a chain of them.
#ifndef RINGCAP_OFI_POST_H
#define RINGCAP_OFI_POST_H

#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

struct ofi_op {
	uint64_t addr, len, peer, raddr, key, data, id, flags;
	void *desc;
	int kind; // 0 fi_sendmsg, 1 fi_recvmsg, 2 fi_writemsg
};

// Posts n operations in order; returns how many were posted, *rc the first failure.
static size_t ofi_post(struct fid_ep *ep, struct ofi_op *ops, size_t n, ssize_t *rc) {
	*rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct ofi_op *o = &ops[i];
		struct iovec iov = { (void *)(uintptr_t)o->addr, o->len };
		void *desc = o->desc;
		void *ctx = (void *)(uintptr_t)o->id;
		ssize_t r;
		if (o->kind == 0) {
			struct fi_msg m = { &iov, &desc, 1, o->peer, ctx, o->data };
			r = fi_sendmsg(ep, &m, o->flags);
		} else if (o->kind == 1) {
			struct fi_msg m = { &iov, &desc, 1, o->peer, ctx, 0 };
			r = fi_recvmsg(ep, &m, o->flags);
		} else {
			struct fi_rma_iov rma = { o->raddr, o->len, o->key };
			struct fi_msg_rma m = { &iov, &desc, 1, o->peer, &rma, 1, ctx, o->data };
			r = fi_writemsg(ep, &m, o->flags);
		}
		if (r) { *rc = r; return i; }
	}
	return n;
}

#endif
