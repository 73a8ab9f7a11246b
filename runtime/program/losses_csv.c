#include "losses_csv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "step,loss\n"

/* The kept lines of an earlier run: those with a step in 1..keep_through,
 * in order, stopping at the first line that does not continue the count. */
static char *kept_lines(const char *path, int64_t keep_through, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[256];
    char *kept = NULL;
    size_t cap = 0;
    int64_t expect = 1;
    if (!fgets(line, sizeof line, f) || strcmp(line, HEADER)) {
        fclose(f);
        return NULL;
    }
    while (expect <= keep_through && fgets(line, sizeof line, f)) {
        char *end;
        long long step = strtoll(line, &end, 10);
        size_t n = strlen(line);
        if (step != expect || *end != ',' || n == 0 || line[n - 1] != '\n') break;
        if (*len + n > cap) {
            cap = (cap ? cap * 2 : 4096) + n;
            char *grown = realloc(kept, cap);
            if (!grown) break;
            kept = grown;
        }
        memcpy(kept + *len, line, n);
        *len += n;
        expect++;
    }
    fclose(f);
    return kept;
}

FILE *px_losses_open(const char *path, int64_t keep_through, char *err, size_t cap) {
    size_t len = 0;
    char *kept = keep_through > 0 ? kept_lines(path, keep_through, &len) : NULL;
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, cap, "cannot write --losses %s: %s", path, strerror(errno));
        free(kept);
        return NULL;
    }
    fputs(HEADER, f);
    if (len) fwrite(kept, 1, len, f);
    free(kept);
    fflush(f);
    return f;
}

void px_losses_add(FILE *f, int64_t step, double loss) {
    fprintf(f, "%lld,%.9g\n", (long long)step, loss);
}
