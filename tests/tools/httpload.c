/* tests/tools/httpload.c: a bounded loopback load on the HTTP API while health probes are timed.
 *
 *   httpload PORT HOSTILE KEEPALIVE SECONDS BOUND_MS
 *
 * Holds HOSTILE connections that pipeline requests and never read their answers (reconnecting
 * when the server drops them, so HOSTILE stay connected), and KEEPALIVE clients that each send
 * GET /healthz about once a second on one connection and read the answer; meanwhile every
 * 50 ms a probe (a new connection, GET /healthz, as the kubelet does) is timed from connect()
 * to the whole answer. Prints the probe figures; exits 1 when a probe failed, a keep-alive
 * client lost its connection, or the slowest probe took more than BOUND_MS. 127.0.0.1 only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int dial(int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (rcvbuf)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One timed probe: a new connection, GET /healthz, the whole answer; -1 on failure. */
static double probe(void)
{
    double t0 = now_ms();
    int fd = dial(0);
    if (fd < 0)
        return -1;
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1) {
        close(fd);
        return -1;
    }
    char buf[1024];
    size_t len = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t k = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    buf[len] = 0;
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf, "\"ok\"") ? now_ms() - t0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fputs("usage: httpload PORT HOSTILE KEEPALIVE SECONDS BOUND_MS\n", stderr);
        return 2;
    }
    port = atoi(argv[1]);
    int nh = atoi(argv[2]), nk = atoi(argv[3]), secs = atoi(argv[4]);
    double bound = atof(argv[5]);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int *hf = calloc((size_t)nh, sizeof(int)), *kf = calloc((size_t)nk, sizeof(int));
    double *kdue = calloc((size_t)nk, sizeof(double));
    int *kwait = calloc((size_t)nk, sizeof(int));
    double *lat = calloc((size_t)(secs * 40 + 16), sizeof(double));
    if (!hf || !kf || !kdue || !kwait || !lat)
        return 1;
    static char pipe_reqs[32 << 10];
    size_t pn = 0;
    while (pn + 64 < sizeof(pipe_reqs))
        pn += (size_t)snprintf(pipe_reqs + pn, sizeof(pipe_reqs) - pn,
                               "GET /healthz HTTP/1.1\r\nHost: hostile\r\n\r\n");
    for (int i = 0; i < nh; i++)
        hf[i] = dial(2048);
    double t_start = now_ms();
    for (int i = 0; i < nk; i++) {
        kf[i] = dial(0);
        kdue[i] = t_start + (1000.0 * i) / nk;
        if (kf[i] < 0) {
            fprintf(stderr, "httpload: keep-alive client %d cannot connect\n", i);
            return 1;
        }
    }
    long reconnects = 0, ka_answers = 0, ka_lost = 0;
    int np = 0, pfail = 0;
    double next_probe = now_ms() + 200, end = now_ms() + secs * 1000.0;
    static const char kreq[] = "GET /healthz HTTP/1.1\r\nHost: ka\r\n\r\n";
    while (now_ms() < end) {
        double t = now_ms();
        for (int i = 0; i < nh; i++) { /* hostile: keep pushing, never read */
            if (hf[i] < 0 && (hf[i] = dial(2048)) >= 0)
                reconnects++;
            if (hf[i] >= 0 && send(hf[i], pipe_reqs, pn, MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
                errno != EWOULDBLOCK) {
                close(hf[i]);
                hf[i] = -1;
            }
        }
        for (int i = 0; i < nk; i++) { /* keep-alive: one request a second, answer read */
            if (kf[i] < 0)
                continue;
            char buf[512];
            ssize_t k = recv(kf[i], buf, sizeof(buf), 0);
            if (k > 0 && kwait[i]) {
                kwait[i] = 0;
                ka_answers++;
            } else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(kf[i]);
                kf[i] = -1;
                ka_lost++;
                continue;
            }
            if (!kwait[i] && t >= kdue[i]) {
                if (send(kf[i], kreq, sizeof(kreq) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(kreq) - 1)
                    kwait[i] = 1;
                kdue[i] += 1000.0;
            }
        }
        if (t >= next_probe) {
            double l = probe();
            if (l < 0)
                pfail++;
            else
                lat[np++] = l;
            next_probe += 50;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    int held = 0, ka_held = 0;
    for (int i = 0; i < nh; i++)
        held += hf[i] >= 0;
    for (int i = 0; i < nk; i++)
        ka_held += kf[i] >= 0;
    qsort(lat, (size_t)np, sizeof(double), cmp);
    double p50 = np ? lat[np / 2] : 0,
           p99 = np ? lat[(np * 99) / 100 < np ? (np * 99) / 100 : np - 1] : 0;
    double mx = np ? lat[np - 1] : 0;
    printf("probes=%d failed=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f bound_ms=%.0f\n", np + pfail,
           pfail, p50, p99, mx, bound);
    printf("hostile=%d held_at_end=%d reconnects_after_drop=%ld keepalive=%d held_at_end=%d "
           "answers=%ld lost=%ld seconds=%d\n",
           nh, held, reconnects, nk, ka_held, ka_answers, ka_lost, secs);
    fflush(stdout);
    for (int i = 0; i < nh; i++)
        if (hf[i] >= 0)
            close(hf[i]);
    for (int i = 0; i < nk; i++)
        if (kf[i] >= 0)
            close(kf[i]);
    free(hf);
    free(kf);
    free(kdue);
    free(kwait);
    free(lat);
    return pfail || ka_lost || np == 0 || mx > bound ? 1 : 0;
}
