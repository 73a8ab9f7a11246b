/* `parallaxc data`: converters from the formats users hold (click logs,
 * CSV, text corpora) to sharded datasets. Each returns the exit status:
 * 0, 1 (the input or the output failed), 2 (the command line). */
#ifndef PX_DATA_MAIN_H
#define PX_DATA_MAIN_H

/* argv[0] is "data". */
int px_data_main(int argc, char **argv);
/* argv[0] is the converter's name. */
int px_data_criteo(int argc, char **argv);
int px_data_csv(int argc, char **argv);
int px_data_tokens(int argc, char **argv);

#endif
