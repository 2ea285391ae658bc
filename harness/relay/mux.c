/*
 * srdmux -- the "two proxies" baseline of study S0: a cluster's streams multiplexed onto ONE
 * relay-to-relay TCP connection, as the paper's user-space proxy does (seed 000:67, Table 1:
 * "Proxy: one connection between front nodes").
 *
 *   srdmux [OPTIONS] entry LISTEN PEER    accept the cluster's streams on LISTEN; carry them
 *                                         all over one connection (the trunk) to the exit
 *                                         relay at PEER (opened at start)
 *   srdmux [OPTIONS] exit  LISTEN TARGET  accept the entry relay's trunk on LISTEN; open one
 *                                         connection to TARGET per stream carried in it
 *   --key-file PATH        the pair's shared secret (required; a file only its owner can read)
 *   --connect-timeout SEC  exit: give up on a silent TARGET after SEC (default 5)
 *
 * The trunk is authenticated before it carries anything: the exit sends "SRDMUX1\n" and a
 * 32-byte random nonce Ne; the entry answers with its own nonce Na and
 * HMAC-SHA256(key, "srdmux-entry" Ne Na); the exit checks it (constant time) and answers
 * HMAC-SHA256(key, "srdmux-exit" Na Ne), which the entry checks. A connection that fails
 * (wrong MAC, silence for HANDSHAKE_TIMEOUT, closed) is refused and logged, and the exit goes
 * on waiting for the real trunk: up to MAX_CANDIDATES handshakes run at once, the oldest
 * gives way to a new one. Once a trunk is up, every further connection is refused and logged.
 *
 * Framing on the trunk: a 12-byte header (stream id, type, payload length, all in network
 * order) then the payload. Types: OPEN (a new stream), DATA, FIN (the sender's half of the
 * stream ended: shutdown(SHUT_WR) once delivered), RST (abort the stream). A payload is at
 * most MAX_FRAME bytes (the read chunk, all a sender ever frames): a longer length ends the
 * trunk with a log line (exit status 1), so the receive buffer never holds more than one
 * frame and one read.
 *
 * One thread, level-triggered epoll, plain read/write: every byte is copied into user space
 * and framed, as a 2003 proxy did; TCP_NODELAY on every socket. The exit connects to TARGET
 * without blocking (a stream's connect never stalls the others; a target silent for
 * --connect-timeout is given up and the stream reset). Bounded memory: while the shared
 * connection's outgoing buffer holds more than HIGH_WATER bytes the streams are not read;
 * while one stream's outgoing buffer does, the shared connection is not read (head-of-line
 * blocking, inherent to one connection carrying many streams). Ends on SIGTERM/SIGINT
 * (exit 0) or when the shared connection ends (exit 0 after closing every stream).
 * Prints "srdmux: event=listening ..." on stderr once it accepts connections, and one
 * "srdmux: event=NAME key=value ..." line per event worth knowing.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER 12
#define READ_CHUNK (64 * 1024)
#define MAX_FRAME READ_CHUNK /* the longest payload a sender frames (stream_readable) */
#define HIGH_WATER (1 << 20)
#define MAX_STREAMS 4096
#define MAX_CANDIDATES 8
#define HANDSHAKE_TIMEOUT 5.0
#define NONCE 32
#define MAC 32
#define MAGIC "SRDMUX1\n"
#define MAGIC_LEN 8
#define MAX_KEY 4096
#define MIN_KEY 16
enum { T_OPEN = 1, T_DATA = 2, T_FIN = 3, T_RST = 4 };

struct buf {
    char *data;
    size_t len, cap;
};

struct stream {
    int fd;                 /* -1: free slot */
    uint32_t id;
    struct buf out;         /* towards fd */
    int in_done, out_fin;   /* fd sent EOF; peer sent FIN (shutdown once out drains) */
    int out_shut;
    int connecting;         /* exit: non-blocking connect to the target in progress */
    double deadline;        /* ... given up at this time */
};

/* exit: a connection that may be the trunk, until it proves the key */
struct candidate {
    int fd;                 /* -1: free slot */
    double deadline;
    unsigned char nonce[NONCE];
    unsigned char got[NONCE + MAC];
    size_t n;
    char peer[64];
};

static int is_entry, listen_fd = -1, mux_fd = -1, ep, sig_fd;
static struct sockaddr_storage peer_addr;
static socklen_t peer_len;
static struct buf mux_out, mux_in;
static struct stream streams[MAX_STREAMS];
static struct candidate cands[MAX_CANDIDATES];
static uint32_t next_id = 1;
static char scratch[READ_CHUNK];
static unsigned char key[MAX_KEY];
static size_t key_len;
static double connect_timeout = 5.0;
static int n_connecting;

static void die(const char *what)
{
    fprintf(stderr, "srdmux: event=error what=%s errno=%d (%s)\n", what, errno, strerror(errno));
    exit(1);
}

static void fail(int status, const char *msg)
{
    fprintf(stderr, "srdmux: event=error message=\"%s\"\n", msg);
    exit(status);
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ SHA-256, HMAC (FIPS 180-4, RFC 2104) */

struct sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
};

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *c, const unsigned char *p)
{
    uint32_t w[64], a, b, d, e, f, g, h, cc;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3];
    e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g, g = f, f = e, e = d + t1, d = cc, cc = b, b = a, a = t1 + t2;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d;
    c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha256_init(struct sha256 *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->bytes = 0;
    c->fill = 0;
}

static void sha256_add(struct sha256 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->bytes += n;
    while (n) {
        size_t take = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->block + c->fill, p, take);
        c->fill += take, p += take, n -= take;
        if (c->fill == 64) {
            sha256_block(c, c->block);
            c->fill = 0;
        }
    }
}

static void sha256_end(struct sha256 *c, unsigned char out[32])
{
    uint64_t bits = c->bytes * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sha256_add(c, &pad, 1);
    while (c->fill != 56)
        sha256_add(c, &zero, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_add(c, len, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(c->h[i] >> (24 - 8 * j));
}

/* HMAC-SHA256(key, label || a || b) */
static void hmac(const char *label, const unsigned char *a, const unsigned char *b,
                 unsigned char out[MAC])
{
    unsigned char k[64] = {0}, pad[64], inner[32];
    struct sha256 c;
    if (key_len > 64) {
        sha256_init(&c);
        sha256_add(&c, key, key_len);
        sha256_end(&c, k);
    } else {
        memcpy(k, key, key_len);
    }
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&c);
    sha256_add(&c, pad, 64);
    sha256_add(&c, label, strlen(label));
    sha256_add(&c, a, NONCE);
    sha256_add(&c, b, NONCE);
    sha256_end(&c, inner);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&c);
    sha256_add(&c, pad, 64);
    sha256_add(&c, inner, 32);
    sha256_end(&c, out);
}

static int same_mac(const unsigned char *x, const unsigned char *y)
{
    unsigned char diff = 0;
    for (int i = 0; i < MAC; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

static void random_nonce(unsigned char *out)
{
    if (getrandom(out, NONCE, 0) != NONCE)
        die("getrandom");
}

static void read_key(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "srdmux: event=error message=\"cannot open the key file %s: %s\"\n", path,
                strerror(errno));
        exit(2);
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid())
        fail(2, "the key file must be a regular file of this user that no one else can read "
                "(chmod 600)");
    ssize_t n = read(fd, key, sizeof key);
    close(fd);
    if (n < MIN_KEY || n == (ssize_t)sizeof key)
        fail(2, "the key file must hold 16..4095 bytes");
    key_len = (size_t)n;
}

/* ------------------------------------------------------------------ buffers, sockets */

static void buf_add(struct buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n)
            cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data)
            die("realloc");
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_drop(struct buf *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

static void nodelay_nonblock(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void addr_text(int fd, char *out, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    snprintf(out, len, "?");
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) < 0)
        return;
    if (sa.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, len, "%s:%d", host, port);
    } else if (sa.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, len, "[%s]:%d", host, port);
    }
}

static void resolve(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof host) {
        fprintf(stderr, "srdmux: bad address %s (want HOST:PORT)\n", text);
        exit(2);
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) {
        fprintf(stderr, "srdmux: cannot resolve %s\n", text);
        exit(2);
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
}

/* epoll interest: EPOLLIN unless paused, EPOLLOUT while there is something to write */
static void watch(int fd, uint64_t tag, int in, int out, int op)
{
    struct epoll_event ev = {.events = (in ? EPOLLIN : 0) | (out ? EPOLLOUT : 0), .data.u64 = tag};
    if (epoll_ctl(ep, op, fd, &ev) < 0 && op != EPOLL_CTL_DEL)
        die("epoll_ctl");
}

#define TAG_LISTEN (1ull << 40)
#define TAG_MUX (2ull << 40)
#define TAG_SIGNAL (3ull << 40)
#define TAG_CANDIDATE (4ull << 40) /* + slot */

static void frame(uint32_t id, uint32_t type, const void *p, uint32_t n)
{
    uint32_t h[3] = {htonl(id), htonl(type), htonl(n)};
    buf_add(&mux_out, h, HEADER);
    if (n)
        buf_add(&mux_out, p, n);
}

static int streams_paused;

static void rearm_all(void);

static void flush_mux(void)
{
    while (mux_out.len) {
        ssize_t w = write(mux_fd, mux_out.data, mux_out.len);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            die("write to the shared connection");
        }
        buf_drop(&mux_out, (size_t)w);
    }
    int paused = mux_out.len > HIGH_WATER;
    if (paused != streams_paused) {
        streams_paused = paused;
        rearm_all();
    }
    watch(mux_fd, TAG_MUX, 1, mux_out.len > 0, EPOLL_CTL_MOD);
}

static int top; /* slots in use are below this */

static struct stream *find(uint32_t id)
{
    for (int i = 0; i < top; i++)
        if (streams[i].fd >= 0 && streams[i].id == id)
            return &streams[i];
    return NULL;
}

static void stream_close(struct stream *s, int rst)
{
    if (rst) {
        struct linger lg = {1, 0};
        setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    s->fd = -1;
    s->out.len = 0;
    if (s->connecting) {
        s->connecting = 0;
        n_connecting--;
    }
}

static int mux_paused;

static void stream_watch(struct stream *s)
{
    watch(s->fd, (uint64_t)(s - streams), !s->connecting && !s->in_done && !streams_paused,
          s->connecting || s->out.len > 0, EPOLL_CTL_MOD);
}

static void rearm_all(void)
{
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i].fd >= 0)
            stream_watch(&streams[i]);
}

static void maybe_done(struct stream *s)
{
    if (s->in_done && s->out_shut)
        stream_close(s, 0);
}

/* write what is queued towards the stream's socket; shut it down after a FIN */
static void flush_stream(struct stream *s)
{
    if (s->connecting) { /* queued until the target answers */
        stream_watch(s);
        return;
    }
    while (s->out.len) {
        ssize_t w = write(s->fd, s->out.data, s->out.len);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            frame(s->id, T_RST, NULL, 0);
            stream_close(s, 1);
            return;
        }
        buf_drop(&s->out, (size_t)w);
    }
    if (!s->out.len && s->out_fin && !s->out_shut) {
        shutdown(s->fd, SHUT_WR);
        s->out_shut = 1;
        maybe_done(s);
        if (s->fd < 0)
            return;
    }
    stream_watch(s);
}

static struct stream *stream_new(int fd, uint32_t id, int connecting)
{
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i].fd < 0) {
            struct stream *s = &streams[i];
            if (i >= top)
                top = i + 1;
            s->fd = fd;
            s->id = id;
            s->in_done = s->out_fin = s->out_shut = 0;
            s->out.len = 0;
            s->connecting = connecting;
            if (connecting) {
                n_connecting++;
                s->deadline = now_mono() + connect_timeout;
            }
            nodelay_nonblock(fd);
            watch(fd, (uint64_t)i, !connecting && !streams_paused, connecting, EPOLL_CTL_ADD);
            return s;
        }
    return NULL;
}

static void stream_readable(struct stream *s)
{
    ssize_t n = read(s->fd, scratch, sizeof scratch);
    if (n > 0) {
        frame(s->id, T_DATA, scratch, (uint32_t)n);
    } else if (n == 0) {
        s->in_done = 1;
        frame(s->id, T_FIN, NULL, 0);
        maybe_done(s);
    } else if (errno != EAGAIN && errno != EINTR) {
        frame(s->id, T_RST, NULL, 0);
        stream_close(s, 1);
    }
    flush_mux();
    if (s->fd >= 0)
        stream_watch(s);
}

/* exit: the target did not take a stream (refused, unreachable, silent): reset it */
static void connect_failed(struct stream *s, int err)
{
    fprintf(stderr, "srdmux: event=connect-failed id=%u error=\"%s\"\n", s->id, strerror(err));
    frame(s->id, T_RST, NULL, 0);
    stream_close(s, 1);
    flush_mux();
}

/* exit: the non-blocking connect of a stream ended (writable, or an error) */
static void stream_connect_done(struct stream *s)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        connect_failed(s, err);
        return;
    }
    s->connecting = 0;
    n_connecting--;
    flush_stream(s); /* what arrived meanwhile, and a FIN */
}

static void end_all_and_exit(int status)
{
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i].fd >= 0)
            stream_close(&streams[i], 1);
    fprintf(stderr, "srdmux: event=exit status=%d\n", status);
    exit(status);
}

/* a stream whose output was over HIGH_WATER may be gone or drained: read the trunk again? */
static void recheck_pause(void)
{
    if (!mux_paused)
        return;
    for (int k = 0; k < top; k++)
        if (streams[k].fd >= 0 && streams[k].out.len > HIGH_WATER)
            return;
    mux_paused = 0;
    watch(mux_fd, TAG_MUX, 1, mux_out.len > 0, EPOLL_CTL_MOD);
}

/* frames arriving on the shared connection */
static void mux_readable(void)
{
    if (mux_in.cap - mux_in.len < READ_CHUNK) {
        /* at most one partial frame (< HEADER + MAX_FRAME) is kept between reads */
        mux_in.cap = mux_in.len + READ_CHUNK;
        mux_in.data = realloc(mux_in.data, mux_in.cap);
        if (!mux_in.data)
            die("realloc");
    }
    ssize_t n = read(mux_fd, mux_in.data + mux_in.len, mux_in.cap - mux_in.len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        end_all_and_exit(0);
    if (n < 0)
        return;
    mux_in.len += (size_t)n;
    size_t off = 0;
    int blocked = 0;
    while (mux_in.len - off >= HEADER) {
        uint32_t h[3];
        memcpy(h, mux_in.data + off, HEADER);
        uint32_t id = ntohl(h[0]), type = ntohl(h[1]), len = ntohl(h[2]);
        if (len > MAX_FRAME) {
            fprintf(stderr, "srdmux: event=error what=frame-too-long id=%u type=%u length=%u "
                    "max=%d action=drop-trunk\n", id, type, len, MAX_FRAME);
            end_all_and_exit(1);
        }
        if (mux_in.len - off < HEADER + (size_t)len)
            break;
        const char *payload = mux_in.data + off + HEADER;
        off += HEADER + len;
        struct stream *s = find(id);
        if (type == T_OPEN && !is_entry && !s) {
            int fd = socket(peer_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&peer_addr, peer_len);
            if (rc < 0 && (fd < 0 || errno != EINPROGRESS)) {
                fprintf(stderr, "srdmux: event=connect-failed id=%u error=\"%s\"\n", id,
                        strerror(errno));
                if (fd >= 0)
                    close(fd);
                frame(id, T_RST, NULL, 0);
                continue;
            }
            if (!stream_new(fd, id, rc < 0)) {
                close(fd);
                frame(id, T_RST, NULL, 0);
            }
        } else if (s && type == T_DATA) {
            buf_add(&s->out, payload, len);
            flush_stream(s);
            if (s->fd >= 0 && s->out.len > HIGH_WATER)
                blocked = 1;
        } else if (s && type == T_FIN) {
            s->out_fin = 1;
            flush_stream(s);
        } else if (s && type == T_RST) {
            stream_close(s, 1);
        }
    }
    buf_drop(&mux_in, off);
    flush_mux();
    mux_paused = blocked;
}

/* ------------------------------------------------------------------ the trunk's handshake */

/* entry: prove the key to the exit and check its proof, before any stream is accepted */
static int read_full(int fd, unsigned char *p, size_t n, double deadline)
{
    size_t got = 0;
    while (got < n) {
        int ms = (int)((deadline - now_mono()) * 1000);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (ms <= 0 || poll(&pf, 1, ms) <= 0)
            return -1;
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void entry_handshake(const char *peer)
{
    unsigned char hello[MAGIC_LEN + NONCE], answer[NONCE + MAC], proof[MAC], want[MAC];
    double deadline = now_mono() + HANDSHAKE_TIMEOUT * 2;
    char msg[300];
    if (read_full(mux_fd, hello, sizeof hello, deadline) < 0 || memcmp(hello, MAGIC, MAGIC_LEN)) {
        snprintf(msg, sizeof msg, "the exit relay at %s sent no srdmux challenge", peer);
        fail(1, msg);
    }
    const unsigned char *ne = hello + MAGIC_LEN;
    random_nonce(answer);
    hmac("srdmux-entry", ne, answer, answer + NONCE);
    if (write(mux_fd, answer, sizeof answer) != (ssize_t)sizeof answer)
        die("write the handshake");
    hmac("srdmux-exit", answer, ne, want);
    if (read_full(mux_fd, proof, sizeof proof, deadline) < 0 || !same_mac(proof, want)) {
        snprintf(msg, sizeof msg, "the exit relay at %s did not prove the shared key "
                 "(another program on that port, or another key)", peer);
        fail(1, msg);
    }
    fprintf(stderr, "srdmux: event=trunk peer=%s authenticated=1\n", peer);
}

static void candidate_drop(struct candidate *c, const char *reason)
{
    fprintf(stderr, "srdmux: event=trunk-refused peer=%s reason=%s\n", c->peer, reason);
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
}

/* exit: a new connection: a trunk candidate, challenged at once */
static void candidate_new(int fd)
{
    char peer[64];
    addr_text(fd, peer, sizeof peer);
    if (mux_fd >= 0) {
        fprintf(stderr, "srdmux: event=trunk-refused peer=%s reason=trunk-already-up\n", peer);
        close(fd);
        return;
    }
    struct candidate *c = NULL;
    for (int i = 0; i < MAX_CANDIDATES; i++) {
        if (cands[i].fd < 0) {
            c = &cands[i];
            break;
        }
        if (!c || cands[i].deadline < c->deadline)
            c = &cands[i];
    }
    if (c->fd >= 0) /* all busy: the oldest gives way */
        candidate_drop(c, "evicted");
    c->fd = fd;
    c->n = 0;
    c->deadline = now_mono() + HANDSHAKE_TIMEOUT;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    nodelay_nonblock(fd);
    unsigned char hello[MAGIC_LEN + NONCE];
    random_nonce(c->nonce);
    memcpy(hello, MAGIC, MAGIC_LEN);
    memcpy(hello + MAGIC_LEN, c->nonce, NONCE);
    watch(fd, TAG_CANDIDATE + (uint64_t)(c - cands), 1, 0, EPOLL_CTL_ADD);
    if (write(fd, hello, sizeof hello) != (ssize_t)sizeof hello)
        candidate_drop(c, "write-failed");
}

static void candidate_readable(struct candidate *c)
{
    ssize_t r = read(c->fd, c->got + c->n, sizeof c->got - c->n);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        candidate_drop(c, "closed");
        return;
    }
    c->n += (size_t)r;
    if (c->n < sizeof c->got)
        return;
    unsigned char want[MAC], proof[MAC];
    hmac("srdmux-entry", c->nonce, c->got, want);
    if (!same_mac(c->got + NONCE, want)) {
        candidate_drop(c, "bad-mac");
        return;
    }
    hmac("srdmux-exit", c->got, c->nonce, proof);
    if (write(c->fd, proof, sizeof proof) != (ssize_t)sizeof proof) {
        candidate_drop(c, "write-failed");
        return;
    }
    mux_fd = c->fd;
    c->fd = -1;
    watch(mux_fd, TAG_MUX, 1, 0, EPOLL_CTL_MOD);
    fprintf(stderr, "srdmux: event=trunk peer=%s authenticated=1\n", c->peer);
    for (int i = 0; i < MAX_CANDIDATES; i++)
        if (cands[i].fd >= 0)
            candidate_drop(&cands[i], "trunk-already-up");
}

/* ------------------------------------------------------------------ timers */

static void expire(double now)
{
    for (int i = 0; i < MAX_CANDIDATES; i++)
        if (cands[i].fd >= 0 && cands[i].deadline <= now)
            candidate_drop(&cands[i], "timeout");
    if (!n_connecting)
        return;
    for (int i = 0; i < top; i++)
        if (streams[i].fd >= 0 && streams[i].connecting && streams[i].deadline <= now)
            connect_failed(&streams[i], ETIMEDOUT);
    recheck_pause();
}

static int next_timeout_ms(double now)
{
    double wake = -1;
    for (int i = 0; i < MAX_CANDIDATES; i++)
        if (cands[i].fd >= 0 && (wake < 0 || cands[i].deadline < wake))
            wake = cands[i].deadline;
    for (int i = 0; n_connecting && i < top; i++)
        if (streams[i].fd >= 0 && streams[i].connecting && (wake < 0 || streams[i].deadline < wake))
            wake = streams[i].deadline;
    if (wake < 0)
        return -1;
    double ms = (wake - now) * 1000.0 + 1.0;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

/* ------------------------------------------------------------------ main */

static void usage_exit(void)
{
    fprintf(stderr, "usage: srdmux --key-file PATH [--connect-timeout SEC] entry LISTEN PEER\n"
                    "       srdmux --key-file PATH [--connect-timeout SEC] exit LISTEN TARGET\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"key-file", required_argument, 0, 'k'},
        {"connect-timeout", required_argument, 0, 'c'},
        {0, 0, 0, 0},
    };
    const char *key_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'k': key_path = optarg; break;
        case 'c':
            connect_timeout = strtod(optarg, &end);
            if (*end || end == optarg || !(connect_timeout >= 0.001 && connect_timeout <= 86400))
                fail(2, "--connect-timeout: expected seconds in 0.001..86400");
            break;
        default: usage_exit();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc != 3 || (strcmp(argv[0], "entry") && strcmp(argv[0], "exit")))
        usage_exit();
    if (!key_path)
        fail(2, "--key-file PATH is required: the trunk is authenticated with the pair's key");
    read_key(key_path);
    is_entry = !strcmp(argv[0], "entry");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < MAX_STREAMS; i++)
        streams[i].fd = -1;
    for (int i = 0; i < MAX_CANDIDATES; i++)
        cands[i].fd = -1;
    struct sockaddr_storage la;
    socklen_t ll;
    resolve(argv[1], &la, &ll);
    resolve(argv[2], &peer_addr, &peer_len);
    if ((ep = epoll_create1(0)) < 0)
        die("epoll_create1");
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sig_fd = signalfd(-1, &mask, 0);
    watch(sig_fd, TAG_SIGNAL, 1, 0, EPOLL_CTL_ADD);
    if (is_entry) { /* the one shared connection, before any stream is accepted */
        mux_fd = socket(peer_addr.ss_family, SOCK_STREAM, 0);
        if (mux_fd < 0 || connect(mux_fd, (struct sockaddr *)&peer_addr, peer_len) < 0)
            die("connect to the exit relay");
        entry_handshake(argv[2]);
        nodelay_nonblock(mux_fd);
        watch(mux_fd, TAG_MUX, 1, 0, EPOLL_CTL_ADD);
    }
    listen_fd = socket(la.ss_family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listen_fd, (struct sockaddr *)&la, ll) < 0 || listen(listen_fd, 128) < 0)
        die("listen");
    watch(listen_fd, TAG_LISTEN, 1, 0, EPOLL_CTL_ADD);
    fprintf(stderr, "srdmux: event=listening mode=%s listen=%s peer=%s max_frame=%d "
            "connect_timeout=%.3f trunk=hmac-sha256\n", argv[0], argv[1], argv[2], MAX_FRAME,
            connect_timeout);
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, next_timeout_ms(now_mono()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == TAG_SIGNAL) {
                end_all_and_exit(0);
            } else if (tag == TAG_LISTEN) {
                int fd = accept(listen_fd, NULL, NULL);
                if (fd < 0)
                    continue;
                if (!is_entry) { /* the exit relay carries one authenticated trunk */
                    candidate_new(fd);
                    continue;
                }
                struct stream *s = stream_new(fd, next_id, 0);
                if (!s) {
                    close(fd);
                    continue;
                }
                frame(next_id++, T_OPEN, NULL, 0);
                flush_mux();
            } else if (tag >= TAG_CANDIDATE && tag < TAG_CANDIDATE + MAX_CANDIDATES) {
                struct candidate *cd = &cands[tag - TAG_CANDIDATE];
                if (cd->fd >= 0)
                    candidate_readable(cd);
            } else if (tag == TAG_MUX) {
                if (mux_fd < 0)
                    continue;
                if (evs[i].events & EPOLLOUT)
                    flush_mux();
                if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !mux_paused)
                    mux_readable();
                if (mux_paused) { /* a stream is full: read the shared connection later */
                    int still = 0;
                    for (int k = 0; k < MAX_STREAMS; k++)
                        if (streams[k].fd >= 0 && streams[k].out.len > HIGH_WATER)
                            still = 1;
                    mux_paused = still;
                }
                watch(mux_fd, TAG_MUX, !mux_paused, mux_out.len > 0, EPOLL_CTL_MOD);
            } else {
                struct stream *s = &streams[tag];
                if (s->fd < 0)
                    continue;
                if (s->connecting) {
                    stream_connect_done(s);
                    recheck_pause();
                    continue;
                }
                if ((evs[i].events & EPOLLERR) ||
                    ((evs[i].events & EPOLLHUP) && s->in_done)) { /* reset, or gone for good */
                    frame(s->id, T_RST, NULL, 0);
                    stream_close(s, 1);
                    flush_mux();
                    recheck_pause();
                    continue;
                }
                if (evs[i].events & EPOLLOUT)
                    flush_stream(s);
                if (s->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
                    !s->in_done)
                    stream_readable(s);
                if (mux_paused && s->fd >= 0 && s->out.len <= HIGH_WATER) {
                    mux_paused = 0;
                    watch(mux_fd, TAG_MUX, 1, mux_out.len > 0, EPOLL_CTL_MOD);
                }
            }
        }
        expire(now_mono());
    }
}
