/* pool.c - placeholder until the module lands. */
