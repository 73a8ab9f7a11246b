/* The synchronization mode of a run (--wire, --wire-error-feedback,
 * --sync-every, --local-sgd-after, --staleness; docs/relaxed_sync.md) in
 * words, as flags and as JSON: the progress line, --stats, run.json and
 * the message of a resume under another mode name it the same way. */
#ifndef PX_SYNC_MODE_H
#define PX_SYNC_MODE_H

#include "px_train.h"

#include <stddef.h>
#include <stdio.h>

/* Whether o relaxes anything (else: exact). */
int px_sync_mode_relaxed(const px_comm_opts *o);
/* "exact", or e.g. "wire bf16 with error feedback, sync every 4 (after
 * 100 exact steps), staleness 2". */
void px_sync_mode_name(const px_comm_opts *o, char *out, size_t cap);
/* The flags that give o, e.g. "--wire bf16 --staleness 2" ("" when exact). */
void px_sync_mode_flags(const px_comm_opts *o, char *out, size_t cap);
/* Whether a and b differ in any relaxed setting. */
int px_sync_mode_differs(const px_comm_opts *a, const px_comm_opts *b);
/* "\"sync_mode\": {...}": the name and every setting. */
void px_sync_mode_json(FILE *f, const px_comm_opts *o);

#endif
