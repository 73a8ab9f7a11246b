/* Which files a run may write: the checks of the output policy that the
 * compiler and a generated program share (file_atomic.h does the writing).
 *
 *   - an output is a regular file (replaced whole), a path where nothing is
 *     yet, or a character device (/dev/null, a terminal: written in place);
 *     a folder, FIFO, socket or block device is refused;
 *   - no output may be an input of the run (the model, its weights and
 *     external data, data files, evaluation data, the checkpoint being
 *     resumed, the program itself): the same file when it exists (same
 *     inode: links and hard links included), else the same resolved path;
 *   - no two outputs may be the same file (two outputs on one character
 *     device are fine: both stream through it, nothing is replaced).
 * Messages name both flags. */
#ifndef PX_OUT_PATHS_H
#define PX_OUT_PATHS_H

#include <stddef.h>

typedef struct px_named_path {
    const char *flag; /* "--save"; for an input, what it is: "--data", "the program" */
    const char *path; /* NULL: not given */
} px_named_path;

/* A list of named paths that owns its strings. */
typedef struct px_path_list {
    px_named_path *items;
    int n, cap;
} px_path_list;

/* Appends (copies of) flag and path; -1 when out of memory. */
int px_path_list_add(px_path_list *l, const char *flag, const char *path);
void px_path_list_free(px_path_list *l);

/* Whether a and b name the same file, existing or not: the same inode when
 * both exist, else the same resolved folder and the same last component. */
int px_same_file(const char *a, const char *b);

/* 1 when path exists and is a character device (following links). */
int px_is_char_device(const char *path);

/* Whether path may be an output: 0 when it is a regular file, nothing yet,
 * or a character device; -1 with a message naming flag and path when it is
 * a folder, FIFO, socket or block device. */
int px_output_kind_ok(const char *flag, const char *path, char *msg, size_t cap);

/* Index pairs (i, j) of paths that name the same file, except where
 * allowed(i, j) says so and where both are the same character device; the
 * first collision is described in msg. Returns 1 on a collision, 0 if none. */
int px_find_path_collision(const px_named_path *p, int n, int (*allowed)(int i, int j), char *msg,
                           size_t cap);

/* The first output (of outs) that is the same file as an input (of ins),
 * described in msg naming both. Returns 1 on a clash, 0 if none. */
int px_find_input_clash(const px_named_path *outs, int n_out, const px_named_path *ins, int n_in,
                        char *msg, size_t cap);

/* The running program's own file (/proc/self/exe resolved) into out (cap
 * bytes); -1 when it cannot be found. */
int px_self_path(char *out, size_t cap);

#endif
