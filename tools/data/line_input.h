/* Lines of a text file, plain or gzip-compressed (detected by its magic
 * bytes; concatenated gzip members are read through), read in large chunks
 * with bounded memory: a line longer than PX_LINE_MAX is an error. */
#ifndef PX_LINE_INPUT_H
#define PX_LINE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define PX_LINE_MAX ((size_t)16 << 20)

typedef struct px_lines px_lines;

/* -1 with a message when path cannot be opened (or is not a regular file);
 * "-" reads standard input (plain text, read once: no rewind). */
int px_lines_open(px_lines **out, const char *path, char *err, size_t cap);
/* The next line, without its line break (a "\r\n" loses the '\r' too);
 * the pointer stays valid until the next call. 1: a line, 0: end of file,
 * -1: an error (message names the file and line). */
int px_lines_next(px_lines *l, char **line, size_t *len, char *err, size_t cap);
/* The number of the line px_lines_next returned last (from 1). */
int64_t px_lines_number(const px_lines *l);
/* Bytes of the file read so far (compressed bytes for gzip), and its size. */
int64_t px_lines_file_read(const px_lines *l);
int64_t px_lines_file_size(const px_lines *l);
/* Bytes of text read so far (after decompression). */
int64_t px_lines_text_read(const px_lines *l);
const char *px_lines_path(const px_lines *l);
/* Back to the start of the file. */
int px_lines_rewind(px_lines *l, char *err, size_t cap);
void px_lines_close(px_lines *l);

#endif
