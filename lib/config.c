/* config.c - placeholder until the module lands. */
