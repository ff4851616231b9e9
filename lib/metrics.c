/* metrics.c - placeholder until the module lands. */
