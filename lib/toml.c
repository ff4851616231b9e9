/* toml.c - placeholder until the module lands. */
