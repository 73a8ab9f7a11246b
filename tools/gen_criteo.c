/* px_gen_criteo: synthetic click logs in the Criteo format (docs/data.md):
 * tab-separated label, 13 integer features, 26 categorical features as 8
 * hex digits, empty fields for missing values, written as fast as the disk
 * takes them (for the converter's benchmark and the Criteo example).
 *
 * The features are Criteo-shaped: categorical feature k takes one of C_k
 * values (by default the cardinalities of Criteo's Kaggle release, times
 * --scale) with Zipf-distributed frequencies, the integer features are
 * heavy-tailed counts (some negative, as I2 is), every feature is missing
 * at its own rate. The label is a Bernoulli draw from
 *   sigmoid(bias + sum_k strength_k * effect(k, value_k) + sum_i a_i * (log(1 + x_i) - 2))
 * where effect(k, v) is a fixed pseudo-random N(0,1)-like number per value,
 * so that a model that learns the frequent values' embeddings (and the
 * dense weights) can rank clicks well above chance: the best achievable
 * AUC on the default settings is about 0.80.
 *
 *   px_gen_criteo OUT.tsv (--lines N | --bytes B) [--seed S] [--scale F]
 * OUT.tsv "-" writes to standard output (parallaxc data criteo - reads it). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_DENSE 13
#define N_CAT 26

/* Criteo Kaggle (Display Advertising Challenge) cardinalities. */
static const double kaggle_cardinality[N_CAT] = {
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};
static const double cat_missing[N_CAT] = {0.0,  0.0,  0.03, 0.03, 0.0, 0.12, 0.0,  0.0, 0.0,
                                          0.0,  0.0,  0.03, 0.0,  0.0, 0.0,  0.03, 0.0, 0.0,
                                          0.44, 0.44, 0.03, 0.0,  0.0, 0.44, 0.0,  0.44};
static const double dense_missing[N_DENSE] = {0.45, 0.0,  0.21, 0.22, 0.03, 0.22, 0.04,
                                              0.0,  0.04, 0.45, 0.04, 0.77, 0.22};
/* How much each categorical feature says about a click. */
static const double cat_strength[N_CAT] = {0.5, 0.4, 0.7, 0.6, 0.2, 0.3, 0.5, 0.2, 0.1,
                                           0.4, 0.5, 0.6, 0.3, 0.2, 0.5, 0.6, 0.1, 0.4,
                                           0.3, 0.1, 0.6, 0.2, 0.2, 0.4, 0.3, 0.4};
static const double dense_weight[N_DENSE] = {0.25,  -0.1, 0.05, -0.15, 0.1, -0.2, 0.3,
                                             -0.05, 0.15, 0.2,  -0.1,  0.1, -0.25};
static const double dense_scale[N_DENSE] = {3, 100, 15, 6, 9000, 100, 15, 20, 100, 1, 4, 2, 9};

static uint64_t rng_state;

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t next_u64(void) {
    rng_state += 0x9e3779b97f4a7c15ULL;
    return mix(rng_state);
}

static double uniform(void) {
    return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

#define ZIPF_E (1 - 1.05) /* 1 - the exponent s */

/* A Zipf(1.05)-like rank in [1, n] by inverting the continuous power law;
 * span is zipf_span(n), computed once per table (a pow per draw saved). */
static double zipf_span(double n) {
    return pow(n + 1, ZIPF_E) - 1;
}

static uint64_t zipf_rank(double n, double span) {
    double u = uniform(), r = pow(span * u + 1, 1 / ZIPF_E);
    uint64_t k = (uint64_t)r;
    return k < 1 ? 1 : k > (uint64_t)n ? (uint64_t)n : k;
}

/* Fixed per (feature, value): roughly N(0, 1) (the sum of four uniforms). */
static double effect(int k, uint64_t rank) {
    uint64_t h = mix(rank * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(k + 1) * 0xd1b54a32d192ed03ULL);
    double s = 0;
    for (int i = 0; i < 4; i++, h = mix(h)) s += (double)(h >> 11) * (1.0 / 9007199254740992.0);
    return (s - 2.0) * 1.7320508;
}

static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static char *put_hex8(char *p, uint32_t v) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 7; i >= 0; i--) p[7 - i] = digits[(v >> (4 * i)) & 15];
    return p + 8;
}

static void usage(void) {
    fprintf(stderr,
            "usage: px_gen_criteo OUT.tsv (--lines N | --bytes B) [--seed S] [--scale F]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *out = NULL;
    long long lines = -1, bytes = -1;
    unsigned long long seed = 1;
    double scale = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            out = a;
            continue;
        }
        if (i + 1 >= argc) usage();
        char *end;
        const char *v = argv[++i];
        errno = 0;
        if (!strcmp(a, "--lines"))
            lines = strtoll(v, &end, 10);
        else if (!strcmp(a, "--bytes"))
            bytes = strtoll(v, &end, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--scale"))
            scale = strtod(v, &end);
        else
            usage();
        if (errno || *end || end == v) usage();
    }
    if (!out || (lines < 0) == (bytes < 0) || !(scale > 0 && scale <= 1)) usage();
    FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "px_gen_criteo: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    static char buf[1 << 20];
    setvbuf(f, NULL, _IOFBF, 4 << 20);
    double card[N_CAT], span[N_CAT];
    for (int k = 0; k < N_CAT; k++) {
        card[k] = fmax(2, floor(kaggle_cardinality[k] * scale));
        span[k] = zipf_span(card[k]);
    }
    rng_state = mix(seed);
    long long written = 0, n = 0;
    while (lines >= 0 ? n < lines : written < bytes) {
        char *p = buf;
        char *end = buf + sizeof buf - 512;
        for (; p < end && (lines >= 0 ? n < lines : written + (p - buf) < bytes); n++) {
            char *line = p;
            p += 2; /* the label goes first, once it is drawn */
            double logit = -1.3;
            for (int i = 0; i < N_DENSE; i++) {
                if (uniform() >= dense_missing[i]) {
                    /* heavy-tailed counts: exp of a uniform times the scale */
                    double x = floor(dense_scale[i] * (exp(3 * uniform()) - 1) / 6);
                    if (i == 1 && uniform() < 0.1) {
                        *p++ = '-';
                        p = put_u64(p, 1 + (uint64_t)(uniform() * 3));
                        x = 0;
                    } else {
                        p = put_u64(p, (uint64_t)x);
                    }
                    logit += dense_weight[i] * (log1p(x) - 2);
                }
                *p++ = '\t';
            }
            for (int k = 0; k < N_CAT; k++) {
                if (uniform() >= cat_missing[k]) {
                    uint64_t r = zipf_rank(card[k], span[k]);
                    p = put_hex8(p, (uint32_t)mix(r ^ (uint64_t)k << 40));
                    logit += cat_strength[k] * effect(k, r);
                }
                *p++ = k + 1 < N_CAT ? '\t' : '\n';
            }
            line[0] = uniform() < 1 / (1 + exp(-logit)) ? '1' : '0';
            line[1] = '\t';
        }
        size_t len = (size_t)(p - buf);
        if (fwrite(buf, 1, len, f) != len) {
            fprintf(stderr, "px_gen_criteo: cannot write %s: %s\n", out, strerror(errno));
            return 1;
        }
        written += (long long)len;
    }
    if (fclose(f)) {
        fprintf(stderr, "px_gen_criteo: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    return 0;
}
