/* jsonschema.c - placeholder until the module lands. */
