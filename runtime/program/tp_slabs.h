/* Variables a --tp program stores split (px_program_desc.var_tp_axis): rank
 * t of a tensor-parallel group of K holds slab t of K of the variable along
 * one axis (of each of its var_tp_sections sections), and only that (with
 * its optimizer state). What leaves the run
 * (--save, checkpoints) and what enters it (the model's weights, a
 * checkpoint) is the whole, unsplit variable: these helpers map between
 * the two. A checkpoint written under one --tp resumes under another. */
#ifndef PX_TP_SLABS_H
#define PX_TP_SLABS_H

#include "px_program.h"

/* The bytes of this rank's activation arena: under --pp, the buffers
 * shared by every stage and its own stage's (px_program_desc.pp_arena_bytes). */
int64_t px_arena_bytes_held(const px_program_desc *p);
/* 1 if variable v is stored as a slab. */
int px_tp_var_split(const px_program_desc *p, int64_t v);
/* Variable v as the model and the files see it: its descriptor with the
 * whole variable's rank, dims and nbytes (data NULL when split). */
px_var_desc px_tp_full_var(const px_program_desc *p, int64_t v);
/* slab = this rank's slab of full (the whole variable's values). */
void px_tp_take_slab(const px_program_desc *p, int64_t v, const float *full, float *slab);
/* full = the whole variable from the slabs of this rank's group. Collective
 * over every rank (each group gathers its own). */
void px_tp_gather(const px_program_desc *p, int64_t v, const float *slab, float *full);

/* A checkpoint's reader reads a split variable block by block
 * (px_tp_unpack_rows): rows [r0, r0 + k) of it as the checkpoint stores
 * them in buf (each row's dim values, then the same row of each of its
 * n_slots optimizer slots), of which this rank keeps the elements of its
 * slab. */
void px_tp_unpack_rows(const px_program_desc *p, int64_t v, int n_slots, int64_t r0, int64_t k,
                       int64_t dim, const float *buf);
/* Whether a checkpoint's rank 0 writes variable v from rows sent to it
 * block by block (px_tp_stream_rows), holding no copy of v: v is stored
 * split (--tp: the group of the first pipeline at v's stage gathers each
 * block), or a later stage than rank 0's holds it (--pp: that stage's
 * first rank sends each block). */
int px_tp_streamed(const px_program_desc *p, int64_t v);
/* Rows [r0, r0 + k) of a streamed variable v and of each of its n_slots
 * optimizer slots, gathered from the slabs when split and sent by the
 * first rank of v's stage when a later stage holds it, received by rank 0
 * into rows[1 + slot] (k * dim floats each; set NULL where v has no such
 * slot). The ranks of the first pipeline holding v and rank 0 call it for
 * each block, in the order rank 0 writes them; the other ranks return at
 * once. */
void px_tp_stream_rows(const px_program_desc *p, int64_t v, int n_slots, int64_t r0, int64_t k,
                       int64_t dim, float **rows);
/* out = whole elements [a, a + n) of split variable v (row-major, as the
 * model sees it) from the slabs of this rank's group (slab: this rank's,
 * of the values or of a slot): each rank sends only its elements of the
 * range. Collective over the group; out is filled on its first rank (t =
 * 0), and may be NULL on the others. */
void px_tp_gather_range(const px_program_desc *p, int64_t v, const float *slab, int64_t a,
                        int64_t n, float *out);
#endif
