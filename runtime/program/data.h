/* Training data: one file per graph input, samples along dim 0, memory-mapped
 * (.npy) so only the rows a step reads are paged in. */
#ifndef PX_DATA_H
#define PX_DATA_H

#include "data_order.h"
#include "dataset_manifest.h"
#include "npy.h"
#include "out_paths.h"
#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_dataset {
    int64_t n_inputs;
    px_array *arrays;      /* one per program input */
    char **paths;          /* the file each came from */
    int64_t *sample_bytes; /* bytes of one sample of each input */
    int64_t samples;       /* samples in every file (-1: the model has no inputs) */
} px_dataset;

/* "[2,3]" */
void px_shape_text(char *buf, size_t cap, int rank, const int64_t *dims);

/* Whether two of io[0..n) have the same file in dir (px_data_file_name):
 * 1 with a message naming both (`what`: "input", "output"), 0 if not, -1
 * when out of memory. */
int px_data_name_clash(const px_io_desc *io, int64_t n, const char *dir, const char *what,
                       char *msg, size_t cap);
/* Adds the files px_data_open would read from dir to l (out_paths.h), each
 * named flag ("--data"). -1 when out of memory. */
int px_data_input_files(const px_program_desc *p, const char *dir, const char *flag,
                        px_path_list *l);
/* Opens and checks every input's file against the program (dtype, shape
 * after dim 0, equal sample counts). -1 with a message naming the file. */
int px_data_open(px_dataset *ds, const px_program_desc *p, const char *dir, char *err, size_t cap);
/* The fingerprint of input i: dtype, shape and a checksum of every byte of
 * the contents (compared across ranks to catch ranks reading different data;
 * px_checksum runs at several GB/s). */
uint64_t px_data_fingerprint(const px_dataset *ds, int64_t i);
/* Copies this rank's rows of step s's global batch into the input buffers. */
void px_data_fill(const px_dataset *ds, const px_program_desc *p, px_order *o, int64_t step,
                  int rank);
/* The same for input i alone, into out (the input's nbytes). */
void px_data_fill_input(const px_dataset *ds, const px_program_desc *p, px_order *o, int64_t step,
                        int rank, int64_t i, void *out);
void px_data_close(px_dataset *ds);

#endif
