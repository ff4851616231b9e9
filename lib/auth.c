/* auth.c - placeholder until the module lands. */
