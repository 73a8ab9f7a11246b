#include "einsum_eq.h"

#include <stdio.h>
#include <string.h>

static int is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Reads letters up to a ',' or '-' or the end into dst; -1 on a bad char. */
static int read_term(const char **p, char *dst, char *why, size_t cap) {
    int n = 0;
    for (; **p && **p != ',' && **p != '-'; (*p)++) {
        char c = **p;
        if (c == ' ') continue;
        if (c == '.') {
            snprintf(why, cap, "Einsum does not support ellipsis ('...')");
            return -1;
        }
        if (!is_letter(c)) {
            snprintf(why, cap, "unexpected character '%c'", c);
            return -1;
        }
        if (n >= PX_MAX_RANK) {
            snprintf(why, cap, "a term has more than %d indices", PX_MAX_RANK);
            return -1;
        }
        if (memchr(dst, c, (size_t)n)) {
            snprintf(why, cap,
                     "index '%c' repeats within one term: Einsum does not support diagonals", c);
            return -1;
        }
        dst[n++] = c;
    }
    dst[n] = 0;
    return 0;
}

int px_einsum_parse(const char *eq, px_einsum_eq *e, char *why, size_t cap) {
    memset(e, 0, sizeof *e);
    const char *p = eq;
    for (;;) {
        if (e->n_ops == PX_EINSUM_MAX_OPS) {
            snprintf(why, cap, "more than %d operands", PX_EINSUM_MAX_OPS);
            return -1;
        }
        if (read_term(&p, e->ops[e->n_ops++], why, cap)) return -1;
        if (*p != ',') break;
        p++;
    }
    if (*p == '-') {
        if (p[1] != '>') {
            snprintf(why, cap, "expected '->'");
            return -1;
        }
        p += 2;
        if (read_term(&p, e->out, why, cap)) return -1;
        if (*p) {
            snprintf(why, cap, "unexpected '%c' in the output term", *p);
            return -1;
        }
        for (const char *c = e->out; *c; c++) {
            int seen = 0;
            for (int i = 0; i < e->n_ops; i++) seen |= strchr(e->ops[i], *c) != NULL;
            if (!seen) {
                snprintf(why, cap, "output index '%c' appears in no input", *c);
                return -1;
            }
        }
        return 0;
    }
    /* implicit output: the letters used once, alphabetically (upper first, as ASCII) */
    int n = 0;
    for (int c = 'A'; c <= 'z'; c++) {
        if (!is_letter((char)c)) continue;
        int count = 0;
        for (int i = 0; i < e->n_ops; i++) count += strchr(e->ops[i], c) != NULL;
        if (count != 1) continue;
        if (n >= PX_MAX_RANK) {
            snprintf(why, cap, "the output has more than %d indices", PX_MAX_RANK);
            return -1;
        }
        e->out[n++] = (char)c;
    }
    e->out[n] = 0;
    return 0;
}
