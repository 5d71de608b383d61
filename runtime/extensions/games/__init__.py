"""Games shipped with GreyWind. Each is a plain class whose ``spec()`` is handed to
``ExtensionRegistry.register_game``."""
