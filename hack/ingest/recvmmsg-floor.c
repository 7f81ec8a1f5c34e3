// recvmmsg-floor: the least a UDP receiver can do, the anchor of make bench-ingest's
// `ratio ringcap/recvmmsg-floor`. It binds ADDR:PORT with the socket options ringcap recv
// sets (SO_RXQ_OVFL; SO_RCVBUF of RCVBUF bytes, forced past net.core.rmem_max when allowed),
// receives with recvmmsg in batches of BATCH into buffers of 9000 bytes, and counts
// datagrams, bytes and the kernel's drops; it touches no payload byte. WAIT says how it
// waits for datagrams: block (a blocking recvmmsg, MSG_WAITFORONE; the default), epoll
// (epoll_wait, then non-blocking recvmmsg until EAGAIN, as ringcap's Go poller does), spin
// (non-blocking recvmmsg, polling on for 50 us after the last datagram before it sleeps in
// poll, much as Go's scheduler spins before it sleeps) or busy (non-blocking recvmmsg in a
// loop: no wake-up to wait for, a whole core spent). It prints
// "ready port=P rcvbuf=N" once bound and, on SIGTERM or SIGINT, one line of counts:
//
//	packets=N bytes=B drops=D batches=K cpu_ns=C
//
// Usage: recvmmsg-floor ADDR PORT RCVBUF [BATCH [WAIT]]   (BATCH default 64, at most 1024)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PKT 9000
#define MAXBATCH 1024
#define SPIN_NS 50000

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void die(const char *what) {
  fprintf(stderr, "recvmmsg-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

// open_socket binds addr:port with ringcap recv's receive options and returns the socket
// and, in *got, the receive buffer obtained.
static int open_socket(const char *addr, int port, int rcvbuf, int *got) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) die("socket");
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) < 0) die("set SO_RXQ_OVFL");
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  socklen_t len = sizeof *got;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, got, &len) < 0) die("get SO_RCVBUF");
  if (*got / 2 < rcvbuf) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, got, &len) < 0) die("get SO_RCVBUF");
  }
  *got /= 2; // Linux reports twice the usable size
  struct timeval tv = {.tv_sec = 0, .tv_usec = 100000}; // wake to see a stop
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) die("set SO_RCVTIMEO");
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    fprintf(stderr, "recvmmsg-floor: %s is not an IPv4 address\n", addr);
    exit(2);
  }
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("bind");
  return fd;
}

// drops_of returns the kernel's drop count in a message's control data, or -1.
static long long drops_of(struct msghdr *h) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
      uint32_t d;
      memcpy(&d, CMSG_DATA(c), sizeof d);
      return d;
    }
  }
  return -1;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// wait_readable waits up to 100 ms for fd to hold a datagram.
static void wait_readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, 100) < 0 && errno != EINTR) die("poll");
}

static long long cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: recvmmsg-floor ADDR PORT RCVBUF [BATCH]\n");
    return 2;
  }
  int port = atoi(argv[2]), rcvbuf = atoi(argv[3]);
  int batch = argc > 4 ? atoi(argv[4]) : 64;
  int use_epoll = argc > 5 && strcmp(argv[5], "epoll") == 0;
  int busy = argc > 5 && strcmp(argv[5], "busy") == 0;
  int spin = argc > 5 && strcmp(argv[5], "spin") == 0;
  if (argc > 5 && !use_epoll && !busy && !spin && strcmp(argv[5], "block") != 0) {
    fprintf(stderr, "recvmmsg-floor: wait %s: want block, epoll, spin or busy\n", argv[5]);
    return 2;
  }
  if (batch < 1 || batch > MAXBATCH) {
    fprintf(stderr, "recvmmsg-floor: batch %d: want 1..%d\n", batch, MAXBATCH);
    return 2;
  }
  struct sigaction sa = {.sa_handler = on_signal}; // no SA_RESTART: recvmmsg returns EINTR
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  int got;
  int fd = open_socket(argv[1], port, rcvbuf, &got);

  static char bufs[MAXBATCH][PKT];
  static char ctrl[MAXBATCH][CMSG_SPACE(sizeof(uint32_t))];
  static struct iovec iov[MAXBATCH];
  static struct mmsghdr msgs[MAXBATCH];
  for (int i = 0; i < batch; i++) {
    iov[i].iov_base = bufs[i];
    iov[i].iov_len = PKT;
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = ctrl[i];
  }
  int ep = -1;
  if (use_epoll) {
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll");
  }
  printf("ready port=%d rcvbuf=%d\n", port, got);
  fflush(stdout);

  long long packets = 0, bytes = 0, drops = 0, batches = 0, last = 0;
  int flags = use_epoll || busy || spin ? MSG_DONTWAIT : MSG_WAITFORONE;
  while (!stop) {
    for (int i = 0; i < batch; i++) msgs[i].msg_hdr.msg_controllen = sizeof ctrl[i];
    int n = recvmmsg(fd, msgs, batch, flags, NULL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        struct epoll_event ev;
        if (use_epoll && epoll_wait(ep, &ev, 1, 100) < 0 && errno != EINTR) die("epoll_wait");
        if (spin && now_ns() - last > SPIN_NS) wait_readable(fd);
        continue;
      }
      die("recvmmsg");
    }
    if (spin) last = now_ns();
    batches++;
    for (int i = 0; i < n; i++) {
      packets++;
      bytes += msgs[i].msg_len;
      long long d = drops_of(&msgs[i].msg_hdr);
      if (d >= 0) drops = d; // the socket's running count
    }
  }
  printf("packets=%lld bytes=%lld drops=%lld batches=%lld cpu_ns=%lld\n", packets, bytes, drops, batches, cpu_ns());
  close(fd);
  return 0;
}
