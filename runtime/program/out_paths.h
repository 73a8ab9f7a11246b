/* The files a training run writes must be distinct from each other and from
 * the checkpoint it resumes: --save X --checkpoint X would leave the model
 * where the checkpoint was expected, --losses Y --stats Y one of them lost. */
#ifndef PX_OUT_PATHS_H
#define PX_OUT_PATHS_H

#include <stddef.h>

typedef struct px_named_path {
    const char *flag; /* "--save" */
    const char *path; /* NULL: not given */
} px_named_path;

/* Whether a and b name the same file, existing or not: the same inode when
 * both exist, else the same resolved folder and the same last component. */
int px_same_file(const char *a, const char *b);

/* Index pairs (i, j) of paths that name the same file, except where
 * allowed(i, j) says so; the first collision is described in msg. Returns 1
 * on a collision, 0 if none. */
int px_find_path_collision(const px_named_path *p, int n, int (*allowed)(int i, int j), char *msg,
                           size_t cap);

#endif
