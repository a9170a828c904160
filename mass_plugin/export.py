"""``python -m mass_plugin.export``: the name of :mod:`mass_tools.export`
(``mass-export``) from before the export moved to the serving tools. It
runs that module; nothing of the plugin that fairseq loads imports it."""

import runpy

if __name__ == "__main__":
    runpy.run_module("mass_tools.export", run_name="__main__", alter_sys=True)
