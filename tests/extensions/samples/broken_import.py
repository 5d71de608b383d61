"""A module that cannot be imported: the loader must refuse it and carry on."""

raise RuntimeError("this module is broken on purpose")
