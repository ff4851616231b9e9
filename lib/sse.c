/* sse.c - placeholder until the module lands. */
