/*
 * fanin -- the 1:N fan-in traffic generator of study S3 (Hadoop shuffle model).
 *
 * One reducer pulls a partition of SIZE bytes from each of N mappers at once,
 * round after round, over TCP, SCTP or TIPC, with the same code path for all
 * three: SOCK_STREAM sockets, one worker thread per mapper connection on the
 * reducer, a barrier so every request leaves at the same moment, and
 * CLOCK_MONOTONIC timing. Only the socket's address family/protocol differs.
 *
 *   fanin serve  --proto tcp|sctp|tipc --listen ADDR:PORT | --listen TYPE:INSTANCE
 *   fanin reduce --proto P --targets T1,T2,... --size BYTES --rounds R
 *                [--warmup W] [--period-us P] [--out FILE] [--cpu-sample-ms M]
 *                [--sndbuf B] [--rcvbuf B] [--cc NAME] [--connect-timeout S]
 *                [--round-timeout S]
 *
 * A round: the main thread takes t0 and releases the barrier; each worker
 * sends a 16-byte request (magic, round, size, worker), reads exactly SIZE
 * bytes, checks them (header echo + fixed pattern, so every requested byte is
 * accounted for) and records its finish time; a second barrier ends the round.
 * The round's time is max(finish) - t0: "request to last byte received".
 * With --period-us the rounds start on a fixed CLOCK_MONOTONIC grid
 * (clock_nanosleep TIMER_ABSTIME); a round that ends after the next start is
 * counted as an overrun and the next one starts at once.
 *
 * Output: JSON lines (one object per line) -- "start", one "round" per round,
 * "cpu" samples (/proc/stat first line and this process's utime/stime ticks),
 * two of them marked: "begin" as the first measured round starts (after the
 * warm-up, on its grid point) and "end" after the last one -- with --period-us
 * on the grid point that would start the next round, so the marked interval is
 * exactly rounds x period when no round overran: the interval `sar` would
 * average the machine's CPU over while the offered load is periodic --
 * and a final "summary" with getrusage() and totals. Errors go to stderr as
 * {"event":"error",...} and the exit status is 3 (2 for usage errors).
 *
 * The mapper ("serve") answers requests on each accepted connection until
 * EOF; on SIGTERM/SIGINT it prints an "exit" line with its counters and
 * getrusage() and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <linux/tipc.h>

#ifndef IPPROTO_SCTP
#define IPPROTO_SCTP 132
#endif
#ifndef SOL_SCTP
#define SOL_SCTP 132
#endif
#define FANIN_SCTP_NODELAY 3 /* linux/sctp.h; netinet/sctp.h (libsctp-dev) is not needed */
#ifndef TIPC_NODELAY
#define TIPC_NODELAY 138 /* Linux >= 5.8; older kernels reject it (ignored) */
#endif

#define MAGIC 0x46414e49u /* "FANI" */
#define REQ_BYTES 16
#define MIN_SIZE 16
#define MAX_SIZE (1 << 20)
#define MAX_TARGETS 1024

enum proto { P_TCP, P_SCTP, P_TIPC };
static const char *proto_names[] = {"tcp", "sctp", "tipc"};

struct target {
    char text[128];
    struct sockaddr_storage addr;
    socklen_t len;
};

struct options {
    enum proto proto;
    int proto_set;
    char listen[128];
    struct target targets[MAX_TARGETS];
    int ntargets;
    long size, rounds, warmup;
    long period_us, cpu_sample_ms;
    int sndbuf, rcvbuf;
    char cc[32];
    double connect_timeout, round_timeout;
    const char *out;
};

static struct options opt = {.size = 4096, .rounds = 100, .connect_timeout = 20,
                             .round_timeout = 30};
static FILE *out;
static unsigned char *pattern; /* MAX_SIZE bytes, identical in every process */
static volatile sig_atomic_t stop_flag;

/* ---------------------------------------------------------------- helpers */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void json_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = '\'';
    fprintf(stderr, "{\"event\":\"error\",\"pid\":%d,\"message\":\"%s\"}\n", getpid(), msg);
    fflush(stderr);
    if (out && out != stdout && out != stderr) {
        fprintf(out, "{\"event\":\"error\",\"message\":\"%s\"}\n", msg);
        fflush(out);
    }
}

static void usage_error(const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_error("usage: %s", msg);
    exit(2);
}

static void build_pattern(void)
{
    pattern = malloc(MAX_SIZE);
    if (!pattern) {
        json_error("out of memory");
        exit(3);
    }
    uint32_t x = 2463534242u; /* xorshift32: cheap, not compressible, same everywhere */
    for (size_t i = 0; i < MAX_SIZE; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        pattern[i] = (unsigned char)x;
    }
}

static long parse_long(const char *text, const char *what, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < lo || v > hi)
        usage_error("%s must be an integer in %ld..%ld, got '%s'", what, lo, hi, text);
    return v;
}

static double parse_double(const char *text, const char *what, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end || end == text || !(v >= lo && v <= hi))
        usage_error("%s must be a number in %g..%g, got '%s'", what, lo, hi, text);
    return v;
}

/* tcp/sctp: IPv4:PORT or [IPv6]:PORT; tipc: TYPE:INSTANCE (TYPE >= 64). */
static void parse_address(const char *text, struct target *t)
{
    snprintf(t->text, sizeof t->text, "%s", text);
    memset(&t->addr, 0, sizeof t->addr);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    char *colon = strrchr(buf, ':');
    if (!colon)
        usage_error("address '%s' has no ':'", text);
    *colon = 0;
    if (opt.proto == P_TIPC) {
        long type = parse_long(buf, "TIPC service type", TIPC_RESERVED_TYPES, UINT32_MAX);
        long inst = parse_long(colon + 1, "TIPC service instance", 0, UINT32_MAX);
        struct sockaddr_tipc *a = (struct sockaddr_tipc *)&t->addr;
        a->family = AF_TIPC;
        a->addr.name.name.type = (uint32_t)type;
        a->addr.name.name.instance = (uint32_t)inst;
        t->len = sizeof *a;
        return;
    }
    long port = parse_long(colon + 1, "port", 1, 65535);
    char *host = buf;
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']')
            usage_error("bad IPv6 address in '%s'", text);
        host[n - 1] = 0;
        host++;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&t->addr;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
            usage_error("'%s' is not an IPv6 address", host);
        t->len = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&t->addr;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
            usage_error("'%s' is not an IPv4 address", host);
        t->len = sizeof *a4;
    }
}

static int open_socket(int family)
{
    int fd;
    switch (opt.proto) {
    case P_TCP: fd = socket(family, SOCK_STREAM, IPPROTO_TCP); break;
    case P_SCTP: fd = socket(family, SOCK_STREAM, IPPROTO_SCTP); break;
    default: fd = socket(AF_TIPC, SOCK_STREAM, 0); break;
    }
    if (fd < 0) {
        json_error("cannot open a %s socket: %s", proto_names[opt.proto], strerror(errno));
        exit(3);
    }
    return fd;
}

/* The same options for every protocol where the protocol has them. */
static void tune_socket(int fd)
{
    int one = 1;
    if (opt.sndbuf && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opt.sndbuf, sizeof opt.sndbuf))
        json_error("SO_SNDBUF: %s", strerror(errno));
    if (opt.rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opt.rcvbuf, sizeof opt.rcvbuf))
        json_error("SO_RCVBUF: %s", strerror(errno));
    switch (opt.proto) {
    case P_TCP:
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (opt.cc[0] &&
            setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, opt.cc, strlen(opt.cc))) {
            json_error("TCP_CONGESTION %s: %s", opt.cc, strerror(errno));
            exit(3);
        }
        break;
    case P_SCTP: setsockopt(fd, SOL_SCTP, FANIN_SCTP_NODELAY, &one, sizeof one); break;
    case P_TIPC: setsockopt(fd, SOL_TIPC, TIPC_NODELAY, &one, sizeof one); break;
    }
}

static int read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, (char *)buf + got, len - got, 0);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR && !stop_flag)
            continue;
        if (n == 0)
            errno = 0; /* EOF */
        return -1;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    size_t put = 0;
    while (put < len) {
        ssize_t n = send(fd, (const char *)buf + put, len - put, MSG_NOSIGNAL);
        if (n > 0) {
            put += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR && !stop_flag)
            continue;
        return -1;
    }
    return 0;
}

static void rusage_json(char *buf, size_t len)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    snprintf(buf, len, "\"utime_s\":%.6f,\"stime_s\":%.6f,\"maxrss_kb\":%ld,"
             "\"nvcsw\":%ld,\"nivcsw\":%ld",
             ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
             ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss, ru.ru_nvcsw,
             ru.ru_nivcsw);
}

/* ------------------------------------------------------------------ serve */

static uint64_t served_requests, served_bytes, served_connections;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void serve_connection(int fd)
{
    unsigned char *buf = malloc(MAX_SIZE);
    uint32_t req[4];
    if (!buf) {
        json_error("out of memory");
        return;
    }
    memcpy(buf, pattern, MAX_SIZE);
    while (!stop_flag) {
        if (read_full(fd, req, sizeof req)) {
            if (errno && !stop_flag)
                json_error("reading a request: %s", strerror(errno));
            break;
        }
        if (req[0] != MAGIC || req[2] < MIN_SIZE || req[2] > MAX_SIZE) {
            json_error("bad request (magic %08x size %u)", req[0], req[2]);
            break;
        }
        memcpy(buf, req, sizeof req); /* echo the header: the reducer checks it */
        if (write_full(fd, buf, req[2])) {
            if (!stop_flag)
                json_error("sending %u bytes: %s", req[2], strerror(errno));
            break;
        }
        memcpy(buf, pattern, sizeof req);
        served_requests++;
        served_bytes += req[2];
    }
    free(buf);
}

static int cmd_serve(void)
{
    struct target t;
    int fd;
    parse_address(opt.listen, &t);
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: accept() returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (opt.proto == P_TIPC) {
        struct sockaddr_tipc *a = (struct sockaddr_tipc *)&t.addr;
        uint32_t type = a->addr.name.name.type, inst = a->addr.name.name.instance;
        memset(a, 0, sizeof *a);
        a->family = AF_TIPC;
        a->addrtype = TIPC_SERVICE_RANGE;
        a->scope = TIPC_CLUSTER_SCOPE;
        a->addr.nameseq.type = type;
        a->addr.nameseq.lower = inst;
        a->addr.nameseq.upper = inst;
        fd = open_socket(AF_TIPC);
    } else {
        fd = open_socket(t.addr.ss_family);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    tune_socket(fd); /* buffers are inherited by accepted sockets */
    if (bind(fd, (struct sockaddr *)&t.addr, t.len) || listen(fd, 128)) {
        json_error("cannot listen on %s (%s): %s", opt.listen, proto_names[opt.proto],
                   strerror(errno));
        return 3;
    }
    printf("{\"event\":\"listening\",\"pid\":%d,\"proto\":\"%s\",\"listen\":\"%s\"}\n",
           getpid(), proto_names[opt.proto], opt.listen);
    fflush(stdout);
    while (!stop_flag) {
        int c = accept(fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            json_error("accept: %s", strerror(errno));
            return 3;
        }
        tune_socket(c);
        served_connections++;
        serve_connection(c);
        close(c);
    }
    char ru[256];
    rusage_json(ru, sizeof ru);
    printf("{\"event\":\"exit\",\"pid\":%d,\"listen\":\"%s\",\"connections\":%" PRIu64
           ",\"requests\":%" PRIu64 ",\"bytes\":%" PRIu64 ",%s}\n",
           getpid(), opt.listen, served_connections, served_requests, served_bytes, ru);
    fflush(stdout);
    return 0;
}

/* ----------------------------------------------------------------- reduce */

struct worker {
    pthread_t thread;
    int index, fd;
    int64_t done_ns;
    int failed;
    char error[200];
    unsigned char *buf;
};

static struct worker *workers;
static pthread_barrier_t go, finished;
static volatile long current_round;
static volatile int quit_workers;
static volatile int sampler_stop;

static int connect_target(const struct target *t, char *err, size_t errlen)
{
    int64_t deadline = now_ns() + (int64_t)(opt.connect_timeout * 1e9);
    for (;;) {
        int fd = open_socket(t->addr.ss_family == AF_TIPC ? AF_TIPC : t->addr.ss_family);
        tune_socket(fd);
        struct sockaddr_storage a = t->addr;
        if (opt.proto == P_TIPC) {
            struct sockaddr_tipc *ta = (struct sockaddr_tipc *)&a;
            ta->addrtype = TIPC_SERVICE_ADDR;
            ta->addr.name.domain = 0;
        }
        if (connect(fd, (struct sockaddr *)&a, t->len) == 0)
            return fd;
        int e = errno;
        close(fd);
        /* A TIPC name appears only once the link to its node is up: retry until the deadline. */
        if (now_ns() > deadline) {
            snprintf(err, errlen, "connect to %s (%s): %s", t->text, proto_names[opt.proto],
                     strerror(e));
            return -1;
        }
        usleep(100000);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint32_t req[4] = {MAGIC, 0, (uint32_t)opt.size, (uint32_t)w->index};
    for (;;) {
        pthread_barrier_wait(&go);
        if (quit_workers)
            break;
        req[1] = (uint32_t)current_round;
        if (w->failed) {
            /* a broken connection keeps failing; still take part in the barriers */
        } else if (write_full(w->fd, req, sizeof req)) {
            w->failed = 1;
            snprintf(w->error, sizeof w->error, "target %d: sending request: %s", w->index,
                     strerror(errno));
        } else if (read_full(w->fd, w->buf, (size_t)opt.size)) {
            w->failed = 1;
            snprintf(w->error, sizeof w->error, "target %d: reading %ld bytes: %s", w->index,
                     opt.size, errno == EAGAIN ? "round timeout" :
                     errno ? strerror(errno) : "connection closed");
        } else if (memcmp(w->buf, req, sizeof req) ||
                   memcmp(w->buf + sizeof req, pattern + sizeof req,
                          (size_t)opt.size - sizeof req)) {
            w->failed = 1;
            snprintf(w->error, sizeof w->error, "target %d: round %ld: payload mismatch",
                     w->index, current_round);
        }
        w->done_ns = now_ns();
        pthread_barrier_wait(&finished);
    }
    return NULL;
}

static void read_proc_stat(char *buf, size_t len)
{
    buf[0] = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    char line[512];
    if (fgets(line, sizeof line, f) && !strncmp(line, "cpu ", 4)) {
        unsigned long long v[10] = {0};
        int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        size_t used = 0;
        for (int i = 0; i < n && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? "," : "", v[i]);
    }
    fclose(f);
}

static void self_ticks(unsigned long long *ut, unsigned long long *st)
{
    *ut = *st = 0;
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return;
    char line[2048];
    if (fgets(line, sizeof line, f)) {
        char *p = strrchr(line, ')');
        /* after ")": state(3) ... utime is field 14, stime field 15 */
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", ut, st)
                     != 2)
            *ut = *st = 0;
    }
    fclose(f);
}

static void cpu_mark(int64_t t0, const char *mark)
{
    char stat[400];
    unsigned long long ut, st;
    read_proc_stat(stat, sizeof stat);
    self_ticks(&ut, &st);
    fprintf(out, "{\"event\":\"cpu\",\"t_ns\":%" PRId64 ",\"round\":%ld,\"stat\":[%s],"
            "\"self_ticks\":[%llu,%llu]%s%s%s}\n", now_ns() - t0, current_round, stat, ut, st,
            mark ? ",\"mark\":\"" : "", mark ? mark : "", mark ? "\"" : "");
}

static void cpu_sample(int64_t t0)
{
    cpu_mark(t0, NULL);
}

static void *sampler_main(void *arg)
{
    int64_t t0 = *(int64_t *)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!sampler_stop) {
        next.tv_nsec += opt.cpu_sample_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (!sampler_stop)
            cpu_sample(t0);
    }
    return NULL;
}

static void effective_options(int fd, char *buf, size_t len)
{
    int snd = 0, rcv = 0;
    socklen_t sl = sizeof snd;
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &sl);
    sl = sizeof rcv;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &sl);
    char cc[32] = "";
    if (opt.proto == P_TCP) {
        socklen_t cl = sizeof cc - 1;
        if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl))
            cc[0] = 0;
        else
            cc[cl < sizeof cc ? cl : sizeof cc - 1] = 0;
        cc[strcspn(cc, "\"")] = 0;
    }
    snprintf(buf, len, "\"sndbuf_effective\":%d,\"rcvbuf_effective\":%d,\"congestion\":\"%s\"",
             snd, rcv, cc);
}

static int cmd_reduce(void)
{
    int n = opt.ntargets;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    workers = calloc((size_t)n, sizeof *workers);
    if (!workers) {
        json_error("out of memory");
        return 3;
    }
    int64_t t_connect = now_ns();
    for (int i = 0; i < n; i++) {
        workers[i].index = i;
        workers[i].buf = malloc((size_t)opt.size);
        char err[200];
        workers[i].fd = connect_target(&opt.targets[i], err, sizeof err);
        if (workers[i].fd < 0 || !workers[i].buf) {
            json_error("%s", workers[i].buf ? err : "out of memory");
            return 3;
        }
        struct timeval tv = {(time_t)opt.round_timeout,
                             (suseconds_t)((opt.round_timeout - (time_t)opt.round_timeout) * 1e6)};
        setsockopt(workers[i].fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(workers[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    int64_t connect_ns = now_ns() - t_connect;
    char eff[160];
    effective_options(workers[0].fd, eff, sizeof eff);
    long ticks = sysconf(_SC_CLK_TCK);
    long total = opt.warmup + opt.rounds;
    fprintf(out, "{\"event\":\"start\",\"pid\":%d,\"proto\":\"%s\",\"n\":%d,\"size\":%ld,"
            "\"rounds\":%ld,\"warmup\":%ld,\"period_us\":%ld,\"sndbuf\":%d,\"rcvbuf\":%d,"
            "\"cc\":\"%s\",%s,\"connect_ns\":%" PRId64 ",\"clk_tck\":%ld,\"workers\":\"threads\","
            "\"clock\":\"CLOCK_MONOTONIC\"}\n",
            getpid(), proto_names[opt.proto], n, opt.size, opt.rounds, opt.warmup,
            opt.period_us, opt.sndbuf, opt.rcvbuf, opt.cc, eff, connect_ns, ticks);
    fflush(out);

    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    pthread_barrier_init(&finished, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
            json_error("cannot start worker thread %d", i);
            return 3;
        }
    int64_t t0 = now_ns();
    pthread_t sampler;
    int sampling = opt.cpu_sample_ms > 0;
    cpu_sample(t0);
    if (sampling && pthread_create(&sampler, NULL, sampler_main, &t0))
        sampling = 0;
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);

    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long overruns = 0, done_rounds = 0;
    int status = 0;
    uint64_t bytes_total = 0;
    int64_t measured_ns = 0;
    for (long r = 0; r < total && !stop_flag; r++) {
        int overrun = 0;
        if (opt.period_us > 0) {
            if (r > 0) {
                next.tv_nsec += opt.period_us * 1000L;
                next.tv_sec += next.tv_nsec / 1000000000L;
                next.tv_nsec %= 1000000000L;
            }
            int64_t target = (int64_t)next.tv_sec * 1000000000 + next.tv_nsec;
            if (now_ns() > target) {
                overrun = r > 0;
                overruns += overrun;
                clock_gettime(CLOCK_MONOTONIC, &next); /* restart the grid from now */
            } else {
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
            }
        }
        current_round = r;
        if (r == opt.warmup)
            cpu_mark(t0, "begin");
        int64_t start = now_ns();
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&finished);
        int64_t first = INT64_MAX, last = 0;
        for (int i = 0; i < n; i++) {
            if (workers[i].failed) {
                json_error("%s", workers[i].error);
                status = 3;
            }
            if (workers[i].done_ns < first)
                first = workers[i].done_ns;
            if (workers[i].done_ns > last)
                last = workers[i].done_ns;
        }
        if (status)
            break;
        int64_t dur = last - start;
        uint64_t bytes = (uint64_t)n * (uint64_t)opt.size;
        int warm = r < opt.warmup;
        if (!warm) {
            bytes_total += bytes;
            measured_ns += dur;
            done_rounds++;
        }
        fprintf(out, "{\"event\":\"round\",\"round\":%ld,\"warmup\":%s,\"start_ns\":%" PRId64
                ",\"duration_ns\":%" PRId64 ",\"first_ns\":%" PRId64 ",\"bytes\":%" PRIu64
                ",\"rate_mbit\":%.6f,\"overrun\":%s}\n",
                r, warm ? "true" : "false", start - t0, dur, first - start, bytes,
                dur > 0 ? bytes * 8.0 / (double)dur * 1e3 : 0.0, overrun ? "true" : "false");
    }
    if (status == 0 && !stop_flag && done_rounds > 0) {
        if (opt.period_us > 0) { /* the last round's period ends on the next grid point */
            next.tv_nsec += opt.period_us * 1000L;
            next.tv_sec += next.tv_nsec / 1000000000L;
            next.tv_nsec %= 1000000000L;
            if (now_ns() < (int64_t)next.tv_sec * 1000000000 + next.tv_nsec)
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        cpu_mark(t0, "end");
    }
    int64_t wall = now_ns() - t0;
    quit_workers = 1;
    /* release the workers: they are all waiting on `go` */
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].thread, NULL);
    if (sampling) {
        sampler_stop = 1;
        pthread_join(sampler, NULL);
    }
    cpu_sample(t0);
    struct rusage ru1;
    getrusage(RUSAGE_SELF, &ru1);
    double ut = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6;
    double st = (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    char ru[256];
    rusage_json(ru, sizeof ru);
    fprintf(out, "{\"event\":\"summary\",\"proto\":\"%s\",\"n\":%d,\"size\":%ld,"
            "\"rounds_done\":%ld,\"rounds_asked\":%ld,\"bytes\":%" PRIu64 ",\"measured_ns\":%" PRId64
            ",\"mean_rate_mbit\":%.3f,\"overruns\":%ld,\"wall_ns\":%" PRId64
            ",\"rounds_utime_s\":%.6f,\"rounds_stime_s\":%.6f,\"interrupted\":%s,\"ok\":%s,%s}\n",
            proto_names[opt.proto], n, opt.size, done_rounds, opt.rounds, bytes_total, measured_ns,
            measured_ns > 0 ? bytes_total * 8.0 / (double)measured_ns * 1e3 : 0.0, overruns, wall,
            ut, st, stop_flag ? "true" : "false",
            (status == 0 && !stop_flag && done_rounds == opt.rounds) ? "true" : "false", ru);
    fflush(out);
    for (int i = 0; i < n; i++)
        close(workers[i].fd);
    if (stop_flag && status == 0)
        status = 4;
    return status;
}

/* ------------------------------------------------------------------- main */

static void add_targets(char *list)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (opt.ntargets >= MAX_TARGETS)
            usage_error("at most %d targets", MAX_TARGETS);
        parse_address(tok, &opt.targets[opt.ntargets++]);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "serve") && strcmp(argv[1], "reduce")))
        usage_error("first argument must be 'serve' or 'reduce'");
    int serve = !strcmp(argv[1], "serve");
    char *targets = NULL;
    /* --proto first: addresses are parsed per protocol */
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--proto")) {
            const char *p = argv[i + 1];
            if (!strcmp(p, "tcp"))
                opt.proto = P_TCP;
            else if (!strcmp(p, "sctp"))
                opt.proto = P_SCTP;
            else if (!strcmp(p, "tipc"))
                opt.proto = P_TIPC;
            else
                usage_error("--proto must be tcp, sctp or tipc, got '%s'", p);
            opt.proto_set = 1;
        }
    if (!opt.proto_set)
        usage_error("--proto is required");
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (i + 1 >= argc)
            usage_error("option %s needs a value", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--proto"))
            continue;
        else if (!strcmp(k, "--listen") && serve)
            snprintf(opt.listen, sizeof opt.listen, "%s", v);
        else if (!strcmp(k, "--targets") && !serve)
            targets = strdup(v);
        else if (!strcmp(k, "--size") && !serve)
            opt.size = parse_long(v, "--size", MIN_SIZE, MAX_SIZE);
        else if (!strcmp(k, "--rounds") && !serve)
            opt.rounds = parse_long(v, "--rounds", 1, 100000000);
        else if (!strcmp(k, "--warmup") && !serve)
            opt.warmup = parse_long(v, "--warmup", 0, 1000000);
        else if (!strcmp(k, "--period-us") && !serve)
            opt.period_us = parse_long(v, "--period-us", 0, 3600000000L);
        else if (!strcmp(k, "--cpu-sample-ms") && !serve)
            opt.cpu_sample_ms = parse_long(v, "--cpu-sample-ms", 0, 3600000);
        else if (!strcmp(k, "--out") && !serve)
            opt.out = v;
        else if (!strcmp(k, "--sndbuf"))
            opt.sndbuf = (int)parse_long(v, "--sndbuf", 0, INT_MAX / 2);
        else if (!strcmp(k, "--rcvbuf"))
            opt.rcvbuf = (int)parse_long(v, "--rcvbuf", 0, INT_MAX / 2);
        else if (!strcmp(k, "--cc")) {
            if (strlen(v) >= sizeof opt.cc || strchr(v, '"'))
                usage_error("--cc name too long");
            snprintf(opt.cc, sizeof opt.cc, "%s", v);
        } else if (!strcmp(k, "--connect-timeout") && !serve)
            opt.connect_timeout = parse_double(v, "--connect-timeout", 0, 86400);
        else if (!strcmp(k, "--round-timeout") && !serve)
            opt.round_timeout = parse_double(v, "--round-timeout", 0.001, 86400);
        else
            usage_error("unknown option %s for %s", k, argv[1]);
    }
    if (opt.cc[0] && opt.proto != P_TCP)
        usage_error("--cc applies to tcp only");
    build_pattern();
    if (serve) {
        if (!opt.listen[0])
            usage_error("serve needs --listen");
        return cmd_serve();
    }
    if (!targets)
        usage_error("reduce needs --targets");
    add_targets(targets);
    free(targets);
    if (opt.ntargets == 0)
        usage_error("--targets is empty");
    out = stdout;
    if (opt.out && !(out = fopen(opt.out, "w"))) {
        out = stdout;
        json_error("cannot write %s: %s", opt.out, strerror(errno));
        return 3;
    }
    int status = cmd_reduce();
    if (out != stdout)
        fclose(out);
    return status;
}
