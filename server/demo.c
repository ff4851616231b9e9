/* demo.c - placeholder until `sextant demo-data` lands. */
#include <stdio.h>

#include "demo.h"

int
demo_data_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "sextant: demo-data is not available in this build\n");
	return 1;
}
