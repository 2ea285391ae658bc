/*
 * srd -- Stream Relay Daemon (study S0: NAT + user-space relay).
 *
 * Accepts TCP connections on one address and relays each, byte for byte, to
 * one target (host:port).  One thread, one epoll set (edge-triggered), and per
 * stream two kernel pipes (one per direction): bulk data moves socket -> pipe
 * -> socket with splice(2), so it is never copied into user space; small
 * messages take a recv/send shortcut that costs fewer system calls.
 *
 * Why this shape (measured on the study machine, see benchmarks/relay_bench.py):
 * a copying relay (socat -b 262144) reached ~6.5 Gbit/s, Python asyncio 3.0
 * and Python splice 3.8; a C splice relay avoids both the copies and the
 * interpreter.
 *
 * Behaviour the harness relies on:
 *   - TCP_NODELAY on every socket (Nagle + delayed ACK would stall small
 *     messages); SPLICE_F_MORE is never used (it corks the socket).
 *   - TCP_NOTSENT_LOWAT (--notsent-lowat BYTES): when given, caps the bytes
 *     waiting unsent in each socket (a splice into it stops there, EPOLLOUT
 *     returns below it).  Default 0 since srd 1.3: the kernel's, as every peer
 *     relay leaves it.  srd 1.1-1.2 capped it at 128 KiB for the sender's
 *     retransmits (at load 1-7: 18k-125k per 5 s test without, 1.8k-20k with
 *     it).  The cap makes the socket send each segment from srd's own splice
 *     (perf: tcp_write_xmit 58 % of srd's samples at 128 KiB, 36 % at 0, 31 %
 *     in Go's relay) instead of from ACK processing in softirq, so srd paid
 *     for transmitting what peers leave to the kernel: side by side, 5 runs,
 *     srd's CPU per GB without the cap was 0.75x (one relay) and 0.72x (two)
 *     of the cap's, throughput and the host's CPU per GB no worse, the
 *     (spurious) retransmits about 2x (benchmarks/relay_bench.py's notes).
 *   - Half-close: EOF from one side becomes shutdown(SHUT_WR) on the other,
 *     once everything read before it has been delivered; the other direction
 *     keeps flowing.  The stream ends when both directions have ended.
 *   - Resets: an error on one side (ECONNRESET, EPIPE, ...) aborts the other
 *     side with an RST (SO_LINGER 0), as a NAT box would pass the RST on.
 *   - Bounded memory: at most one pipe (--pipe-size) per direction is in
 *     flight inside the relay; reading stops while the pipe is full, so TCP
 *     flow control pushes back on the sender.
 *   - Target that refuses or does not answer within --connect-timeout: the
 *     client connection is closed and an event is logged.
 *   - Silent connections cannot shut the study's streams out: a stream with
 *     no event on either socket (no byte, no ACK that freed room, no FIN) for
 *     --idle-timeout seconds (default 900, above the
 *     longest iperf3 test the harness runs, whose control connection is
 *     silent meanwhile) is closed (event=close reason=idle), and one client
 *     address holds at most --max-per-peer streams (default 256) of the
 *     --max-streams: more from it are refused (event=reject
 *     reason=max-per-peer), so a flood from one address leaves room for the
 *     others.
 *   - SIGTERM/SIGINT: the listener closes at once; open streams may finish for
 *     up to --drain seconds (default 0), then are cut; exit status 0.  A
 *     second signal cuts at once.
 *   - Listen address in use / bad arguments: a one-line error on stderr and
 *     exit status 1 (runtime) or 2 (usage) before anything is accepted.
 *   - Log: one line per event, "TIME srd[PID]: event=NAME key=value ...", to
 *     stderr or --log FILE (appended).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define SRD_VERSION "1.3"
#define MAX_EVENTS 256
#define ACCEPT_BATCH 64
#define FDS_PER_STREAM 6
#define ADDR_TEXT 64
#define NOTSENT_LOWAT_DEFAULT 0 /* the kernel's (net.ipv4.tcp_notsent_lowat) */

/* ------------------------------------------------------------------ config */

struct config {
    char listen_text[300];
    char target_text[300];
    struct sockaddr_storage listen_addr;
    socklen_t listen_len;
    struct sockaddr_storage target_addr;
    socklen_t target_len;
    const char *log_path;
    long pipe_size;
    double connect_timeout;
    double drain;
    long max_streams;
    long notsent_lowat; /* TCP_NOTSENT_LOWAT on both stream sockets; 0: leave the kernel's */
    double idle_timeout; /* a stream that moved nothing for this long is closed */
    long max_per_peer;   /* streams one client address may hold at once */
};

static struct config cfg = {
    .pipe_size = 1 << 20,
    .connect_timeout = 5.0,
    .drain = 0.0,
    .max_streams = 1024,
    .notsent_lowat = NOTSENT_LOWAT_DEFAULT,
    .idle_timeout = 900.0,
    .max_per_peer = 256,
};

/* ------------------------------------------------------------------ logging */

static int log_fd = 2;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line_both(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void log_vline(int fd, const char *fmt, va_list ap);

static void log_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vline(log_fd, fmt, ap);
    va_end(ap);
}

/* Start and exit lines go to stderr too, so a supervisor sees them even with --log FILE. */
static void log_line_both(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vline(log_fd, fmt, ap);
    va_end(ap);
    if (log_fd != 2) {
        va_start(ap, fmt);
        log_vline(2, fmt, ap);
        va_end(ap);
    }
}

static void log_vline(int fd, const char *fmt, va_list ap)
{
    char buf[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(buf + n, sizeof buf - (size_t)n, ".%06ldZ srd[%d]: ", ts.tv_nsec / 1000,
                  (int)getpid());
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    n += m;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* One write per line: lines from concurrent writers stay whole. */
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += w;
    }
}

/* Fatal start-up error: always on stderr (the wrapper reads it), also in the log file. */
static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void die(int status, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "srd: error: %s\n", msg);
    if (log_fd != 2)
        log_line("event=error fatal=1 message=\"%s\"", msg);
    exit(status);
}

/* ------------------------------------------------------------------ helpers */

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void addr_text(const struct sockaddr *sa, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, len, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, len, "[%s]:%d", host, port);
    } else {
        snprintf(out, len, "?");
    }
}

static void set_notsent_lowat(int fd)
{
    int v = (int)cfg.notsent_lowat;
    if (v > 0 && setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof v) < 0)
        log_line("event=error where=setsockopt option=TCP_NOTSENT_LOWAT error=\"%s\"",
                 strerror(errno));
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Abort a connection: close with an RST instead of a FIN. */
static void close_with_rst(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

/*
 * Split "host:port" or "[v6addr]:port".  The port must be a plain decimal in
 * 1..65535.  Returns 0 on success, or writes a reason into err.
 */
static int split_hostport(const char *text, char *host, size_t hostlen, int *port, char *err,
                          size_t errlen)
{
    const char *colon;
    size_t hl;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') {
            snprintf(err, errlen, "expected [IPv6]:PORT, got '%s'", text);
            return -1;
        }
        hl = (size_t)(close - text - 1);
        if (hl == 0 || hl >= hostlen) {
            snprintf(err, errlen, "bad IPv6 address in '%s'", text);
            return -1;
        }
        memcpy(host, text + 1, hl);
        host[hl] = 0;
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon) {
            snprintf(err, errlen, "expected HOST:PORT, got '%s' (no ':')", text);
            return -1;
        }
        if (memchr(text, ':', (size_t)(colon - text))) {
            snprintf(err, errlen, "IPv6 addresses need brackets: [ADDR]:PORT, got '%s'", text);
            return -1;
        }
        hl = (size_t)(colon - text);
        if (hl == 0 || hl >= hostlen) {
            snprintf(err, errlen, "empty or too long host in '%s'", text);
            return -1;
        }
        memcpy(host, text, hl);
        host[hl] = 0;
    }
    const char *p = colon + 1;
    if (*p == 0 || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p)) {
        snprintf(err, errlen, "port must be a number 1..65535, got '%s'", p);
        return -1;
    }
    long v = strtol(p, NULL, 10);
    if (v < 1 || v > 65535) {
        snprintf(err, errlen, "port must be a number 1..65535, got '%s'", p);
        return -1;
    }
    *port = (int)v;
    return 0;
}

static void resolve(const char *what, const char *text, int numeric_only,
                    struct sockaddr_storage *out, socklen_t *outlen)
{
    char host[256], err[400], portstr[8];
    int port;
    if (split_hostport(text, host, sizeof host, &port, err, sizeof err) < 0)
        die(2, "--%s: %s", what, err);
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (numeric_only)
        hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || !res)
        die(2, "--%s: cannot resolve '%s': %s%s", what, host, gai_strerror(rc),
            numeric_only ? " (the listen address must be a numeric IP address)" : "");
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *outlen = res->ai_addrlen;
    freeaddrinfo(res);
}

static double parse_seconds(const char *opt, const char *s, double min)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < min || v > 86400)
        die(2, "--%s: expected seconds >= %g, got '%s'", opt, min, s);
    return v;
}

static long parse_long(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        die(2, "--%s: expected an integer in %ld..%ld, got '%s'", opt, min, max, s);
    return v;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: srd --listen ADDR:PORT --target HOST:PORT [options]\n"
            "  -l, --listen ADDR:PORT       numeric address to accept on ([::]:PORT for IPv6)\n"
            "  -t, --target HOST:PORT       where each accepted stream is relayed\n"
            "      --log FILE               append event lines to FILE (default: stderr)\n"
            "      --pipe-size BYTES        in-flight bytes per direction (default 1048576)\n"
            "      --connect-timeout SEC    give up on a silent target (default 5)\n"
            "      --max-streams N          concurrent streams; more are refused (default 1024)\n"
            "      --max-per-peer N         concurrent streams from one client address (default 256)\n"
            "      --idle-timeout SEC       close a stream that moved nothing this long (default 900)\n"
            "      --drain SEC              on SIGTERM let streams finish this long (default 0)\n"
            "      --notsent-lowat BYTES    most unsent bytes queued in a socket (default 0;\n"
            "                               0 leaves the kernel's, net.ipv4.tcp_notsent_lowat)\n"

            "      --version                print the version\n");
}

static void parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, 0, 'l'},
        {"target", required_argument, 0, 't'},
        {"log", required_argument, 0, 'L'},
        {"pipe-size", required_argument, 0, 'p'},
        {"connect-timeout", required_argument, 0, 'c'},
        {"max-streams", required_argument, 0, 'm'},
        {"drain", required_argument, 0, 'd'},
        {"notsent-lowat", required_argument, 0, 'N'},
        {"idle-timeout", required_argument, 0, 'I'},
        {"max-per-peer", required_argument, 0, 'P'},
        {"version", no_argument, 0, 'V'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *listen_s = NULL, *target_s = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen_s = optarg; break;
        case 't': target_s = optarg; break;
        case 'L': cfg.log_path = optarg; break;
        case 'p': cfg.pipe_size = parse_long("pipe-size", optarg, 4096, 1L << 30); break;
        case 'c': cfg.connect_timeout = parse_seconds("connect-timeout", optarg, 0.001); break;
        case 'm': cfg.max_streams = parse_long("max-streams", optarg, 1, 1000000); break;
        case 'd': cfg.drain = parse_seconds("drain", optarg, 0); break;
        case 'N': cfg.notsent_lowat = parse_long("notsent-lowat", optarg, 0, 1L << 30); break;
        case 'I': cfg.idle_timeout = parse_seconds("idle-timeout", optarg, 0.001); break;
        case 'P': cfg.max_per_peer = parse_long("max-per-peer", optarg, 1, 1000000); break;
        case 'V': printf("srd %s\n", SRD_VERSION); exit(0);
        case 'h': usage(stdout); exit(0);
        case ':': die(2, "option %s needs a value", argv[optind - 1]);
        default: die(2, "unknown option '%s' (see srd --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die(2, "unexpected argument '%s' (see srd --help)", argv[optind]);
    if (!listen_s || !target_s)
        die(2, "both --listen ADDR:PORT and --target HOST:PORT are required (see srd --help)");
    snprintf(cfg.listen_text, sizeof cfg.listen_text, "%s", listen_s);
    snprintf(cfg.target_text, sizeof cfg.target_text, "%s", target_s);
    resolve("listen", listen_s, 1, &cfg.listen_addr, &cfg.listen_len);
    resolve("target", target_s, 0, &cfg.target_addr, &cfg.target_len);
}

/* ------------------------------------------------------------------ streams */

enum tag_kind { TAG_LISTEN, TAG_SIGNAL, TAG_CLIENT, TAG_TARGET };

struct tag {
    enum tag_kind kind;
    struct stream *stream;
};

/* One direction of a stream: src socket -> pipe -> dst socket. */
struct dir {
    int pr, pw;       /* pipe read / write ends */
    size_t cap;       /* pipe capacity granted by the kernel */
    size_t inpipe;    /* bytes sitting in the pipe */
    uint64_t bytes;   /* bytes delivered to dst */
    int eof;          /* src said EOF */
    int shut;         /* EOF passed on as shutdown(dst, SHUT_WR) */
    int copy;         /* small-message mode: recv/send instead of splice */
    int blocked;      /* the last write to dst answered EAGAIN with bytes still in the pipe */
};

enum stream_state { ST_CONNECTING, ST_RELAYING, ST_DEAD };

struct stream {
    uint64_t id;
    enum stream_state state;
    int cfd, tfd;
    struct dir c2s, s2c;
    struct tag ctag, ttag;
    uint32_t cev, tev; /* the epoll interest registered for cfd / tfd */
    double started, deadline;
    double last_active; /* the last event on either socket (monotonic) */
    int peer_family;    /* the client's address, for --max-per-peer */
    unsigned char peer[16];
    char client[ADDR_TEXT];
    struct stream *prev, *next; /* all live streams, oldest first */
    struct stream *dead_next;
};

static int epfd = -1;
static int listen_fd = -1;
static size_t pipe_bytes; /* pipe capacity asked for (--pipe-size) */
static struct stream *live_head, *live_tail, *dead_list;
static long n_live, n_connecting;
static uint64_t next_id = 1, n_served;
static int stopping;       /* a signal arrived */
static double drain_until; /* monotonic deadline for open streams after a signal */
static double listen_paused_until;
static double loop_now;         /* monotonic time of the current epoll batch */
static double next_idle_check;  /* when idle streams are looked for next */
static struct tag listen_tag = {TAG_LISTEN, NULL};

static void live_append(struct stream *s)
{
    s->prev = live_tail;
    s->next = NULL;
    if (live_tail)
        live_tail->next = s;
    else
        live_head = s;
    live_tail = s;
    n_live++;
}

static void live_remove(struct stream *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        live_head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        live_tail = s->prev;
    n_live--;
}

static void close_pipe(struct dir *d)
{
    if (d->pr >= 0)
        close(d->pr);
    if (d->pw >= 0)
        close(d->pw);
    d->pr = d->pw = -1;
}

/*
 * End a stream.  reason: "eof" (both directions finished), "reset" (``side``
 * failed with ``err``; abort the other side with an RST), "shutdown" (cut by a
 * signal), "target-failed", "idle" (nothing moved for --idle-timeout), "error".
 * The struct is freed only after the current epoll batch (events for it may
 * still be queued there).
 */
static void stream_end(struct stream *s, const char *reason, const char *side, int err)
{
    if (s->state == ST_DEAD)
        return;
    int reset_client = 0, reset_target = 0;
    if (!strcmp(reason, "reset")) {
        /* The side that failed is already gone; abort the other one. */
        reset_client = strcmp(side, "client") != 0;
        reset_target = strcmp(side, "target") != 0;
    }
    if (reset_client)
        close_with_rst(s->cfd);
    else
        close(s->cfd);
    if (reset_target)
        close_with_rst(s->tfd);
    else
        close(s->tfd);
    close_pipe(&s->c2s);
    close_pipe(&s->s2c);
    double dur = now_mono() - s->started;
    if (err)
        log_line("event=close id=%llu client=%s reason=%s side=%s error=\"%s\" c2s=%llu s2c=%llu "
                 "c2s_pending=%zu s2c_pending=%zu duration=%.6f",
                 (unsigned long long)s->id, s->client, reason, side, strerror(err),
                 (unsigned long long)s->c2s.bytes, (unsigned long long)s->s2c.bytes,
                 s->c2s.inpipe, s->s2c.inpipe, dur);
    else
        log_line("event=close id=%llu client=%s reason=%s c2s=%llu s2c=%llu duration=%.6f",
                 (unsigned long long)s->id, s->client, reason, (unsigned long long)s->c2s.bytes,
                 (unsigned long long)s->s2c.bytes, dur);
    if (s->state == ST_CONNECTING)
        n_connecting--;
    s->state = ST_DEAD;
    live_remove(s);
    s->dead_next = dead_list;
    dead_list = s;
}

static void free_dead(void)
{
    while (dead_list) {
        struct stream *s = dead_list;
        dead_list = s->dead_next;
        free(s);
    }
}

/*
 * Small messages are copied (recv + send through a stack buffer) rather than
 * spliced: for a few bytes two plain syscalls are cheaper than splicing in and
 * out of a pipe, and a short recv proves the socket is drained, which saves
 * the extra read that would otherwise be needed to see EAGAIN.  A read that
 * fills the buffer means bulk data: the direction switches to splice until a
 * splice read comes back small again.  Copying happens only while the pipe is
 * empty, so the byte order is kept.
 */
#define COPY_MAX 16384
#define SMALL_READ 4096

/*
 * Move bytes src -> dst until the kernel says "wait" on the side that limits
 * progress (EAGAIN on src with an empty pipe, or EAGAIN on dst), which
 * edge-triggered epoll will report again.  rdhup: the event said the peer
 * closed, so reading must go on until EOF.  Returns 0, or -1 with side and
 * err set when a socket failed.
 */
static int pump(struct dir *d, int src, int dst, int rdhup, const char *src_name,
                const char *dst_name, const char **side, int *err)
{
    for (;;) {
        int progress = 0;
        if (!d->eof && d->inpipe == 0 && d->copy) {
            char buf[COPY_MAX];
            size_t want = d->cap < COPY_MAX ? d->cap : COPY_MAX;
            ssize_t n = recv(src, buf, want, MSG_DONTWAIT);
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                *side = src_name;
                *err = errno;
                return -1;
            }
            if (n == 0) {
                d->eof = 1;
                progress = 1;
            } else if (n > 0) {
                ssize_t w = send(dst, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0 && errno != EAGAIN && errno != EINTR) {
                    *side = dst_name;
                    *err = errno;
                    return -1;
                }
                if (w < 0)
                    w = 0;
                d->bytes += (uint64_t)w;
                if (w < n) {
                    /* dst is full: park the rest in the (empty, big enough) pipe, in order. */
                    d->blocked = 1;
                    ssize_t p = write(d->pw, buf + w, (size_t)(n - w));
                    if (p != n - w) {
                        *side = "relay";
                        *err = p < 0 ? errno : EIO;
                        return -1;
                    }
                    d->inpipe += (size_t)p;
                }
                if ((size_t)n == want)
                    d->copy = 0; /* more is waiting: bulk, splice from now on */
                else if (!rdhup && d->inpipe == 0)
                    return 0;    /* drained; new data or a FIN will raise a new edge */
                progress = 1;
            }
        } else if (!d->eof && d->inpipe < d->cap) {
            /* A full pipe (also one full of partly filled pages) answers EAGAIN too. */
            ssize_t n = splice(src, NULL, d->pw, NULL, d->cap - d->inpipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->inpipe += (size_t)n;
                if (n <= SMALL_READ)
                    d->copy = 1;
                progress = 1;
            } else if (n == 0) {
                d->eof = 1;
                progress = 1;
            } else if (errno == EINTR) {
                progress = 1;
            } else if (errno != EAGAIN) {
                *side = src_name;
                *err = errno;
                return -1;
            }
        }
        d->blocked = 0;
        if (d->inpipe > 0) {
            ssize_t n = splice(d->pr, NULL, dst, NULL, d->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->inpipe -= (size_t)n;
                d->bytes += (uint64_t)n;
                progress = 1;
            } else if (n < 0 && errno == EINTR) {
                progress = 1;
            } else if (n < 0 && errno != EAGAIN) {
                *side = dst_name;
                *err = errno;
                return -1;
            } else if (n < 0) {
                d->blocked = 1;
            }
        }
        if (d->eof && d->inpipe == 0 && !d->shut) {
            d->shut = 1;
            if (shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN) {
                *side = dst_name;
                *err = errno;
                return -1;
            }
        }
        if (!progress)
            return 0;
    }
}

static int socket_error(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return errno;
    return err;
}

/*
 * The epoll interest a socket needs: always EPOLLOUT (edge: room to write what a pipe
 * holds), and EPOLLIN | EPOLLRDHUP only while the direction that reads it can take more.
 * A direction whose pipe cannot drain (dst answered EAGAIN) stops listening to its src:
 * with an edge-triggered EPOLLIN every segment that arrives meanwhile would wake the
 * relay for nothing.  Measured with the benchmark's iperf3 through srd 1.0 (strace, 0.3 s):
 * 454 wake-ups, most of them ending in one splice and one recv that both answered EAGAIN.
 * When the pipe drains again, EPOLL_CTL_MOD re-polls the socket and reports data that
 * arrived while it was paused, so nothing is missed.
 */
static uint32_t wanted_events(const struct dir *reads)
{
    uint32_t ev = EPOLLOUT | EPOLLET;
    if (!reads->eof && !reads->blocked)
        ev |= EPOLLIN | EPOLLRDHUP;
    return ev;
}

static void set_interest(int fd, uint32_t *have, uint32_t want, struct tag *tag)
{
    if (*have == want)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = tag};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        log_line("event=error where=epoll_ctl error=\"%s\"", strerror(errno));
    else
        *have = want;
}

static void update_interest(struct stream *s)
{
    set_interest(s->cfd, &s->cev, wanted_events(&s->c2s), &s->ctag);
    set_interest(s->tfd, &s->tev, wanted_events(&s->s2c), &s->ttag);
}

static void stream_relay_event(struct stream *s, int is_client, uint32_t ev)
{
    const char *side = NULL;
    int err = 0;
    int fd = is_client ? s->cfd : s->tfd;
    s->last_active = loop_now;
    if (ev & EPOLLERR) {
        err = socket_error(fd);
        if (err) {
            stream_end(s, "reset", is_client ? "client" : "target", err);
            return;
        }
    }
    /* Readable: pump the direction that reads this socket; writable: the one that writes
       it, if its pipe holds anything (else the write edge brings nothing to do). */
    int in = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    int out = (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
    int do_c2s = is_client ? in : out && (s->c2s.inpipe > 0 || s->c2s.blocked);
    int do_s2c = is_client ? out && (s->s2c.inpipe > 0 || s->s2c.blocked) : in;
    if (ev & (EPOLLHUP | EPOLLERR))
        do_c2s = do_s2c = 1;
    int rdhup = (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    if (do_c2s && pump(&s->c2s, s->cfd, s->tfd, is_client ? rdhup : 1, "client", "target",
                       &side, &err) < 0) {
        stream_end(s, "reset", side, err);
        return;
    }
    if (do_s2c && pump(&s->s2c, s->tfd, s->cfd, is_client ? 1 : rdhup, "target", "client",
                       &side, &err) < 0) {
        stream_end(s, "reset", side, err);
        return;
    }
    if (s->c2s.shut && s->s2c.shut) {
        stream_end(s, "eof", NULL, 0);
        return;
    }
    update_interest(s);
}

/* Close the client politely: discard what it sent so close() sends FIN, not RST. */
static void target_failed(struct stream *s, int err)
{
    char sink[16384];
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(s->cfd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0)
            break;
    }
    log_line("event=target-failed id=%llu client=%s target=%s error=\"%s\"",
             (unsigned long long)s->id, s->client, cfg.target_text, strerror(err));
    stream_end(s, "target-failed", NULL, 0);
}

static void stream_connected(struct stream *s)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof local;
    char localtext[ADDR_TEXT] = "?";
    if (getsockname(s->tfd, (struct sockaddr *)&local, &len) == 0)
        addr_text((struct sockaddr *)&local, localtext, sizeof localtext);
    s->state = ST_RELAYING;
    n_connecting--;
    log_line("event=connected id=%llu client=%s via=%s target=%s setup=%.6f",
             (unsigned long long)s->id, s->client, localtext, cfg.target_text,
             now_mono() - s->started);
    /* Data (and maybe a FIN) the client sent while we connected is waiting and its
       edges are spent: pump as if RDHUP had been reported, i.e. read to EAGAIN or EOF. */
    stream_relay_event(s, 1, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
    if (s->state != ST_DEAD)
        stream_relay_event(s, 0, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
}

static void stream_target_event(struct stream *s, uint32_t ev)
{
    if (s->state == ST_CONNECTING) {
        int err = socket_error(s->tfd);
        if (err) {
            target_failed(s, err);
            return;
        }
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        stream_connected(s);
        return;
    }
    stream_relay_event(s, 0, ev);
}

static int make_pipe(struct dir *d)
{
    int p[2];
    d->pr = d->pw = -1;
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    d->pr = p[0];
    d->pw = p[1];
    d->copy = 1;
    /* Over the per-user pipe quota (fs.pipe-user-pages-soft) this fails: the pipe keeps
       the size it got, which is smaller and still a bound. */
    fcntl(d->pw, F_SETPIPE_SZ, (int)pipe_bytes);
    long got = fcntl(d->pw, F_GETPIPE_SZ);
    d->cap = got > 0 ? (size_t)got : 4096;
    return 0;
}

static void epoll_add(int fd, uint32_t events, struct tag *tag)
{
    struct epoll_event ev = {.events = events, .data.ptr = tag};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        log_line("event=error where=epoll_ctl error=\"%s\"", strerror(errno));
}

/* The client's address as bytes (port left out): streams from one address count together. */
static int peer_key(const struct sockaddr_storage *sa, unsigned char out[16])
{
    memset(out, 0, 16);
    if (sa->ss_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->ss_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
    return sa->ss_family;
}

/* Live streams from the client address of ``sa`` (counting stops at ``enough``). */
static long streams_from(const struct sockaddr_storage *sa, long enough)
{
    unsigned char key[16];
    int family = peer_key(sa, key);
    long n = 0;
    for (struct stream *s = live_head; s && n < enough; s = s->next)
        if (s->peer_family == family && !memcmp(s->peer, key, sizeof key))
            n++;
    return n;
}

static void accept_one(int cfd, struct sockaddr_storage *peer)
{
    struct stream *s = calloc(1, sizeof *s);
    char client[ADDR_TEXT];
    addr_text((struct sockaddr *)peer, client, sizeof client);
    if (!s) {
        log_line("event=reject client=%s reason=out-of-memory", client);
        close(cfd);
        return;
    }
    s->id = next_id++;
    s->cfd = cfd;
    s->tfd = -1;
    s->started = now_mono();
    s->deadline = s->started + cfg.connect_timeout;
    s->last_active = s->started;
    s->peer_family = peer_key(peer, s->peer);
    snprintf(s->client, sizeof s->client, "%s", client);
    s->ctag = (struct tag){TAG_CLIENT, s};
    s->ttag = (struct tag){TAG_TARGET, s};
    set_nodelay(cfd);
    set_notsent_lowat(cfd);
    if (make_pipe(&s->c2s) < 0 || make_pipe(&s->s2c) < 0) {
        log_line("event=reject id=%llu client=%s reason=pipe error=\"%s\"",
                 (unsigned long long)s->id, client, strerror(errno));
        close_pipe(&s->c2s);
        close_pipe(&s->s2c);
        close(cfd);
        free(s);
        return;
    }
    s->tfd = socket(cfg.target_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->tfd < 0) {
        log_line("event=reject id=%llu client=%s reason=socket error=\"%s\"",
                 (unsigned long long)s->id, client, strerror(errno));
        close_pipe(&s->c2s);
        close_pipe(&s->s2c);
        close(cfd);
        free(s);
        return;
    }
    set_nodelay(s->tfd);
    set_notsent_lowat(s->tfd);
    s->state = ST_CONNECTING;
    n_connecting++;
    live_append(s);
    n_served++;
    log_line("event=accept id=%llu client=%s", (unsigned long long)s->id, client);
    int rc = connect(s->tfd, (struct sockaddr *)&cfg.target_addr, cfg.target_len);
    if (rc < 0 && errno != EINPROGRESS) {
        target_failed(s, errno);
        return;
    }
    uint32_t events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    s->cev = s->tev = events;
    epoll_add(cfd, events, &s->ctag);
    epoll_add(s->tfd, events, &s->ttag);
    if (rc == 0)
        stream_connected(s);
}

static void set_listener_events(uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = &listen_tag};
    epoll_ctl(epfd, EPOLL_CTL_MOD, listen_fd, &ev);
}

static void accept_ready(void)
{
    for (int i = 0; i < ACCEPT_BATCH && listen_fd >= 0; i++) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        int cfd = accept4(listen_fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors/memory: stop accepting for a moment instead of spinning. */
                log_line("event=error where=accept error=\"%s\" action=pause-100ms",
                         strerror(errno));
                set_listener_events(0);
                listen_paused_until = now_mono() + 0.1;
                return;
            }
            continue; /* ECONNABORTED, EPROTO, ...: that client is gone; take the next */
        }
        if (n_live >= cfg.max_streams) {
            char client[ADDR_TEXT];
            addr_text((struct sockaddr *)&peer, client, sizeof client);
            log_line("event=reject client=%s reason=max-streams limit=%ld", client,
                     cfg.max_streams);
            close(cfd);
            continue;
        }
        if (streams_from(&peer, cfg.max_per_peer) >= cfg.max_per_peer) {
            char client[ADDR_TEXT];
            addr_text((struct sockaddr *)&peer, client, sizeof client);
            log_line("event=reject client=%s reason=max-per-peer limit=%ld", client,
                     cfg.max_per_peer);
            close(cfd);
            continue;
        }
        accept_one(cfd, &peer);
    }
}

static void close_listener(void)
{
    if (listen_fd >= 0) {
        close(listen_fd);
        listen_fd = -1;
    }
}

static void cut_all(const char *reason)
{
    while (live_head)
        stream_end(live_head, reason, NULL, 0);
}

static void expire_connects(double now)
{
    /* Streams are appended in accept order with one fixed timeout: the oldest expire first. */
    if (n_connecting == 0)
        return;
    struct stream *s = live_head;
    while (s) {
        struct stream *next = s->next;
        if (s->state == ST_CONNECTING && s->deadline <= now)
            target_failed(s, ETIMEDOUT);
        s = next;
    }
}

/* How often idle streams are looked for: a stream is closed between --idle-timeout and
   --idle-timeout plus this after its last event. One pass over the live streams. */
static double idle_check_interval(void)
{
    return cfg.idle_timeout / 4 < 1.0 ? cfg.idle_timeout / 4 : 1.0;
}

static void expire_idle(double now)
{
    if (now < next_idle_check)
        return;
    next_idle_check = now + idle_check_interval();
    struct stream *s = live_head;
    while (s) {
        struct stream *next = s->next;
        if (s->state == ST_RELAYING && now - s->last_active >= cfg.idle_timeout)
            stream_end(s, "idle", NULL, 0);
        s = next;
    }
}

static int next_timeout_ms(double now)
{
    double wake = -1;
    if (n_live > n_connecting) /* streams that may fall idle */
        wake = next_idle_check;
    for (struct stream *s = n_connecting ? live_head : NULL; s; s = s->next) {
        if (s->state == ST_CONNECTING) {
            if (wake < 0 || s->deadline < wake)
                wake = s->deadline;
            break;
        }
    }
    if (listen_paused_until > 0 && (wake < 0 || listen_paused_until < wake))
        wake = listen_paused_until;
    if (stopping && (wake < 0 || drain_until < wake))
        wake = drain_until;
    if (wake < 0)
        return -1;
    double ms = (wake - now) * 1000.0 + 1.0;
    if (ms < 0)
        return 0;
    if (ms > 60000)
        return 60000;
    return (int)ms;
}

static void handle_signal(int sfd)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        const char *name = si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
        if (!stopping) {
            stopping = 1;
            close_listener();
            drain_until = now_mono() + cfg.drain;
            log_line("event=stopping signal=%s open_streams=%ld drain=%.3f", name, n_live,
                     cfg.drain);
        } else {
            log_line("event=stopping signal=%s again=1 action=cut", name);
            drain_until = now_mono();
        }
    }
}

/* ------------------------------------------------------------------ main */

static void open_listener(void)
{
    int fd = socket(cfg.listen_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die(1, "cannot create a socket for %s: %s", cfg.listen_text, strerror(errno));
    int one = 1;
    /* SO_REUSEADDR only skips TIME_WAIT leftovers; a live listener still gives EADDRINUSE. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    set_nodelay(fd);
    if (bind(fd, (struct sockaddr *)&cfg.listen_addr, cfg.listen_len) < 0) {
        int e = errno;
        if (e == EADDRINUSE)
            die(1, "cannot listen on %s: %s: another process already listens on this port "
                   "(pick another port, or stop that process; `ss -ltnp` shows it)",
                cfg.listen_text, strerror(e));
        if (e == EADDRNOTAVAIL)
            die(1, "cannot listen on %s: %s: no interface of this host/namespace has that "
                   "address", cfg.listen_text, strerror(e));
        if (e == EACCES)
            die(1, "cannot listen on %s: %s: ports below 1024 need root or "
                   "CAP_NET_BIND_SERVICE", cfg.listen_text, strerror(e));
        die(1, "cannot listen on %s: %s", cfg.listen_text, strerror(e));
    }
    if (listen(fd, 4096) < 0)
        die(1, "cannot listen on %s: %s", cfg.listen_text, strerror(errno));
    listen_fd = fd;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        long fit = ((long)rl.rlim_cur - 32) / FDS_PER_STREAM;
        if (rl.rlim_cur != RLIM_INFINITY && fit < cfg.max_streams) {
            if (fit < 1)
                die(1, "the open-file limit (%ld) is too low; raise it with `ulimit -n`",
                    (long)rl.rlim_cur);
            cfg.max_streams = fit;
        }
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    if (cfg.log_path) {
        int fd = open(cfg.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            die(1, "cannot open log file %s: %s", cfg.log_path, strerror(errno));
        log_fd = fd;
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    /* Signals are read from a descriptor in the event loop: no async handler races. */
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
        die(1, "sigprocmask: %s", strerror(errno));
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        die(1, "signalfd: %s", strerror(errno));
    raise_fd_limit();
    pipe_bytes = (size_t)cfg.pipe_size;
    open_listener();
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die(1, "epoll_create1: %s", strerror(errno));
    static struct tag stag = {TAG_SIGNAL, NULL};
    epoll_add(listen_fd, EPOLLIN, &listen_tag);
    epoll_add(sfd, EPOLLIN, &stag);

    /* Probe the pipe size the kernel grants, so the log states the real bound. */
    {
        struct dir probe;
        if (make_pipe(&probe) == 0) {
            pipe_bytes = probe.cap;
            close_pipe(&probe);
        }
    }
    char bound[sizeof cfg.listen_text];
    struct sockaddr_storage actual;
    socklen_t alen = sizeof actual;
    if (getsockname(listen_fd, (struct sockaddr *)&actual, &alen) == 0)
        addr_text((struct sockaddr *)&actual, bound, sizeof bound);
    else
        snprintf(bound, sizeof bound, "%s", cfg.listen_text);
    log_line_both("event=listening listen=%s target=%s pid=%d pipe_size=%zu max_streams=%ld "
             "max_per_peer=%ld connect_timeout=%.3f idle_timeout=%.3f drain=%.3f "
             "notsent_lowat=%ld version=%s",
             bound, cfg.target_text, (int)getpid(), pipe_bytes, cfg.max_streams,
             cfg.max_per_peer, cfg.connect_timeout, cfg.idle_timeout, cfg.drain,
             cfg.notsent_lowat, SRD_VERSION);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        double now = now_mono();
        if (stopping && (n_live == 0 || now >= drain_until)) {
            cut_all("shutdown");
            free_dead();
            break;
        }
        int n = epoll_wait(epfd, events, MAX_EVENTS, next_timeout_ms(now));
        loop_now = now_mono();
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_line("event=error where=epoll_wait error=\"%s\"", strerror(errno));
            cut_all("error");
            free_dead();
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct tag *tag = events[i].data.ptr;
            uint32_t ev = events[i].events;
            switch (tag->kind) {
            case TAG_LISTEN:
                if (!stopping)
                    accept_ready();
                break;
            case TAG_SIGNAL:
                handle_signal(sfd);
                break;
            case TAG_CLIENT:
                if (tag->stream->state == ST_RELAYING)
                    stream_relay_event(tag->stream, 1, ev);
                break;
            case TAG_TARGET:
                if (tag->stream->state != ST_DEAD)
                    stream_target_event(tag->stream, ev);
                break;
            }
        }
        now = now_mono();
        expire_connects(now);
        expire_idle(now);
        if (listen_paused_until > 0 && now >= listen_paused_until && listen_fd >= 0) {
            listen_paused_until = 0;
            set_listener_events(EPOLLIN);
        }
        free_dead();
    }
    log_line_both("event=exit status=0 streams_served=%llu", (unsigned long long)n_served);
    return 0;
}
