/* log.c - placeholder until the module lands. */
