"""Working with whole flows: the library, triggers, dispatch, import/export, repair."""
