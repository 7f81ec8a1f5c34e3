// Shared by the cgo files of package verbs (included from their preambles).
#ifndef RINGCAP_VERBS_RC_H
#define RINGCAP_VERBS_RC_H

#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

// A compact, fixed-layout send work request Go fills in C memory; C builds the chain.
struct rc_swr {
	uint64_t id, addr, raddr;
	uint32_t len, lkey, rkey, imm;
	int32_t opcode, flags;
};

// Builds n linked ibv_send_wr from w (one scatter entry each, in sge).
static inline void rc_build_send(const struct rc_swr *w, int n, struct ibv_send_wr *wr, struct ibv_sge *sge) {
	for (int i = 0; i < n; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = w[i].id;
		wr[i].opcode = (enum ibv_wr_opcode)w[i].opcode;
		wr[i].send_flags = (unsigned int)w[i].flags;
		if (w[i].len > 0) {
			sge[i].addr = w[i].addr; sge[i].length = w[i].len; sge[i].lkey = w[i].lkey;
			wr[i].sg_list = &sge[i]; wr[i].num_sge = 1;
		}
		if (wr[i].opcode == IBV_WR_SEND_WITH_IMM || wr[i].opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			wr[i].imm_data = htonl(w[i].imm);
		if (wr[i].opcode == IBV_WR_RDMA_WRITE || wr[i].opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		    wr[i].opcode == IBV_WR_RDMA_READ) {
			wr[i].wr.rdma.remote_addr = w[i].raddr; wr[i].wr.rdma.rkey = w[i].rkey;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
}

#endif
