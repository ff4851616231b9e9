/* migrate.c - placeholder until the module lands. */
