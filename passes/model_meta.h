/* The parallax.* metadata_props of a model (docs/metadata.md): the
 * trainable set, tied initializers and padding_idx rows the export helper
 * (python/parallax/_stamp.py) wrote, read and checked against the graph.
 *
 *   px_model_meta_read   parses and checks the keys (names that are float
 *                        initializers, rows in range, ties whose copies hold
 *                        exactly the transposed values)
 *   px_pass_apply_ties   makes every tied copy a view of its source: the
 *                        uses of the copy read Transpose/Reshape(source)
 *
 * The variable plan (var_plan.c) trains exactly the trainable set when there
 * is one; autodiff zeroes the gradient rows of padding_idx rows. */
#ifndef PX_MODEL_META_H
#define PX_MODEL_META_H

#include "graph.h"

typedef struct px_tie {
    char *copy; /* the initializer that is a copy */
    char *of;   /* the initializer it copies */
    int n_perm; /* 0: no transpose */
    int64_t perm[PX_MAX_RANK];
} px_tie;

typedef struct px_model_meta {
    int present;       /* the model has parallax.* keys */
    int has_trainable; /* parallax.trainable given: trainable[] is the whole set */
    int n_trainable;
    char **trainable;
    int n_ties;
    px_tie *ties;
    int n_padding;
    char **padding_tables;
    int64_t *padding_rows;
} px_model_meta;

/* Reads g's parallax.* keys into m (zeroed first; all absent: m->present 0).
 * -1 with an error naming the key on a version it does not know, bad JSON,
 * a name that is not a float initializer of g, a row out of range or a tie
 * whose copy does not hold its source's values. Free with
 * px_model_meta_free, also after an error. */
int px_model_meta_read(const px_graph *g, px_model_meta *m, px_diag *d);
void px_model_meta_free(px_model_meta *m);

/* The padding_idx row of table name, or -1 (m may be NULL). */
int64_t px_model_meta_padding_row(const px_model_meta *m, const char *name);
/* 1 if parallax.trainable lists name; 1 if parallax.ties lists it as a copy. */
int px_model_meta_is_trainable(const px_model_meta *m, const char *name);
int px_model_meta_is_tied_copy(const px_model_meta *m, const char *name);

/* Rewires every use of each tied copy to Transpose(of, perm) (and Reshape to
 * the copy's shape where it differs), nodes named "tie/<copy>". The copies
 * stay initializers, unread. */
int px_pass_apply_ties(px_graph *g, const px_model_meta *m, px_diag *d);

#endif
