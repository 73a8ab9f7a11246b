#include "testdata.h"

#include "onnx_io.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int px_testdata_walk(const char *root, void (*fn)(const char *dir, const char *name, void *ctx),
                     void *ctx) {
    static const char *suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    int visited = 0;
    for (size_t s = 0; s < sizeof suites / sizeof *suites; s++) {
        char sdir[2048];
        snprintf(sdir, sizeof sdir, "%s/%s", root, suites[s]);
        DIR *dh = opendir(sdir);
        if (!dh) continue;
        char **names = NULL;
        int n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(dh))) {
            if (e->d_name[0] == '.') continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                names = realloc(names, (size_t)cap * sizeof *names);
            }
            names[n++] = strdup(e->d_name);
        }
        closedir(dh);
        qsort(names, (size_t)n, sizeof *names, cmp_str);
        for (int i = 0; i < n; i++) {
            char dir[8192], model[8300];
            struct stat st;
            snprintf(dir, sizeof dir, "%s/%s", sdir, names[i]);
            snprintf(model, sizeof model, "%s/model.onnx", dir);
            if (stat(model, &st) == 0) {
                fn(dir, names[i], ctx);
                visited++;
            }
            free(names[i]);
        }
        free(names);
    }
    return visited;
}

px_tensor **px_testdata_load_set(const char *dir, int set, const char *prefix, int *count,
                                 px_diag *d) {
    px_tensor **ts = NULL;
    *count = 0;
    for (int k = 0;; k++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/test_data_set_%d/%s_%d.pb", dir, set, prefix, k);
        if (stat(path, &st) != 0) break;
        px_tensor *t = px_onnx_load_tensor_file(path, NULL, d);
        if (!t) {
            px_tensors_free(ts, *count);
            *count = 0;
            return NULL;
        }
        ts = realloc(ts, (size_t)(k + 1) * sizeof *ts);
        ts[k] = t;
        *count = k + 1;
    }
    return ts;
}

void px_tensors_free(px_tensor **ts, int count) {
    if (!ts) return;
    for (int i = 0; i < count; i++) px_tensor_free(ts[i]);
    free(ts);
}

int px_allowlist_load(const char *path, px_allowlist *al) {
    al->n = 0;
    al->names = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
            *--e = '\0';
        if (!*s) continue;
        al->names = realloc(al->names, (size_t)(al->n + 1) * sizeof *al->names);
        al->names[al->n++] = strdup(s);
    }
    fclose(f);
    return 0;
}

int px_allowlist_has(const px_allowlist *al, const char *name) {
    for (int i = 0; i < al->n; i++)
        if (strcmp(al->names[i], name) == 0) return 1;
    return 0;
}

void px_allowlist_free(px_allowlist *al) {
    for (int i = 0; i < al->n; i++) free(al->names[i]);
    free(al->names);
    al->names = NULL;
    al->n = 0;
}
