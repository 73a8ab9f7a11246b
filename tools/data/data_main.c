#include "data_main.h"

#include "data_job.h"

#include <stdio.h>
#include <string.h>

static const char help[] =
    "usage: parallaxc data criteo|csv|tokens IN... -o DIR [options]\n"
    "\n"
    "Converts streaming input, in bounded memory, into a sharded dataset: DIR/manifest.txt\n"
    "and DIR/shard-NNNNN/<input>.npy, which a training program reads with --data DIR (each\n"
    "rank only its share). The manifest is written last: an interrupted conversion leaves\n"
    "no dataset that looks finished, and running it again starts over.\n"
    "  criteo   Criteo click logs (.tsv or .tsv.gz) in DLRM's input layout\n"
    "  csv      delimited columns, described by --schema\n"
    "  tokens   a text corpus as fixed-length windows of word ids (an LM's tokens and\n"
    "           targets), with a vocabulary capped by frequency\n"
    "'parallaxc data COMMAND --help' describes each.\n";

int px_data_main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(help, argc < 2 ? stderr : stdout);
        return argc < 2 ? PX_DATA_USAGE : PX_DATA_OK;
    }
    if (!strcmp(argv[1], "criteo")) return px_data_criteo(argc - 1, argv + 1);
    if (!strcmp(argv[1], "csv")) return px_data_csv(argc - 1, argv + 1);
    if (!strcmp(argv[1], "tokens")) return px_data_tokens(argc - 1, argv + 1);
    fprintf(stderr, "parallaxc data: unknown converter '%s' (criteo, csv or tokens)\n", argv[1]);
    return PX_DATA_USAGE;
}
