/*
 * msgcount -- TCP streaming of a fixed COUNT of SIZE-byte messages, timed like
 * perftest's ib_send_bw (study S1's bandwidth claims: equal message counts).
 *
 * perftest's bandwidth test posts -n messages and times from the first post to
 * the completion of the last one (an RC completion means the receiver has the
 * message). A duration-based TCP tool (qperf tcp_bw -t 1) sends as many
 * messages as a second holds instead: thousands against perftest's hundreds,
 * so start-up and the last message's round trip weigh differently on the two
 * sides. msgcount makes the TCP side a count as well:
 *
 *   msgcount serve ADDR PORT
 *   msgcount send  ADDR PORT COUNT SIZE[,SIZE...] [nodelay]
 *
 * Per size the client opens a connection and sends a 12-byte header (magic,
 * size, count; network order); the server answers one byte when its buffer
 * is ready, so set-up is never timed. Then the client reads the clock
 * (CLOCK_MONOTONIC), writes COUNT messages of SIZE bytes (each written whole,
 * one write() per message unless the kernel takes less), and waits for the
 * server's one-byte acknowledgement, sent once it has read COUNT x SIZE
 * bytes; the clock again. The time is first write to the receiver having
 * everything (plus the acknowledgement's way back, as perftest's last
 * completion waits for the RC ACK). The server reads SIZE bytes per read(),
 * as an application receiving messages does (qperf's tcp_bw receiver too).
 * Nagle's algorithm stays on unless "nodelay" is given.
 *
 * Output (stdout): one JSON line per size, in the order given --
 *   {"size":S,"count":N,"nodelay":0,"bytes":B,"ns":T,"mbit":M,"writes":W,
 *    "cpu_user_us":U,"cpu_sys_us":Y}
 * (writes: write() calls the messages took; CPU: the client's getrusage over
 * the timed part). A size that fails prints {"size":S,"error":"..."} and the
 * exit status is 3; usage errors exit 2. The server serves one connection
 * after another until SIGTERM/SIGINT; each accepted connection's outcome goes
 * to stderr ({"event":"served",...}) so the harness's process log keeps it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x6d736763u /* "msgc" */
#define MAX_SIZE (1u << 20)
#define MAX_COUNT 1000000u
#define MAX_SIZES 64
#define IO_TIMEOUT_S 60

static volatile sig_atomic_t stopping;

static void on_signal(int sig) { (void)sig; stopping = 1; }

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_us(const struct timeval *tv)
{
    return (int64_t)tv->tv_sec * 1000000 + tv->tv_usec;
}

static int parse_uint(const char *text, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    if (!*text || *text == '-')
        return -1;
    unsigned long value = strtoul(text, &end, 10);
    if (errno || *end || value < 1 || value > max)
        return -1;
    *out = value;
    return 0;
}

static int parse_address(const char *addr, const char *port, struct sockaddr_in *sa)
{
    unsigned long p;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1 || parse_uint(port, 65535, &p))
        return -1;
    sa->sin_port = htons((uint16_t)p);
    return 0;
}

static void set_timeouts(int fd)
{
    struct timeval tv = {IO_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* all of len bytes, or -1 (errno set; EPIPE-like 0 read gives ECONNRESET) */
static int write_all(int fd, const char *buf, size_t len, uint64_t *calls)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR && !stopping)
                continue;
            return -1;
        }
        if (calls)
            (*calls)++;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, char *buf, size_t len)
{
    while (len) {
        ssize_t n = read(fd, buf, len);
        if (n == 0) {
            errno = ECONNRESET;
            return -1;
        }
        if (n < 0) {
            if (errno == EINTR && !stopping)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One connection: header, ready byte, COUNT x SIZE bytes read SIZE at a time, ack. */
static void serve_one(int fd, char *buf)
{
    uint32_t header[3];
    const char *error = NULL;
    uint64_t total = 0, received = 0;
    uint32_t size = 0, count = 0;
    set_timeouts(fd);
    if (read_all(fd, (char *)header, sizeof header) || ntohl(header[0]) != MAGIC) {
        error = "bad header";
        goto done;
    }
    size = ntohl(header[1]);
    count = ntohl(header[2]);
    if (size < 1 || size > MAX_SIZE || count < 1 || count > MAX_COUNT) {
        error = "size or count out of range";
        goto done;
    }
    total = (uint64_t)size * count;
    if (write_all(fd, "R", 1, NULL)) {
        error = strerror(errno);
        goto done;
    }
    while (received < total) {
        size_t want = total - received < size ? (size_t)(total - received) : size;
        ssize_t n = read(fd, buf, want);
        if (n == 0) {
            error = "connection closed early";
            goto done;
        }
        if (n < 0) {
            if (errno == EINTR && !stopping)
                continue;
            error = strerror(errno);
            goto done;
        }
        received += (uint64_t)n;
    }
    if (write_all(fd, "A", 1, NULL))
        error = strerror(errno);
done:
    fprintf(stderr, "{\"event\":\"served\",\"size\":%" PRIu32 ",\"count\":%" PRIu32
            ",\"received\":%" PRIu64 ",\"error\":%s%s%s}\n", size, count, received,
            error ? "\"" : "", error ? error : "null", error ? "\"" : "");
    close(fd);
}

static int serve(const struct sockaddr_in *sa)
{
    static char buf[MAX_SIZE];
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)
        || bind(fd, (const struct sockaddr *)sa, sizeof *sa) || listen(fd, 16)) {
        fprintf(stderr, "{\"event\":\"error\",\"error\":\"listen: %s\"}\n", strerror(errno));
        return 3;
    }
    fprintf(stderr, "{\"event\":\"listening\",\"pid\":%d}\n", (int)getpid());
    while (!stopping) {
        int conn = accept(fd, NULL, NULL);
        if (conn < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "{\"event\":\"error\",\"error\":\"accept: %s\"}\n",
                    strerror(errno));
            return 3;
        }
        serve_one(conn, buf);
    }
    close(fd);
    fprintf(stderr, "{\"event\":\"exit\",\"pid\":%d}\n", (int)getpid());
    return 0;
}

/* One size: connect, header, wait ready, time COUNT writes and the ack. */
static int send_one(const struct sockaddr_in *sa, uint32_t size, uint32_t count,
                    int nodelay, char *buf)
{
    const char *error = NULL;
    char ready = 0, ack = 0;
    uint64_t writes = 0;
    struct rusage r0, r1;
    int64_t t0 = 0, t1 = 0;
    uint32_t header[3] = {htonl(MAGIC), htonl(size), htonl(count)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        error = strerror(errno);
        goto done;
    }
    set_timeouts(fd);
    if (nodelay && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay)) {
        error = strerror(errno);
        goto done;
    }
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa)) {
        error = strerror(errno);
        goto done;
    }
    if (write_all(fd, (const char *)header, sizeof header, NULL)
        || read_all(fd, &ready, 1) || ready != 'R') {
        error = "no ready byte from the server";
        goto done;
    }
    getrusage(RUSAGE_SELF, &r0);
    t0 = now_ns();
    for (uint32_t i = 0; i < count; i++) {
        if (write_all(fd, buf, size, &writes)) {
            error = strerror(errno);
            goto done;
        }
    }
    if (read_all(fd, &ack, 1) || ack != 'A') {
        error = "no acknowledgement from the server";
        goto done;
    }
    t1 = now_ns();
    getrusage(RUSAGE_SELF, &r1);
done:
    if (fd >= 0)
        close(fd);
    if (error) {
        printf("{\"size\":%" PRIu32 ",\"error\":\"%s\"}\n", size, error);
        fflush(stdout);
        return -1;
    }
    uint64_t bytes = (uint64_t)size * count;
    int64_t ns = t1 - t0 > 0 ? t1 - t0 : 1;
    printf("{\"size\":%" PRIu32 ",\"count\":%" PRIu32 ",\"nodelay\":%d,\"bytes\":%" PRIu64
           ",\"ns\":%" PRId64 ",\"mbit\":%.6g,\"writes\":%" PRIu64 ",\"cpu_user_us\":%" PRId64
           ",\"cpu_sys_us\":%" PRId64 "}\n", size, count, nodelay ? 1 : 0, bytes, ns,
           (double)bytes * 8e3 / (double)ns, writes,
           cpu_us(&r1.ru_utime) - cpu_us(&r0.ru_utime),
           cpu_us(&r1.ru_stime) - cpu_us(&r0.ru_stime));
    fflush(stdout);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: msgcount serve ADDR PORT\n"
                    "       msgcount send ADDR PORT COUNT SIZE[,SIZE...] [nodelay]\n"
                    "  (IPv4 ADDR; COUNT 1..%u; SIZE 1..%u bytes, at most %d sizes)\n",
            MAX_COUNT, MAX_SIZE, MAX_SIZES);
    return 2;
}

int main(int argc, char **argv)
{
    struct sockaddr_in sa;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_signal;
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && !strcmp(argv[1], "serve")) {
        if (parse_address(argv[2], argv[3], &sa))
            return usage();
        return serve(&sa);
    }
    if ((argc != 6 && argc != 7) || strcmp(argv[1], "send")
        || (argc == 7 && strcmp(argv[6], "nodelay")) || parse_address(argv[2], argv[3], &sa))
        return usage();
    unsigned long count, sizes[MAX_SIZES];
    int n = 0;
    if (parse_uint(argv[4], MAX_COUNT, &count))
        return usage();
    char *list = strdup(argv[5]), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_SIZES || parse_uint(tok, MAX_SIZE, &sizes[n]))
            return usage();
        n++;
    }
    free(list);
    if (!n)
        return usage();
    static char buf[MAX_SIZE];
    memset(buf, 'm', sizeof buf);
    int failed = 0;
    for (int i = 0; i < n && !stopping; i++)
        failed |= send_one(&sa, (uint32_t)sizes[i], (uint32_t)count, argc == 7, buf) != 0;
    return failed || stopping ? 3 : 0;
}
