#include "line_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK ((size_t)4 << 20)

struct px_lines {
    char path[4096];
    int fd;
    int gz;
    z_stream zs;
    int z_done;        /* the last gzip member ended and no input follows */
    unsigned char *in; /* compressed input (gz) */
    char *buf;         /* text: [start, end) not yet returned */
    size_t cap, start, end;
    int eof;
    int64_t line, file_read, file_size, text_read;
};

static int fail_io(px_lines *l, char *err, size_t cap, const char *what) {
    snprintf(err, cap, "%s: %s: %s", l->path, what, strerror(errno));
    return -1;
}

static int start_gz(px_lines *l) {
    memset(&l->zs, 0, sizeof l->zs);
    return inflateInit2(&l->zs, 15 + 32) == Z_OK ? 0 : -1; /* gzip or zlib header */
}

int px_lines_open(px_lines **out, const char *path, char *err, size_t cap) {
    *out = NULL;
    px_lines *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    int std_in = !strcmp(path, "-");
    snprintf(l->path, sizeof l->path, "%s", std_in ? "(standard input)" : path);
    l->fd = std_in ? dup(0) : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (l->fd < 0 || fstat(l->fd, &st)) {
        snprintf(err, cap, "cannot open %s: %s", path, strerror(errno));
        px_lines_close(l);
        return -1;
    }
    /* A FIFO named as a file would block the open; standard input is read
     * as it comes (a pipe from a decompressor or a generator). */
    if (!std_in && !S_ISREG(st.st_mode)) {
        snprintf(err, cap, "%s is not a regular file (a FIFO, device or folder)", path);
        px_lines_close(l);
        return -1;
    }
    int flags = fcntl(l->fd, F_GETFL);
    if (flags >= 0) (void)fcntl(l->fd, F_SETFL, flags & ~O_NONBLOCK);
    l->file_size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
    unsigned char magic[2] = {0, 0};
    l->gz = !std_in && pread(l->fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    l->cap = CHUNK;
    l->buf = malloc(l->cap);
    l->in = l->gz ? malloc(CHUNK) : NULL;
    if (!l->buf || (l->gz && (!l->in || start_gz(l)))) {
        snprintf(err, cap, "out of memory");
        px_lines_close(l);
        return -1;
    }
    *out = l;
    return 0;
}

/* Appends at most `room` bytes of text at buf + end; returns how many (0 at
 * the end of the file), -1 on an error. */
static ssize_t read_text(px_lines *l, size_t room, char *err, size_t cap) {
    if (!l->gz) {
        for (;;) {
            ssize_t n = read(l->fd, l->buf + l->end, room);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail_io(l, err, cap, "read error");
            l->file_read += n;
            return n;
        }
    }
    l->zs.next_out = (unsigned char *)l->buf + l->end;
    l->zs.avail_out = (unsigned)room;
    while (l->zs.avail_out == room && !l->z_done) {
        if (l->zs.avail_in == 0) {
            ssize_t n = read(l->fd, l->in, CHUNK);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail_io(l, err, cap, "read error");
            if (n == 0) {
                snprintf(err, cap, "%s: the gzip stream ends early (a truncated .gz file)",
                         l->path);
                return -1;
            }
            l->file_read += n;
            l->zs.next_in = l->in;
            l->zs.avail_in = (unsigned)n;
        }
        int rc = inflate(&l->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            /* Another member may follow (cat a.gz b.gz). */
            if (l->zs.avail_in == 0) {
                ssize_t n = read(l->fd, l->in, CHUNK);
                if (n < 0) return fail_io(l, err, cap, "read error");
                l->file_read += n;
                l->zs.next_in = l->in;
                l->zs.avail_in = (unsigned)n;
            }
            if (l->zs.avail_in == 0)
                l->z_done = 1;
            else if (inflateReset(&l->zs) != Z_OK)
                return -1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, cap, "%s: bad gzip data (%s)", l->path,
                     l->zs.msg ? l->zs.msg : "inflate failed");
            return -1;
        }
    }
    return (ssize_t)(room - l->zs.avail_out);
}

int px_lines_next(px_lines *l, char **line, size_t *len, char *err, size_t cap) {
    for (;;) {
        char *s = l->buf + l->start;
        char *nl = l->end > l->start ? memchr(s, '\n', l->end - l->start) : NULL;
        if (nl || (l->eof && l->end > l->start)) {
            size_t n = nl ? (size_t)(nl - s) : l->end - l->start;
            l->start += n + (nl != NULL);
            if (n > 0 && s[n - 1] == '\r') n--;
            s[n] = '\0';
            l->line++;
            *line = s;
            *len = n;
            return 1;
        }
        if (l->eof) return 0;
        /* Make room: move the partial line to the front, grow if full. */
        if (l->start > 0) {
            memmove(l->buf, l->buf + l->start, l->end - l->start);
            l->end -= l->start;
            l->start = 0;
        }
        if (l->end + 1 >= l->cap) {
            if (l->cap >= PX_LINE_MAX) {
                snprintf(err, cap, "%s:%lld: the line is longer than %zu MiB", l->path,
                         (long long)l->line + 1, PX_LINE_MAX >> 20);
                return -1;
            }
            char *grown = realloc(l->buf, 2 * l->cap);
            if (!grown) {
                snprintf(err, cap, "out of memory");
                return -1;
            }
            l->buf = grown;
            l->cap *= 2;
        }
        ssize_t n = read_text(l, l->cap - l->end - 1, err, cap); /* room for a '\0' */
        if (n < 0) return -1;
        if (n == 0) l->eof = 1;
        l->end += (size_t)n;
        l->text_read += n;
    }
}

int px_lines_rewind(px_lines *l, char *err, size_t cap) {
    if (l->file_read == 0) return 0; /* nothing read yet (standard input too) */
    if (lseek(l->fd, 0, SEEK_SET) < 0) return fail_io(l, err, cap, "cannot rewind");
    l->start = l->end = 0;
    l->eof = l->z_done = 0;
    l->line = l->file_read = l->text_read = 0;
    if (l->gz) {
        inflateEnd(&l->zs);
        if (start_gz(l)) {
            snprintf(err, cap, "out of memory");
            return -1;
        }
    }
    return 0;
}

int64_t px_lines_number(const px_lines *l) {
    return l->line;
}

int64_t px_lines_file_read(const px_lines *l) {
    return l->file_read;
}

int64_t px_lines_file_size(const px_lines *l) {
    return l->file_size;
}

int64_t px_lines_text_read(const px_lines *l) {
    return l->text_read;
}

const char *px_lines_path(const px_lines *l) {
    return l->path;
}

void px_lines_close(px_lines *l) {
    if (!l) return;
    if (l->gz && l->in) inflateEnd(&l->zs);
    if (l->fd >= 0) close(l->fd);
    free(l->in);
    free(l->buf);
    free(l);
}
