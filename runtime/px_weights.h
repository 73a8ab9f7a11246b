/* The program's weights, read from the ONNX model at start instead of being
 * linked into the executable (runtime/program/weights.c). */
#ifndef PX_WEIGHTS_H
#define PX_WEIGHTS_H

#include "out_paths.h"
#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

/* Opens the model (path_override, else p->weights_path) and checks it
 * against the compiled weights (names, dtypes, shapes) and graph: 0, or -1
 * with a message naming the model and the first mismatch in err. Optional:
 * px_weights_load does it when it was not done. */
int px_weights_open(const px_program_desc *p, const char *path_override, char *err, size_t cap);

/* Opens and checks the model as px_weights_open does, and fills every
 * weight slot, the variables' data, the arena and the io descriptors' data.
 * Trained variables get their own memory copied from the model (none when
 * local_storage is 0); frozen weights may point into the mapped file. Ends
 * the program (px_rt_fail) with a message naming the model and the first
 * mismatch. Called once, before anything reads the descriptor's data. */
void px_weights_load(const px_program_desc *p, const char *path_override);

/* The model the weights were read from (NULL before px_weights_load). */
const char *px_weights_model_path(void);
/* Adds the files the weights are read from to l (out_paths.h): the model,
 * named `what`, and every external data file it names; nothing when no
 * model was opened. -1 when out of memory. */
int px_weights_input_files(const char *what, px_path_list *l);

/* Index into p->weights of variable var's initial value (-1: none).
 * Generated code reaches weight w only through *p->weights[w].slot, loaded
 * afresh at every kernel call: a variable with local_storage 0 starts with a
 * NULL slot and NULL data, and whatever provides its rows (the PS row cache)
 * sets both; it may repoint the slot between kernel calls. */
int64_t px_weights_of_var(int64_t var);

/* Bytes of the frozen weights (weights that are no variable) px_weights_load
 * gave the program; *in_file (may be NULL): those of them that point into
 * the model's mapping or its external data's (file-backed pages: resident
 * once read) instead of a private copy. */
int64_t px_weights_frozen_bytes(int64_t *in_file);

/* Copies rows [row0, row0 + nrows) (along dim 0) of a weight's initial
 * value from the model into dst: pread for external data, a copy from the
 * mapping for inline data. Thread-safe. Ends the program on a bad range or a
 * read error. */
void px_weights_read_rows(int64_t weight, int64_t row0, int64_t nrows, void *dst);
/* Rows [row0, row0 + nrows) of a weight's initial value mapped from the
 * model's external data file, private and writable (copy-on-write: a page
 * is copied the first time it is written; until then it is the file's page
 * cache, so the rows cost no memory and no copy at start). NULL when the
 * weight is not external data, the rows do not start on a page of the
 * file, or the mapping fails: then read them. Free with munmap. The file
 * must not be rewritten in place while the program runs. */
void *px_weights_map_rows(int64_t weight, int64_t row0, int64_t nrows);

#endif
