/* otlp.c - placeholder until the module lands. */
