/* pg.c - placeholder until the module lands. */
