/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tcp_pingpong.c - loopback TCP round-trip latency, blocking vs busy-poll.
 *
 *   ./tcp_pingpong [-s BYTES] [-t SECONDS] [-m block|poll|both]
 *
 * Forks a client and a server connected over 127.0.0.1 (TCP_NODELAY) and
 * reports the half round-trip time.  "block" waits in recv() (the thread
 * sleeps, so every message costs a wake-up: what Gloo's TCP transport and
 * torch's gloo backend do); "poll" spins on recv(MSG_DONTWAIT) (what MPI and
 * UCX do).  On a VM the difference is the cost of waking an idle vCPU.
 *
 * Output: one line per mode:  mode size_bytes half_rtt_us iters
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

static int xfer(int fd, char *buf, size_t n, int poll, int rx) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = rx ? recv(fd, buf + done, n - done, poll ? MSG_DONTWAIT : 0)
                       : send(fd, buf + done, n - done, 0);
        if (r > 0)
            done += (size_t)r;
        else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        else
            return -1;
    }
    return 0;
}

/* both sides run the same number of round trips; the client times them */
static double run(int fd, int client, size_t size, long iters, int poll) {
    char *buf = calloc(1, size ? size : 1);
    double t0 = bench_now();
    long i;
    for (i = 0; i < iters; i++) {
        if (client) {
            if (xfer(fd, buf, size, poll, 0) || xfer(fd, buf, size, poll, 1)) {
                free(buf);
                return -1;
            }
        } else {
            if (xfer(fd, buf, size, poll, 1) || xfer(fd, buf, size, poll, 0)) {
                free(buf);
                return -1;
            }
        }
    }
    free(buf);
    return (bench_now() - t0) / (double)iters / 2.0;
}

int main(int argc, char **argv) {
    size_t size = 8;
    double target = 0.5;
    const char *mode = "both";
    int opt, lfd, fd, one = 1, m, status = 0;
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    pid_t pid;

    while ((opt = getopt(argc, argv, "s:t:m:")) != -1) {
        switch (opt) {
            case 's':
                size = bench_parse_size(optarg);
                break;
            case 't':
                target = atof(optarg);
                break;
            case 'm':
                mode = optarg;
                break;
            default:
                fprintf(stderr, "usage: tcp_pingpong [-s BYTES] [-t SEC] [-m block|poll|both]\n");
                return 2;
        }
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen)) {
        perror("listen");
        return 2;
    }
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) { /* server */
        fd = accept(lfd, NULL, NULL);
        if (fd < 0) _exit(2);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        for (;;) { /* protocol: client sends (mode, iters) then ping-pongs */
            long hdr[2];
            if (xfer(fd, (char *)hdr, sizeof(hdr), 0, 1)) break;
            if (hdr[1] <= 0) break;
            if (run(fd, 0, size, hdr[1], (int)hdr[0]) < 0) break;
        }
        close(fd);
        _exit(0);
    }
    close(lfd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        perror("connect");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 2;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    printf("# tcp_pingpong: loopback TCP, TCP_NODELAY; mode size_bytes half_rtt_us iters\n");
    for (m = 0; m < 2; m++) {
        long hdr[2], iters = 100;
        double t;
        if ((m == 0 && !strcmp(mode, "poll")) || (m == 1 && !strcmp(mode, "block"))) continue;
        hdr[0] = m; /* 0 block, 1 poll */
        hdr[1] = iters;
        xfer(fd, (char *)hdr, sizeof(hdr), 0, 0);
        t = run(fd, 1, size, iters, m); /* calibration */
        if (t <= 0) {
            status = 1;
            break;
        }
        iters = bench_iters_for(2.0 * t, target, 10000000L);
        hdr[1] = iters;
        xfer(fd, (char *)hdr, sizeof(hdr), 0, 0);
        t = run(fd, 1, size, iters, m);
        if (t <= 0) {
            status = 1;
            break;
        }
        printf("%-6s %10zu %10.2f %10ld\n", m ? "poll" : "block", size, t * 1e6, iters);
        fflush(stdout);
    }
    {
        long hdr[2] = {0, 0};
        xfer(fd, (char *)hdr, sizeof(hdr), 0, 0);
    }
    close(fd);
    waitpid(pid, NULL, 0);
    return status;
}
