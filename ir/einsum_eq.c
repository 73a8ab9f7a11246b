#include "einsum_eq.h"

#include <stdio.h>
#include <string.h>

static int is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Reads letters up to a ',' or '-' or the end into dst; -1 on a bad char. */
static int read_term(const char **p, int general, char *dst, int *ell, char *why, size_t cap) {
    int n = 0;
    *ell = -1;
    for (; **p && **p != ',' && **p != '-'; (*p)++) {
        char c = **p;
        if (c == ' ') continue;
        if (c == '.' && general && *ell < 0 && (*p)[1] == '.' && (*p)[2] == '.') {
            *ell = n;
            *p += 2;
            continue;
        }
        if (c == '.') {
            if (general) {
                snprintf(why, cap, "a misplaced or repeated '...'");
                return -1;
            }
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
        if (!general && memchr(dst, c, (size_t)n)) {
            snprintf(why, cap,
                     "index '%c' repeats within one term: Einsum does not support diagonals", c);
            return -1;
        }
        dst[n++] = c;
    }
    dst[n] = 0;
    return 0;
}

int px_einsum_parse(const char *eq, int general, px_einsum_eq *e, char *why, size_t cap) {
    memset(e, 0, sizeof *e);
    int any_ell = 0;
    const char *p = eq;
    for (;;) {
        if (e->n_ops == PX_EINSUM_MAX_OPS) {
            snprintf(why, cap, "more than %d operands", PX_EINSUM_MAX_OPS);
            return -1;
        }
        int i = e->n_ops++;
        if (read_term(&p, general, e->ops[i], &e->ell[i], why, cap)) return -1;
        any_ell |= e->ell[i] >= 0;
        if (*p != ',') break;
        p++;
    }
    if (*p == '-') {
        if (p[1] != '>') {
            snprintf(why, cap, "expected '->'");
            return -1;
        }
        p += 2;
        if (read_term(&p, general, e->out, &e->out_ell, why, cap)) return -1;
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
    /* implicit output: the ellipsis dims, then the letters used once,
     * alphabetically (upper first, as ASCII) */
    e->out_ell = any_ell ? 0 : -1;
    int n = 0;
    for (int c = 'A'; c <= 'z'; c++) {
        if (!is_letter((char)c)) continue;
        int count = 0;
        for (int i = 0; i < e->n_ops; i++)
            for (const char *l = e->ops[i]; *l; l++) count += *l == c;
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
