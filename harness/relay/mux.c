/*
 * srdmux -- the "two proxies" baseline of study S0: a cluster's streams multiplexed onto ONE
 * relay-to-relay TCP connection, as the paper's user-space proxy does (seed 000:67, Table 1:
 * "Proxy: one connection between front nodes").
 *
 *   srdmux entry LISTEN PEER    accept the cluster's streams on LISTEN; carry them all over
 *                               one connection to the exit relay at PEER (opened at start)
 *   srdmux exit  LISTEN TARGET  accept the entry relay's connection on LISTEN; open one
 *                               connection to TARGET per stream carried in it
 *
 * Framing on the shared connection: a 12-byte header (stream id, type, payload length, all
 * in network order) then the payload. Types: OPEN (a new stream), DATA, FIN (the sender's
 * half of the stream ended: shutdown(SHUT_WR) once delivered), RST (abort the stream).
 *
 * One thread, level-triggered epoll, plain read/write: every byte is copied into user space
 * and framed, as a 2003 proxy did; TCP_NODELAY on every socket. Bounded memory: while the
 * shared connection's outgoing buffer holds more than HIGH_WATER bytes the streams are not
 * read; while one stream's outgoing buffer does, the shared connection is not read (head-of-
 * line blocking, inherent to one connection carrying many streams). Ends on SIGTERM/SIGINT
 * (exit 0) or when the shared connection ends (exit 0 after closing every stream).
 * Prints "event=listening ..." on stderr once it accepts connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEADER 12
#define READ_CHUNK (64 * 1024)
#define HIGH_WATER (1 << 20)
#define MAX_STREAMS 4096
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
};

static int is_entry, listen_fd = -1, mux_fd = -1, ep, sig_fd;
static struct sockaddr_storage peer_addr;
static socklen_t peer_len;
static struct buf mux_out, mux_in;
static struct stream streams[MAX_STREAMS];
static uint32_t next_id = 1;
static char scratch[READ_CHUNK];

static void die(const char *what)
{
    fprintf(stderr, "srdmux: event=error what=%s errno=%d (%s)\n", what, errno, strerror(errno));
    exit(1);
}

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
}

static int mux_paused;

static void stream_watch(struct stream *s)
{
    watch(s->fd, (uint64_t)(s - streams), !s->in_done && !streams_paused, s->out.len > 0,
          EPOLL_CTL_MOD);
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

static struct stream *stream_new(int fd, uint32_t id)
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
            nodelay_nonblock(fd);
            watch(fd, (uint64_t)i, !streams_paused, 0, EPOLL_CTL_ADD);
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

static void end_all_and_exit(void)
{
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i].fd >= 0)
            stream_close(&streams[i], 1);
    fprintf(stderr, "srdmux: event=exit\n");
    exit(0);
}

/* frames arriving on the shared connection */
static void mux_readable(void)
{
    if (mux_in.cap - mux_in.len < READ_CHUNK) {
        mux_in.cap = mux_in.len + READ_CHUNK;
        mux_in.data = realloc(mux_in.data, mux_in.cap);
        if (!mux_in.data)
            die("realloc");
    }
    ssize_t n = read(mux_fd, mux_in.data + mux_in.len, mux_in.cap - mux_in.len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        end_all_and_exit();
    if (n < 0)
        return;
    mux_in.len += (size_t)n;
    size_t off = 0;
    int blocked = 0;
    while (mux_in.len - off >= HEADER) {
        uint32_t h[3];
        memcpy(h, mux_in.data + off, HEADER);
        uint32_t id = ntohl(h[0]), type = ntohl(h[1]), len = ntohl(h[2]);
        if (mux_in.len - off < HEADER + (size_t)len)
            break;
        const char *payload = mux_in.data + off + HEADER;
        off += HEADER + len;
        struct stream *s = find(id);
        if (type == T_OPEN && !is_entry && !s) {
            int fd = socket(peer_addr.ss_family, SOCK_STREAM, 0);
            if (fd < 0 || connect(fd, (struct sockaddr *)&peer_addr, peer_len) < 0) {
                if (fd >= 0)
                    close(fd);
                frame(id, T_RST, NULL, 0);
                continue;
            }
            if (!stream_new(fd, id)) {
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

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "entry") && strcmp(argv[1], "exit"))) {
        fprintf(stderr, "usage: srdmux entry LISTEN PEER | srdmux exit LISTEN TARGET\n");
        return 2;
    }
    is_entry = !strcmp(argv[1], "entry");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < MAX_STREAMS; i++)
        streams[i].fd = -1;
    struct sockaddr_storage la;
    socklen_t ll;
    resolve(argv[2], &la, &ll);
    resolve(argv[3], &peer_addr, &peer_len);
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
        nodelay_nonblock(mux_fd);
        watch(mux_fd, TAG_MUX, 1, 0, EPOLL_CTL_ADD);
    }
    listen_fd = socket(la.ss_family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listen_fd, (struct sockaddr *)&la, ll) < 0 || listen(listen_fd, 128) < 0)
        die("listen");
    watch(listen_fd, TAG_LISTEN, 1, 0, EPOLL_CTL_ADD);
    fprintf(stderr, "srdmux: event=listening mode=%s listen=%s peer=%s\n", argv[1], argv[2],
            argv[3]);
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == TAG_SIGNAL) {
                end_all_and_exit();
            } else if (tag == TAG_LISTEN) {
                int fd = accept(listen_fd, NULL, NULL);
                if (fd < 0)
                    continue;
                if (!is_entry) { /* the exit relay carries one shared connection at a time */
                    if (mux_fd >= 0) {
                        close(fd);
                        continue;
                    }
                    mux_fd = fd;
                    nodelay_nonblock(mux_fd);
                    watch(mux_fd, TAG_MUX, 1, 0, EPOLL_CTL_ADD);
                    continue;
                }
                struct stream *s = stream_new(fd, next_id);
                if (!s) {
                    close(fd);
                    continue;
                }
                frame(next_id++, T_OPEN, NULL, 0);
                flush_mux();
            } else if (tag == TAG_MUX) {
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
                if ((evs[i].events & EPOLLERR) ||
                    ((evs[i].events & EPOLLHUP) && s->in_done)) { /* reset, or gone for good */
                    frame(s->id, T_RST, NULL, 0);
                    stream_close(s, 1);
                    flush_mux();
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
    }
}
