"""``python -m mass_tools``: the list of tools and their commands."""

import mass_tools

print(mass_tools.__doc__.strip())
