/* buf.c - placeholder until the module lands. */
