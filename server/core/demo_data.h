/* demo.h - `sextant demo-data`: a deterministic demo dataset. */
#ifndef SEXTANT_DEMO_H
#define SEXTANT_DEMO_H

/* The demo-data command: argv[1] is "demo-data".  Returns an exit code
 * (0 ok, 1 runtime failure, 2 usage or configuration error). */
int demo_data_main(int argc, char **argv);

#endif
