/* libFuzzer harness: a sharded dataset's manifest (runtime/program/
 * dataset_manifest.c), parsed from the input's bytes; what parses is
 * formatted again (px_manifest_format sets its hash to the new text's) and
 * must parse to the same fields. */
#include "dataset_manifest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024];
    px_manifest m;
    if (px_manifest_parse((const char *)data, size, "fuzz", &m, err, sizeof err) != 0) return 0;
    /* Every field is walked: names, shapes, per-shard sizes. */
    volatile int64_t sink = m.samples + m.block_rows;
    for (int i = 0; i < m.n_inputs; i++)
        sink += m.inputs[i].sample_bytes + (int64_t)strlen(m.inputs[i].name);
    for (int64_t s = 0; s < m.n_shards; s++)
        for (int i = 0; i < m.n_inputs; i++) sink += m.shards[s].file_bytes[i] + m.shards[s].first;
    (void)sink;
    size_t len;
    char *text = px_manifest_format(&m, &len);
    px_manifest again;
    /* A manifest we accept formats into one we accept that says the same. */
    if (!text || px_manifest_parse(text, len, "again", &again, err, sizeof err) != 0 ||
        again.samples != m.samples || again.block_rows != m.block_rows ||
        again.n_inputs != m.n_inputs || again.n_shards != m.n_shards || again.hash != m.hash)
        abort();
    free(text);
    px_manifest_free(&again);
    px_manifest_free(&m);
    return 0;
}
