/* semfloor: the floor of the ring's per-block handoff, for BenchmarkHandoffFloor
 * (pkg/dada/bench_test.go). Per block it makes exactly the semaphore operations
 * pkg/dada's writer and one reader make on the reader's semaphore set in steady state,
 * on one thread as the benchmark's handoff loop does, and nothing else:
 *   writer OpenBlock    semtimedop(CLEAR, -1, 100 ms timeout)
 *   writer MarkFilled   semtimedop(FULL,  +1, no timeout)
 *   reader NextBlock    semtimedop(FULL,  -1, 100 ms timeout)
 *   reader MarkCleared  semtimedop(CLEAR, +1, no timeout)
 * Usage: semfloor N. Prints the nanoseconds per block of wall time and of the process's CPU
 * time (CLOCK_PROCESS_CPUTIME_ID). The set is private and removed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/ipc.h>
#include <sys/sem.h>

enum { SEM_FULL = 2, SEM_CLEAR = 3, NSEMS = 4 };

static int op(int id, unsigned short num, short delta, const struct timespec *ts) {
	struct sembuf b = {num, delta, 0};
	return semtimedop(id, &b, 1, ts);
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: semfloor N\n");
		return 2;
	}
	long n = atol(argv[1]);
	int id = semget(IPC_PRIVATE, NSEMS, IPC_CREAT | 0600);
	if (id < 0) {
		perror("semget");
		return 1;
	}
	struct timespec poll = {0, 100000000}, t0, t1, c0, c1;
	int rc = op(id, SEM_CLEAR, 1, NULL); /* one block free */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n && rc == 0; i++) {
		rc = op(id, SEM_CLEAR, -1, &poll);
		rc = rc ? rc : op(id, SEM_FULL, 1, NULL);
		rc = rc ? rc : op(id, SEM_FULL, -1, &poll);
		rc = rc ? rc : op(id, SEM_CLEAR, 1, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	if (rc != 0)
		perror("semtimedop");
	semctl(id, 0, IPC_RMID);
	if (rc != 0)
		return 1;
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
	printf("%.1f %.1f\n", ns / (double)n, cpu / (double)n);
	return 0;
}
